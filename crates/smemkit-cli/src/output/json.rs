//! `--out FILE.json`: the whole result (counts, edges, tallies, engine) for programs to read.
//! JSON has no infinity or NaN (serde_json would write both as `null`), so non-finite floats are
//! written as the strings `"inf"`, `"-inf"` and `"nan"`, which Python's `float()` reads back.

use std::io::Write;

use anyhow::Result;
use serde::{Serialize, Serializer};
use smemkit::{
    histogram::{Counts, Histogram},
    Backend,
};

#[derive(Serialize)]
struct Tallies {
    below: u64,
    above: u64,
    nan: u64,
}

#[derive(Serialize)]
#[serde(untagged)]
enum JsonCounts<'a> {
    Unweighted(&'a [u64]),
    Weighted(Floats<'a>),
    /// Sums of integer weights (bool: 0 and 1), in their type's range.
    Integer(&'a [i64]),
}

/// One float: a JSON number when finite, else `"inf"`, `"-inf"` or `"nan"`.
pub(crate) struct Float(pub f64);

impl Serialize for Float {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_finite() {
            s.serialize_f64(v)
        } else if v.is_nan() {
            s.serialize_str("nan")
        } else if v > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }
}

/// A list of floats, each written as [`Float`].
pub(crate) struct Floats<'a>(pub &'a [f64]);

impl Serialize for Floats<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|&v| Float(v)))
    }
}

#[derive(Serialize)]
struct Document<'a> {
    counts: JsonCounts<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    density: Option<Floats<'a>>,
    edges: Floats<'a>,
    tallies: Tallies,
    samples: u64,
    counted: u64,
    weighted: bool,
    /// The type of sums of integer or bool weights (numpy's result dtype); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    counts_dtype: Option<&'static str>,
    policy: &'static str,
    backend: &'static str,
    engine: &'a str,
    /// Why the automatic backend picked the engine (absent for an explicit backend).
    #[serde(skip_serializing_if = "Option::is_none")]
    auto_choice: Option<&'a str>,
    /// The call's time split into setup, transfer, kernels and the rest, with its rates.
    #[serde(skip_serializing_if = "Option::is_none")]
    timing: Option<&'a super::summary::Timing>,
}

pub fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Auto => "auto",
        Backend::Cpu => "cpu",
        Backend::Cuda => "cuda",
    }
}

pub fn write(
    w: &mut dyn Write,
    h: &Histogram,
    timing: Option<&super::summary::Timing>,
) -> Result<()> {
    let counts = match &h.counts {
        Counts::Unweighted(c) => JsonCounts::Unweighted(c),
        Counts::Weighted(c) => JsonCounts::Weighted(Floats(c)),
        Counts::Integer { sums, .. } => JsonCounts::Integer(sums),
    };
    let doc = Document {
        counts,
        density: h.density.as_deref().map(Floats),
        edges: Floats(&h.edges),
        tallies: Tallies {
            below: h.tallies.below,
            above: h.tallies.above,
            nan: h.tallies.nan,
        },
        samples: h.samples,
        counted: h.counted(),
        weighted: !matches!(h.counts, Counts::Unweighted(_)),
        counts_dtype: match &h.counts {
            Counts::Integer { dtype, .. } => Some(dtype.name()),
            _ => None,
        },
        policy: h.policy.name(),
        backend: backend_name(h.engine.backend),
        engine: &h.engine.detail,
        auto_choice: h.auto_choice.as_deref(),
        timing,
    };
    serde_json::to_writer(&mut *w, &doc)?;
    writeln!(w)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_floats_are_named_and_finite_ones_are_numbers() {
        let v = [1.5, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -0.0, 1e300];
        let text = serde_json::to_string(&Floats(&v)).unwrap();
        assert_eq!(text, r#"[1.5,"inf","-inf","nan",-0.0,1e+300]"#);
    }
}

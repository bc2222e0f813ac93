//! `--out FILE.json`: the whole result (counts, edges, tallies, engine) for programs to read.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;
use smemkit::{Backend, Counts, Histogram};

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
    Weighted(&'a [f64]),
}

#[derive(Serialize)]
struct Document<'a> {
    counts: JsonCounts<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    density: Option<&'a [f64]>,
    edges: &'a [f64],
    tallies: Tallies,
    samples: u64,
    counted: u64,
    weighted: bool,
    policy: &'static str,
    backend: &'static str,
    engine: &'a str,
}

pub fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Auto => "auto",
        Backend::Cpu => "cpu",
        Backend::Cuda => "cuda",
    }
}

pub fn write(w: &mut dyn Write, h: &Histogram) -> Result<()> {
    let counts = match &h.counts {
        Counts::Unweighted(c) => JsonCounts::Unweighted(c),
        Counts::Weighted(c) => JsonCounts::Weighted(c),
    };
    let doc = Document {
        counts,
        density: h.density.as_deref(),
        edges: &h.edges,
        tallies: Tallies {
            below: h.tallies.below,
            above: h.tallies.above,
            nan: h.tallies.nan,
        },
        samples: h.samples,
        counted: h.counted(),
        weighted: matches!(h.counts, Counts::Weighted(_)),
        policy: h.policy.name(),
        backend: backend_name(h.engine.backend),
        engine: &h.engine.detail,
    };
    serde_json::to_writer(&mut *w, &doc)?;
    writeln!(w)?;
    Ok(())
}

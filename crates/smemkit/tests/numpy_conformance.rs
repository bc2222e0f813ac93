//! numpy conformance: every case in `tests/fixtures/numpy_*.json` was computed by numpy itself
//! (`scripts/numpy_fixtures.py`, numpy 2.x); smemkit's CPU engine must give bit-identical counts and
//! edges, the same tallies of samples below, above and NaN, and an error wherever numpy raises.
//! Each case is also run under the `clamp` and `error` policies, whose results follow from numpy's
//! counts and tallies.

use serde_json::Value;
use smemkit::{
    bins::{BinSpec, OutOfRange},
    histogram::{histogram, Counts, HistogramOptions},
    Backend, Error,
};

mod common;
use common::{decode, unhex, Owned};

fn array(v: &Value) -> Owned {
    decode(v["dtype"].as_str().unwrap(), v["hex"].as_str().unwrap())
}

fn scalar(v: &Value) -> f64 {
    let b = unhex(v["hex"].as_str().unwrap());
    f64::from_le_bytes(b.try_into().unwrap())
}

type ErrorPredicate = fn(&Error) -> bool;

/// Does smemkit's error correspond to numpy's exception message?
fn error_matches(numpy: &str, ours: &Error) -> bool {
    let table: [(&str, ErrorPredicate); 5] = [
        ("Too many bins", |e| matches!(e, Error::TooManyBins { .. })),
        ("autodetected range", |e| {
            matches!(e, Error::NonFiniteData { .. })
        }),
        ("must be positive", |e| matches!(e, Error::ZeroBins)),
        ("max must be larger than min", |e| {
            matches!(e, Error::InvertedRange { .. })
        }),
        ("supplied range", |e| {
            matches!(e, Error::NonFiniteRange { .. })
        }),
    ];
    table
        .iter()
        .any(|(needle, pred)| numpy.contains(needle) && pred(ours))
}

fn bits_equal(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Runs one case; returns a description of the first disagreement.
fn check_case(case: &Value) -> Result<(), String> {
    let name = case["name"].as_str().unwrap();
    let data = decode(
        case["dtype"].as_str().unwrap(),
        case["data"].as_str().unwrap(),
    );
    assert_eq!(
        data.samples().len() as u64,
        case["len"].as_u64().unwrap(),
        "{name}: decoded length"
    );
    let weights = (!case["weights"].is_null()).then(|| array(&case["weights"]));
    let bins = match (case["op"].as_str().unwrap(), case["edges"].is_null()) {
        ("bincount", _) => BinSpec::Integer {
            nbins: case["bins"].as_u64().unwrap() as usize,
        },
        ("histogram", true) => BinSpec::Uniform {
            nbins: case["bins"].as_u64().unwrap() as usize,
            range: (!case["range"].is_null())
                .then(|| (scalar(&case["range"][0]), scalar(&case["range"][1]))),
        },
        ("histogram", false) => BinSpec::Edges(array(&case["edges"]).to_f64()),
        (op, _) => panic!("unknown op {op}"),
    };
    let run = |policy| {
        let options = HistogramOptions::new(bins.clone())
            .backend(Backend::Cpu)
            .policy(policy);
        histogram(
            data.samples(),
            weights.as_ref().map(|w| w.weights()),
            &options,
        )
    };
    let expect = &case["expect"];

    if let Some(divergence) = case.get("divergence").and_then(Value::as_str) {
        return match run(OutOfRange::Ignore) {
            Err(_) => Ok(()),
            Ok(_) => Err(format!("expected smemkit to refuse ({divergence})")),
        };
    }
    if let Some(numpy_error) = expect.get("error").and_then(Value::as_str) {
        return match run(OutOfRange::Ignore) {
            Err(e) if error_matches(numpy_error, &e) => Ok(()),
            Err(e) => Err(format!(
                "numpy raised `{numpy_error}`, smemkit a different error: {e}"
            )),
            Ok(h) => Err(format!(
                "numpy raised `{numpy_error}`, smemkit returned {:?}",
                h.counts
            )),
        };
    }

    let below = expect["below"].as_u64().unwrap();
    let above = expect["above"].as_u64().unwrap();
    let nan = expect["nan"].as_u64().unwrap();
    let h = run(OutOfRange::Ignore).map_err(|e| format!("numpy succeeded, smemkit failed: {e}"))?;

    // counts
    let counts_dtype = expect["counts_dtype"].as_str().unwrap();
    match (&h.counts, counts_dtype) {
        (Counts::Unweighted(ours), "int64") => {
            let theirs: Vec<u64> = expect["counts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap())
                .collect();
            if *ours != theirs {
                let first = ours.iter().zip(&theirs).position(|(a, b)| a != b);
                return Err(format!(
                    "counts differ (first at {first:?}; {} vs {} bins)",
                    ours.len(),
                    theirs.len()
                ));
            }
        }
        (Counts::Weighted(ours), "float64") => {
            let theirs = decode("float64", expect["counts"].as_str().unwrap()).to_f64();
            if !bits_equal(ours, &theirs) {
                return Err(format!("weighted sums differ: {ours:?} vs {theirs:?}"));
            }
        }
        (Counts::Weighted(ours), "float32") => {
            // numpy keeps float32 weights' sums in float32 (accumulated in float64 per block)
            let ours32: Vec<f64> = ours.iter().map(|&x| x as f32 as f64).collect();
            let theirs = decode("float32", expect["counts"].as_str().unwrap()).to_f64();
            if !bits_equal(&ours32, &theirs) {
                return Err(format!("weighted sums differ: {ours32:?} vs {theirs:?}"));
            }
        }
        (c, d) => {
            return Err(format!(
                "result kind {c:?} does not match numpy's dtype {d}"
            ))
        }
    }
    // edges (bincount has none in numpy)
    if let Some(edges) = expect.get("edges") {
        let theirs = array(edges).to_f64();
        if !bits_equal(&h.edges, &theirs) {
            let first = h
                .edges
                .iter()
                .zip(&theirs)
                .position(|(a, b)| a.to_bits() != b.to_bits());
            return Err(format!(
                "edges differ (first at {first:?}; {} vs {})",
                h.edges.len(),
                theirs.len()
            ));
        }
    }
    if (h.tallies.below, h.tallies.above, h.tallies.nan) != (below, above, nan) {
        return Err(format!(
            "tallies {:?} vs numpy below {below} above {above} nan {nan}",
            h.tallies
        ));
    }

    // error policy: fails exactly when something was not counted
    match (run(OutOfRange::Error), below + above + nan > 0) {
        (
            Err(Error::OutOfRange {
                below: b,
                above: a,
                nan: n,
            }),
            true,
        ) if (b, a, n) == (below, above, nan) => {}
        (Ok(e), false) if e.counts == h.counts => {}
        (r, outside) => return Err(format!("policy error: outside={outside}, got {r:?}")),
    }
    // clamp policy: below into the first bin, above into the last
    if let Counts::Unweighted(ignore_counts) = &h.counts {
        let mut expected = ignore_counts.clone();
        let last = expected.len() - 1;
        expected[0] += below;
        expected[last] += above;
        let c = run(OutOfRange::Clamp).map_err(|e| format!("clamp failed: {e}"))?;
        if c.counts != Counts::Unweighted(expected) {
            return Err("clamp counts differ".into());
        }
    }
    Ok(())
}

#[test]
fn numpy_fixtures_bit_identical() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("fixtures folder")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("numpy_")
        })
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no fixtures in {dir}: run scripts/numpy_fixtures.py"
    );
    let mut total = 0;
    let mut failures = Vec::new();
    for path in &files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for case in doc["cases"].as_array().unwrap() {
            total += 1;
            if let Err(why) = check_case(case) {
                failures.push(format!("{}: {}", case["name"].as_str().unwrap(), why));
            }
        }
    }
    assert!(
        total >= 300,
        "expected at least 300 fixture cases, found {total}"
    );
    assert!(
        failures.is_empty(),
        "{} of {total} numpy cases disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

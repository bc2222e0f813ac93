//! numpy parity (issue 23): every case in `tests/fixtures/parity_numpy.json` was computed by numpy
//! itself (`scripts/numpy_parity_fixtures.py`): histograms of empty input, degenerate ranges,
//! infinite / equal / large integer edges, density, the bin estimators, bincount with its length
//! from the data, and digitize. smemkit's CPU engine must give the same bits, and an error wherever
//! numpy raises.

use std::collections::HashMap;

use serde_json::Value;
use smemkit::{
    bins::{histogram_bin_edges, BinRule, BinSpec, IntEdges},
    digitize::digitize,
    histogram::{bincount, histogram, Counts, HistogramOptions},
    sample::Samples,
    Backend,
};

mod common;
use common::{decode, unhex, Owned};

/// The parity fixtures' arrays: a dtype and hex in one JSON object.
fn decode_value(v: &Value) -> Owned {
    decode(v["dtype"].as_str().unwrap(), v["hex"].as_str().unwrap())
}

/// Edges as the bins numpy was given: integer arrays stay exact.
fn edge_bins(a: &Owned) -> BinSpec {
    match a {
        Owned::I64(v) => BinSpec::IntEdges(IntEdges::I64(v.clone())),
        Owned::U64(v) => BinSpec::IntEdges(IntEdges::U64(v.clone())),
        _ => BinSpec::Edges(a.to_f64()),
    }
}

struct Doc {
    arrays: HashMap<String, Value>,
}

impl Doc {
    fn array(&self, key: &Value) -> Owned {
        decode_value(&self.arrays[key.as_str().expect("array key")])
    }
}

fn scalar(hex: &Value) -> f64 {
    f64::from_le_bytes(unhex(hex.as_str().unwrap()).try_into().unwrap())
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

fn first_difference(a: &[f64], b: &[f64]) -> String {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x.to_bits() != y.to_bits() && !(x.is_nan() && y.is_nan()));
    format!(
        "{} vs {} values, first difference at {at:?}: {:?} vs {:?}",
        a.len(),
        b.len(),
        at.map(|i| a[i]),
        at.map(|i| b[i])
    )
}

fn check_counts(ours: &Counts, expect: &Value, doc: &Doc) -> Result<(), String> {
    match (ours, expect) {
        (Counts::Unweighted(c), Value::Array(list)) => {
            let theirs: Vec<u64> = list.iter().map(|v| v.as_u64().unwrap()).collect();
            (*c == theirs)
                .then_some(())
                .ok_or_else(|| format!("counts {c:?} vs numpy {theirs:?}"))
        }
        (Counts::Weighted(c), key) => {
            let theirs = doc.array(key);
            let ours: Vec<f64> = match theirs {
                // numpy keeps float32 weights' sums in float32
                Owned::F32(_) => c.iter().map(|&x| x as f32 as f64).collect(),
                _ => c.clone(),
            };
            let theirs = theirs.to_f64();
            same_bits(&ours, &theirs)
                .then_some(())
                .ok_or_else(|| format!("weighted sums: {}", first_difference(&ours, &theirs)))
        }
        (c, e) => Err(format!("result kind {c:?} against numpy's {e}")),
    }
}

fn outcome<T>(r: smemkit::Result<T>, expect: &Value) -> Result<Option<T>, String> {
    match (r, expect.get("error").and_then(Value::as_str)) {
        (Err(_), Some(_)) => Ok(None),
        (Ok(_), Some(e)) => Err(format!("numpy raised `{e}`, smemkit answered")),
        (Err(e), None) => Err(format!("numpy answered, smemkit failed: {e}")),
        (Ok(v), None) => Ok(Some(v)),
    }
}

fn check_histogram(case: &Value, doc: &Doc, backend: Backend) -> Result<(), String> {
    let data = doc.array(&case["data"]);
    let range =
        (!case["range"].is_null()).then(|| (scalar(&case["range"][0]), scalar(&case["range"][1])));
    let spec = match (&case["bins"], &case["edges"]) {
        (Value::Number(n), _) => BinSpec::Uniform {
            nbins: n.as_u64().unwrap() as usize,
            range,
        },
        (Value::String(rule), _) => BinSpec::Estimated {
            rule: rule.parse::<BinRule>().unwrap(),
            range,
        },
        (_, key) => edge_bins(&doc.array(key)),
    };
    let weights = (!case["weights"].is_null()).then(|| doc.array(&case["weights"]));
    let density = case["density"].as_bool().unwrap();
    if backend == Backend::Cuda && weights.is_some() {
        // The GPU's weighted sums add in another order.
        return Ok(());
    }
    let options = HistogramOptions::new(spec.clone())
        .backend(backend)
        .density(density);
    let expect = &case["expect"];
    let result = histogram(
        data.samples(),
        weights.as_ref().map(Owned::weights),
        &options,
    );
    // Integer edges beyond 2^53 compared exactly are the CPU engine's alone: the CUDA backend says so.
    if backend == Backend::Cuda
        && matches!(spec, BinSpec::IntEdges(_))
        && matches!(result, Err(smemkit::Error::NotImplemented(_)))
    {
        return Ok(());
    }
    let Some(h) = outcome(result, expect)? else {
        return Ok(());
    };
    if let (Value::String(rule), Some(want)) = (&case["bins"], expect.get("width")) {
        check_width(&data, rule, range, want, &expect["width_type"])?;
    }
    check_counts(&h.counts, &expect["counts"], doc)?;
    let edges = doc.array(&expect["edges"]).to_f64();
    if !same_bits(&h.edges, &edges) {
        return Err(format!("edges: {}", first_difference(&h.edges, &edges)));
    }
    if weights.is_none() {
        let alone = histogram_bin_edges(data.samples(), &spec).map_err(|e| e.to_string())?;
        if !same_bits(&alone, &edges) {
            return Err("histogram_bin_edges differs from the histogram's edges".into());
        }
    }
    if density {
        let ours = h.density.as_deref().ok_or("no density")?;
        let theirs = doc.array(&expect["density"]).to_f64();
        if !same_bits(ours, &theirs) {
            return Err(format!("density: {}", first_difference(ours, &theirs)));
        }
    }
    Ok(())
}

/// The width numpy's estimator function returned (its float64 bits, and float32 where numpy
/// computed in float32) against smemkit's; numpy's 0 for data without spread is smemkit's `None`.
fn check_width(
    data: &Owned,
    rule: &str,
    range: Option<(f64, f64)>,
    want: &Value,
    want_type: &Value,
) -> Result<(), String> {
    let want = scalar(want);
    let rule = rule.parse::<BinRule>().unwrap();
    let ours = smemkit::internals::histogram::bins::estimators::estimator_width(
        data.samples(),
        rule,
        range,
    )
    .map_err(|e| format!("estimator width: {e}"))?;
    match ours {
        None if want == 0.0 => Ok(()),
        Some((w, f32)) if w.to_bits() == want.to_bits() && f32 == (want_type == "float32") => {
            Ok(())
        }
        other => Err(format!(
            "estimator width {other:?}, numpy {want:?} ({want_type})"
        )),
    }
}

fn check_bincount(case: &Value, doc: &Doc) -> Result<(), String> {
    let data = doc.array(&case["data"]);
    let weights = (!case["weights"].is_null()).then(|| doc.array(&case["weights"]));
    let minlength = case["minlength"].as_u64().unwrap() as usize;
    let result = bincount(
        data.samples(),
        weights.as_ref().map(Owned::weights),
        minlength,
        Backend::Cpu,
    );
    let expect = &case["expect"];
    let Some(h) = outcome(result, expect)? else {
        return Ok(());
    };
    match (&h.counts, &expect["counts"]) {
        // numpy's bincount of float32 weights sums in float64
        (Counts::Weighted(c), key) if !key.is_array() => {
            let theirs = doc.array(key).to_f64();
            same_bits(c, &theirs)
                .then_some(())
                .ok_or_else(|| format!("weighted bincount: {}", first_difference(c, &theirs)))
        }
        (c, e) => check_counts(c, e, doc),
    }
}

fn check_digitize(case: &Value, doc: &Doc) -> Result<(), String> {
    let data = doc.array(&case["data"]);
    let bins = doc.array(&case["edges"]).to_f64();
    let right = case["right"].as_bool().unwrap();
    let expect = &case["expect"];
    let Some(ours) = outcome(digitize(data.samples(), &bins, right), expect)? else {
        return Ok(());
    };
    let theirs: Vec<i64> = expect["indices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    (ours == theirs)
        .then_some(())
        .ok_or_else(|| format!("indices {ours:?} vs numpy {theirs:?}"))
}

fn run_fixtures(backend: Backend) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/parity_numpy.json"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let arrays = doc["arrays"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let d = Doc { arrays };
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 900, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let r = match case["op"].as_str().unwrap() {
            "histogram" => check_histogram(case, &d, backend),
            "bincount" if backend == Backend::Cpu => check_bincount(case, &d),
            "digitize" if backend == Backend::Cpu => check_digitize(case, &d),
            "bincount" | "digitize" => Ok(()),
            op => panic!("unknown op {op}"),
        };
        if let Err(why) = r {
            failures.push(format!("{}: {why}", case["name"].as_str().unwrap()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} numpy cases disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn numpy_parity_fixtures() {
    run_fixtures(Backend::Cpu);
}

/// The same histograms on the GPU (unweighted: the GPU's weighted sums add in another order):
/// inf and equal edges, empty input, degenerate ranges, density and estimated bins give numpy's bits.
#[test]
#[ignore = "needs a CUDA GPU"]
fn numpy_parity_fixtures_on_the_gpu() {
    run_fixtures(Backend::Cuda);
}

/// numpy converts bool samples to uint8 before its histogram (`np.histogram([True, False, True],
/// bins=2)` counts them as 1, 0, 1) and bincount counts False and True in bins 0 and 1: the
/// library takes `&[bool]` as those bytes.
#[test]
fn bool_samples_are_uint8() {
    let b = [true, false, true, true];
    let as_u8 = [1u8, 0, 1, 1];
    let h = bincount(Samples::from(&b[..]), None, 0, Backend::Cpu).unwrap();
    let g = bincount(Samples::U8(&as_u8), None, 0, Backend::Cpu).unwrap();
    assert_eq!(h.counts, Counts::Unweighted(vec![1, 3]));
    assert_eq!(h.counts, g.counts);
    let spec = HistogramOptions::new(BinSpec::Uniform {
        nbins: 2,
        range: None,
    })
    .backend(Backend::Cpu);
    let h = histogram(Samples::from(&b[..]), None, &spec).unwrap();
    let g = histogram(Samples::U8(&as_u8), None, &spec).unwrap();
    assert_eq!((h.counts, h.edges), (g.counts, g.edges));
}

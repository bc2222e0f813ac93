//! float16 and bfloat16 samples against numpy (issue 23): every case of
//! `tests/fixtures/half_numpy.json` was computed by numpy 2 (bfloat16 through ml_dtypes) with
//! `scripts/numpy_half_fixtures.py`: uniform bins with and without a range (numpy's float16
//! arithmetic), one-value and empty data, explicit edges, NaN and infinity. The CPU engine must give
//! numpy's counts and edges bit for bit, and an error wherever numpy raises; the CUDA engine takes
//! them too (tests/gpu_half.rs compares it with the CPU engine on a GPU).

use half::{bf16, f16};
use serde_json::Value;
use smemkit::{
    bins::{BinRule, BinSpec},
    histogram::{histogram, Counts, HistogramOptions},
    sample::Samples,
    Backend, Error,
};

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

fn f64_of_hex(v: &Value) -> f64 {
    f64::from_le_bytes(unhex(v.as_str().unwrap()).try_into().unwrap())
}

fn bits16(hex: &str) -> Vec<u16> {
    unhex(hex)
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// numpy's edges, from their own type's bytes, as f64.
fn edges_of(expect: &Value) -> Vec<f64> {
    let hex = expect["edges"].as_str().unwrap();
    let b = unhex(hex);
    match expect["edges_dtype"].as_str().unwrap() {
        "float16" => bits16(hex)
            .into_iter()
            .map(|x| f16::from_bits(x).to_f64())
            .collect(),
        "bfloat16" => bits16(hex)
            .into_iter()
            .map(|x| bf16::from_bits(x).to_f64())
            .collect(),
        "float32" => b
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        "float64" => b
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        other => panic!("edges of type {other}"),
    }
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (*x == 0.0 && *y == 0.0))
}

enum Half {
    F16(Vec<f16>),
    BF16(Vec<bf16>),
}

impl Half {
    fn samples(&self) -> Samples<'_> {
        match self {
            Half::F16(v) => Samples::from(&v[..]),
            Half::BF16(v) => Samples::from(&v[..]),
        }
    }
}

fn fixtures() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/half_numpy.json"
    ))
    .expect("fixtures");
    serde_json::from_str(&text).expect("json")
}

fn array(doc: &Value, name: &str) -> Half {
    let a = &doc["arrays"][name];
    let bits = bits16(a["bits"].as_str().unwrap());
    match a["dtype"].as_str().unwrap() {
        "float16" => Half::F16(bits.into_iter().map(f16::from_bits).collect()),
        "bfloat16" => Half::BF16(bits.into_iter().map(bf16::from_bits).collect()),
        other => panic!("dtype {other}"),
    }
}

fn spec_of(case: &Value) -> BinSpec {
    let range = case["range"]
        .as_array()
        .map(|r| (f64_of_hex(&r[0]), f64_of_hex(&r[1])));
    if let Some(rule) = case.get("rule") {
        return BinSpec::Estimated {
            rule: rule.as_str().unwrap().parse().unwrap(),
            range,
        };
    }
    match case.get("bins") {
        Some(n) => BinSpec::Uniform {
            nbins: n.as_u64().unwrap() as usize,
            range,
        },
        None => BinSpec::Edges(
            case["edges"]
                .as_array()
                .unwrap()
                .iter()
                .map(f64_of_hex)
                .collect(),
        ),
    }
}

/// One case on the CPU engine: `Err` with what differs from numpy.
fn check(doc: &Value, case: &Value) -> Result<(), String> {
    let data = array(doc, case["data"].as_str().unwrap());
    let options = HistogramOptions::new(spec_of(case)).backend(Backend::Cpu);
    let result = histogram(data.samples(), None, &options);
    let expect = &case["expect"];
    if let Some(err) = expect.get("error") {
        return match result {
            Err(_) => Ok(()),
            Ok(h) => Err(format!("numpy raised {err}, smemkit gave {:?}", h.counts)),
        };
    }
    let h = result.map_err(|e| format!("numpy answered, smemkit failed: {e}"))?;
    let want: Vec<u64> = expect["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    match &h.counts {
        Counts::Unweighted(c) if *c == want => {}
        other => return Err(format!("counts {other:?}, numpy {want:?}")),
    }
    let edges = edges_of(expect);
    if !same_bits(&h.edges, &edges) {
        let at = h.edges.iter().zip(&edges).position(|(a, b)| a != b);
        return Err(format!(
            "edges differ (at {at:?}): {:?}... numpy {:?}...",
            &h.edges[..h.edges.len().min(6)],
            &edges[..edges.len().min(6)]
        ));
    }
    Ok(())
}

#[test]
fn float16_and_bfloat16_histograms_match_numpy() {
    let doc = fixtures();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() > 500, "{} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            check(&doc, c)
                .err()
                .map(|e| format!("{}: {e}", c["name"].as_str().unwrap()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from numpy:\n{}",
        failures.len(),
        cases.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

#[test]
fn the_cuda_engine_takes_half_samples() {
    let data = [f16::from_f32(1.0), f16::from_f32(2.0)];
    let options = HistogramOptions::new(BinSpec::Uniform {
        nbins: 4,
        range: None,
    })
    .backend(Backend::Cuda);
    // The CUDA engine no longer refuses the type: it counts them where there is a GPU, and
    // elsewhere the only error is the missing GPU (tests/gpu_half.rs compares it with the CPU).
    match histogram(Samples::from(&data[..]), None, &options) {
        Ok(h) => assert_eq!(h.counts, Counts::Unweighted(vec![1, 0, 0, 1])),
        Err(Error::CudaUnavailable(_)) => {}
        Err(e) => panic!("expected counts or no GPU, got {e:?}"),
    }
    // The automatic backend needs no note about them.
    let h = histogram(
        Samples::from(&data[..]),
        None,
        &options.clone().backend(Backend::Auto),
    )
    .unwrap();
    assert!(
        !h.engine.detail.contains("does not take"),
        "{}",
        h.engine.detail
    );
    assert_eq!(h.counts, Counts::Unweighted(vec![1, 0, 0, 1]));
}

#[test]
fn bfloat16_estimators_follow_numpy_with_ml_dtypes() {
    // 300 ones, then 60 values from -20 by 0.75: ml_dtypes sums bfloat16 one value at a time,
    // each sum rounded, so the total stalls (386 against 427.5) and the standard deviation and
    // skew are bfloat16's. The bin counts are numpy 2.4's with ml_dtypes 0.6
    // (`np.histogram_bin_edges(x, rule)` and with `range=(-10.0, 1.0)`); the Python suite
    // compares thousands of random arrays with numpy itself.
    let data: Vec<bf16> = (0..300)
        .map(|_| 1.0)
        .chain((0..60).map(|i| i as f32 * 0.75 - 20.0))
        .map(bf16::from_f32)
        .collect();
    let expected = [
        (BinRule::Auto, 38, 38),
        (BinRule::Fd, 1, 1),
        (BinRule::Doane, 12, 16),
        (BinRule::Scott, 18, 17),
        (BinRule::Stone, 100, 105),
        (BinRule::Rice, 15, 15),
        (BinRule::Sturges, 10, 10),
        (BinRule::Sqrt, 19, 19),
    ];
    for (rule, whole, ranged) in expected {
        for (range, want) in [(None, whole), (Some((-10.0, 1.0)), ranged)] {
            let options =
                HistogramOptions::new(BinSpec::Estimated { rule, range }).backend(Backend::Cpu);
            let h = histogram(Samples::from(&data[..]), None, &options).unwrap();
            assert_eq!(h.nbins(), want, "{rule:?} {range:?}");
        }
    }
}

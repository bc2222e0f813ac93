//! Joint histograms against numpy.histogramdd itself: `tests/fixtures/histdd_numpy.json`, written by
//! `scripts/histdd_numpy_cases.py` (numpy 2), holds each case's samples, bins, weights and numpy's
//! histogram and edges as IEEE bit patterns. Every value must match bit for bit: counts, sums of
//! weights, densities and edges.

use serde_json::Value;
use smemkit::{
    bins::BinSpec,
    histogramdd::{histogramdd, JointOptions, JointSamples},
    sample::{Samples, Weights},
};

fn f64_of(hex: &Value) -> f64 {
    f64::from_bits(u64::from_str_radix(hex.as_str().unwrap(), 16).unwrap())
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(f64_of).collect()
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect()
}

/// A case's (N, D) samples, C order, as typed values.
enum Data {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Data {
    fn parse(dtype: &str, v: &[&str]) -> Data {
        macro_rules! ints {
            ($tag:ident) => {
                Data::$tag(v.iter().map(|s| s.parse().unwrap()).collect())
            };
        }
        match dtype {
            "u8" => ints!(U8),
            "u16" => ints!(U16),
            "u32" => ints!(U32),
            "u64" => ints!(U64),
            "i8" => ints!(I8),
            "i16" => ints!(I16),
            "i32" => ints!(I32),
            "i64" => ints!(I64),
            "f32" => Data::F32(
                v.iter()
                    .map(|s| f32::from_bits(u32::from_str_radix(s, 16).unwrap()))
                    .collect(),
            ),
            "f64" => Data::F64(
                v.iter()
                    .map(|s| f64::from_bits(u64::from_str_radix(s, 16).unwrap()))
                    .collect(),
            ),
            t => panic!("unknown dtype {t}"),
        }
    }

    /// The values rearranged: `columns` gives Fortran order (axis after axis).
    fn arranged(&self, dims: usize, columns: bool) -> Data {
        macro_rules! arrange {
            ($v:expr, $tag:ident) => {{
                if !columns {
                    Data::$tag($v.clone())
                } else {
                    let n = $v.len() / dims;
                    Data::$tag(
                        (0..dims)
                            .flat_map(|j| (0..n).map(move |i| $v[i * dims + j]))
                            .collect(),
                    )
                }
            }};
        }
        match self {
            Data::U8(v) => arrange!(v, U8),
            Data::U16(v) => arrange!(v, U16),
            Data::U32(v) => arrange!(v, U32),
            Data::U64(v) => arrange!(v, U64),
            Data::I8(v) => arrange!(v, I8),
            Data::I16(v) => arrange!(v, I16),
            Data::I32(v) => arrange!(v, I32),
            Data::I64(v) => arrange!(v, I64),
            Data::F32(v) => arrange!(v, F32),
            Data::F64(v) => arrange!(v, F64),
        }
    }

    fn samples(&self) -> Samples<'_> {
        match self {
            Data::U8(v) => Samples::U8(v),
            Data::U16(v) => Samples::U16(v),
            Data::U32(v) => Samples::U32(v),
            Data::U64(v) => Samples::U64(v),
            Data::I8(v) => Samples::I8(v),
            Data::I16(v) => Samples::I16(v),
            Data::I32(v) => Samples::I32(v),
            Data::I64(v) => Samples::I64(v),
            Data::F32(v) => Samples::F32(v),
            Data::F64(v) => Samples::F64(v),
        }
    }

    /// Axis `j` of `n` samples out of Fortran-ordered data.
    fn axis(&self, j: usize, n: usize) -> Samples<'_> {
        macro_rules! cut {
            ($v:expr, $tag:ident) => {
                Samples::$tag(&$v[j * n..(j + 1) * n])
            };
        }
        match self {
            Data::U8(v) => cut!(v, U8),
            Data::U16(v) => cut!(v, U16),
            Data::U32(v) => cut!(v, U32),
            Data::U64(v) => cut!(v, U64),
            Data::I8(v) => cut!(v, I8),
            Data::I16(v) => cut!(v, I16),
            Data::I32(v) => cut!(v, I32),
            Data::I64(v) => cut!(v, I64),
            Data::F32(v) => cut!(v, F32),
            Data::F64(v) => cut!(v, F64),
        }
    }
}

fn bins(case: &Value) -> Vec<BinSpec> {
    case["bins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| match b.get("edges") {
            Some(e) => BinSpec::Edges(f64s(e)),
            None => BinSpec::Uniform {
                nbins: b["nbins"].as_u64().unwrap() as usize,
                range: b["range"]
                    .as_array()
                    .map(|r| (f64_of(&r[0]), f64_of(&r[1]))),
            },
        })
        .collect()
}

#[test]
fn numpy_histogramdd_bit_for_bit() {
    let doc: Value =
        serde_json::from_str(include_str!("fixtures/histdd_numpy.json")).expect("fixture parses");
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 25);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let dims = case["dims"].as_u64().unwrap() as usize;
        let data = Data::parse(case["dtype"].as_str().unwrap(), &strs(&case["data"]));
        let n = data.samples().len() / dims;
        let layout = case["layout"].as_str().unwrap();
        let held = data.arranged(dims, layout != "rows");
        let samples = match layout {
            "rows" => JointSamples::rows(held.samples(), dims).unwrap(),
            "columns" => JointSamples::columns(held.samples(), dims).unwrap(),
            _ => JointSamples::separate((0..dims).map(|j| held.axis(j, n)).collect()).unwrap(),
        };
        let w64;
        let w32: Vec<f32>;
        let weights = match case["weights"].as_object() {
            None => None,
            Some(w) if w["f32"].as_bool().unwrap() => {
                w32 = strs(&w["bits"])
                    .iter()
                    .map(|s| f32::from_bits(u32::from_str_radix(s, 16).unwrap()))
                    .collect();
                Some(Weights::F32(&w32))
            }
            Some(w) => {
                w64 = f64s(&w["bits"]);
                Some(Weights::F64(&w64))
            }
        };
        let density = case["density"].as_bool().unwrap();
        let opts = JointOptions::new(bins(case)).density(density);
        let h = histogramdd(&samples, weights, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        let shape: Vec<usize> = case["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(h.shape, shape, "{name}");
        let edges: Vec<Vec<f64>> = case["edges"].as_array().unwrap().iter().map(f64s).collect();
        for (j, (ours, numpy)) in h.edges.iter().zip(&edges).enumerate() {
            let a: Vec<u64> = ours.iter().map(|x| x.to_bits()).collect();
            let b: Vec<u64> = numpy.iter().map(|x| x.to_bits()).collect();
            assert_eq!(a, b, "{name}: edges of axis {j}");
        }
        let mut want = vec![f64_of(&case["zero"]).to_bits(); h.counts.len()];
        for pair in case["hist"].as_array().unwrap() {
            want[pair[0].as_u64().unwrap() as usize] = f64_of(&pair[1]).to_bits();
        }
        let ours: Vec<u64> = match &h.density {
            Some(d) => d.iter().map(|x| x.to_bits()).collect(),
            None => (0..h.counts.len())
                .map(|i| h.counts.get_f64(i).to_bits())
                .collect(),
        };
        assert_eq!(ours, want, "{name}: histogram");
        assert_eq!(h.tallies.nan, case["nan"].as_u64().unwrap(), "{name}: NaN");
        if let Some(outside) = case["outside"].as_u64() {
            assert_eq!(h.tallies.outside, outside, "{name}: outside");
        }
    }
}

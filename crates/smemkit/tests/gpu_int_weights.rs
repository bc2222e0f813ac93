//! Integer and bool weights on the GPU: the same sums, of the same type, as the CPU engine
//! (tests/int_weights.rs checks those against numpy), whole and streamed, over integer bins,
//! uniform bins and explicit edges. They need a CUDA GPU and are ignored elsewhere.

use smemkit::{
    bins::{BinSpec, OutOfRange},
    histogram::{histogram, Counts, HistogramOptions, StreamMode},
    sample::{IntWeights, Samples, Weights},
    Backend,
};

fn both(samples: Samples<'_>, w: IntWeights<'_>, bins: BinSpec, what: &str) {
    let options = HistogramOptions::new(bins);
    let cpu = histogram(
        samples,
        Some(Weights::Int(w)),
        &options.clone().backend(Backend::Cpu).density(true),
    )
    .unwrap_or_else(|e| panic!("{what}: cpu: {e}"));
    assert!(
        matches!(&cpu.counts, Counts::Integer { dtype, .. } if *dtype == w.int_type()),
        "{what}"
    );
    for stream in [StreamMode::Never, StreamMode::Always] {
        let gpu = histogram(
            samples,
            Some(Weights::Int(w)),
            &options
                .clone()
                .backend(Backend::Cuda)
                .stream(stream)
                .density(true),
        )
        .unwrap_or_else(|e| panic!("{what}: gpu {stream:?}: {e}"));
        assert_eq!(gpu.counts, cpu.counts, "{what}: {stream:?}");
        assert_eq!(gpu.tallies, cpu.tallies, "{what}: {stream:?}");
        let (g, c) = (gpu.density.unwrap(), cpu.density.clone().unwrap());
        assert!(
            g.iter().zip(&c).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{what}: density"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn integer_weights_give_the_cpu_sums_on_the_gpu() {
    let n = 3_000_000usize;
    let mix = |i: usize, k: u64| {
        (i as u64 + 1)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15 ^ k)
            .rotate_left(23)
    };
    let xs: Vec<i32> = (0..n).map(|i| (mix(i, 1) % 5000) as i32 - 10).collect();
    let fs: Vec<f32> = xs.iter().map(|&x| x as f32 * 0.37).collect();
    let raw: Vec<u64> = (0..n).map(|i| mix(i, 2)).collect();
    let w8: Vec<i8> = raw.iter().map(|&r| (r >> 56) as i8).collect();
    let wu16: Vec<u16> = raw.iter().map(|&r| (r >> 54) as u16).collect();
    let w32: Vec<i32> = raw.iter().map(|&r| (r >> 52) as i32 - 2048).collect();
    let w64: Vec<i64> = raw.iter().map(|&r| (r >> 34) as i64 - (1 << 29)).collect();
    let wb: Vec<bool> = raw.iter().map(|&r| r & 1 == 1).collect();
    let edges: Vec<f64> = (0..=300).map(|k| (k * k) as f64 / 50.0).collect();
    let bins = [
        BinSpec::Integer { nbins: 4096 },
        BinSpec::Uniform {
            nbins: 1000,
            range: Some((-4.0, 1800.0)),
        },
        BinSpec::Uniform {
            nbins: 100_000,
            range: None,
        },
        BinSpec::Edges(edges),
    ];
    for (b, spec) in bins.iter().enumerate() {
        let samples = if b == 0 {
            Samples::I32(&xs)
        } else {
            Samples::F32(&fs)
        };
        both(
            samples,
            IntWeights::I8(&w8),
            spec.clone(),
            &format!("i8 {b}"),
        );
        both(
            samples,
            IntWeights::U16(&wu16),
            spec.clone(),
            &format!("u16 {b}"),
        );
        both(
            samples,
            IntWeights::I32(&w32),
            spec.clone(),
            &format!("i32 {b}"),
        );
        both(
            samples,
            IntWeights::I64(&w64),
            spec.clone(),
            &format!("i64 {b}"),
        );
        if b != 3 {
            both(
                samples,
                IntWeights::Bool(&wb),
                spec.clone(),
                &format!("bool {b}"),
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn clamp_and_empty_on_the_gpu() {
    let xs = [-5.0f64, 0.25, 0.75, 9.0];
    let w = [3u8, 200, 100, 7];
    let options = HistogramOptions::new(BinSpec::Uniform {
        nbins: 2,
        range: Some((0.0, 1.0)),
    })
    .policy(OutOfRange::Clamp);
    let cpu = histogram(
        Samples::F64(&xs),
        Some(Weights::Int(IntWeights::U8(&w))),
        &options.clone().backend(Backend::Cpu),
    )
    .unwrap();
    let gpu = histogram(
        Samples::F64(&xs),
        Some(Weights::Int(IntWeights::U8(&w))),
        &options.backend(Backend::Cuda),
    )
    .unwrap();
    assert_eq!(gpu.counts, cpu.counts);
    let empty = histogram(
        Samples::F64(&[]),
        Some(Weights::Int(IntWeights::I64(&[]))),
        &HistogramOptions::new(BinSpec::Uniform {
            nbins: 3,
            range: Some((0.0, 1.0)),
        })
        .backend(Backend::Cuda),
    )
    .unwrap();
    assert!(matches!(empty.counts, Counts::Integer { ref sums, .. } if sums == &[0, 0, 0]));
}

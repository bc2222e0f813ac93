//! Measures the CPU histogram engine on the standard workloads of shared/BENCH.md, the same way
//! `bench/numpy/numpy_baseline.py` measures numpy: int32 samples with integer bins (vs
//! `numpy.bincount`) and float32 samples with `nbins` uniform bins over [0, nbins) (vs
//! `numpy.histogram`), uniform and hot data, median of several runs after a warm-up, GB/s of
//! samples read. Prints JSON lines.
//!
//!     cargo run --release --example cpu_bench -- [log2n=27] [bins=256,4096,...] [runs=5] [dists=uniform,hot] [ops=int32,f32]

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use smemkit::{
    bins::BinSpec,
    histogram::{histogram, HistogramOptions},
    sample::Samples,
    Backend,
};

fn arg(name: &str, default: &str) -> String {
    std::env::args()
        .skip(1)
        .find_map(|a| a.strip_prefix(&format!("{name}=")).map(str::to_owned))
        .unwrap_or_else(|| default.to_owned())
}

fn main() {
    let log2n: u32 = arg("log2n", "27").parse().unwrap();
    let n = 1usize << log2n;
    let bins: Vec<usize> = arg("bins", "256,4096,32768,131072,1048576,16777216")
        .split(',')
        .map(|b| b.parse().unwrap())
        .collect();
    let runs: usize = arg("runs", "5").parse().unwrap();
    let dists = arg("dists", "uniform,hot");
    let ops = arg("ops", "int32,f32");
    let commit = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let mut ints = vec![0i32; n];
    let mut floats = vec![0f32; n];
    for op in ops.split(',') {
        for dist in dists.split(',') {
            for &nbins in &bins {
                let hot = dist == "hot";
                let hot_value = (7 % nbins) as i32;
                let pick = |rng: &mut Xoshiro256PlusPlus| {
                    if hot && rng.gen_range(0..8) != 0 {
                        hot_value
                    } else {
                        rng.gen_range(0..nbins as i32)
                    }
                };
                let (samples, spec, dtype) = if op == "int32" {
                    ints.iter_mut().for_each(|x| *x = pick(&mut rng));
                    (Samples::I32(&ints), BinSpec::Integer { nbins }, "int32")
                } else {
                    floats.iter_mut().for_each(|x| {
                        *x = if hot && rng.gen_range(0..8) != 0 {
                            hot_value as f32
                        } else {
                            (rng.gen::<f32>() * nbins as f32).min(nbins as f32 - 0.5)
                        }
                    });
                    let spec = BinSpec::Uniform {
                        nbins,
                        range: Some((0.0, nbins as f64)),
                    };
                    (Samples::F32(&floats), spec, "float32")
                };
                let options = HistogramOptions::new(spec).backend(Backend::Cpu);
                let mut times = Vec::new();
                let mut counted = 0;
                for r in 0..=runs {
                    let t = Instant::now();
                    let h = histogram(samples, None, &options).unwrap();
                    let s = t.elapsed().as_secs_f64();
                    counted = h.counted();
                    if r > 0 {
                        times.push(s);
                    }
                }
                assert_eq!(counted, n as u64, "every sample is in range");
                times.sort_by(f64::total_cmp);
                let med = times[times.len() / 2];
                println!(
                    "{{\"impl\": \"smemkit/cpu\", \"op\": \"hist\", \"ms\": {:.3}, \"gbps\": {:.4}, \"correct\": true, \"dist\": \"{dist}\", \"nbins\": {nbins}, \"n\": {n}, \"dtype\": \"{dtype}\", \"threads\": {}, \"commit\": \"{commit}\", \"runs_ms\": {:?}}}",
                    med * 1e3,
                    (n * 4) as f64 / med / 1e9,
                    rayon::current_num_threads(),
                    times.iter().map(|t| (t * 1e5).round() / 100.0).collect::<Vec<_>>()
                );
            }
        }
    }
}

//! The matmul autotuner behind `MatmulKernel::Auto`. No fixed tile shape is best for every
//! product: 128 x 128 tiles leave most of an H100's 132 SMs idle at 1024 x 1024 (64 blocks), and
//! small tiles waste bandwidth at 8192. So, the first time a shape class is seen, each candidate
//! (the warp-tiled configurations and the `async` kernel) is timed on the device on the product
//! itself, writing into scratch memory; the fastest is remembered in memory and in a small text
//! file beside the PTX cache, so a machine tunes each class once.
//!
//! A shape class is the device, the kernels' source, the transpose flags, whether the operands
//! allow 16-byte access, and M, N, K rounded up to powers of two (clamped to 2^5..2^15).
//! `SMEMKIT_MATMUL_RETUNE=1` ignores the cached choices (and replaces them).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::{compile_trial, keep_variant, nan_buffer, prepare, time_launches};
use super::{DeviceGemm, Variant, WarpConfig};
use crate::error::Result;
use crate::gpu::compile::{disk_cache_dir, MATMUL, MATMUL_WARP};
use crate::gpu::device::Gpu;
use crate::matmul::matrix::{span, MatmulKernel};

/// Timed launches per candidate (after one untimed one); the median decides.
const RUNS: usize = 3;
/// The file's format version (part of its name).
const FILE: &str = "matmul-tune-v1.txt";

/// Every variant the tuner measures, in order.
pub fn candidates() -> Vec<Variant> {
    let mut v: Vec<Variant> = WarpConfig::CANDIDATES
        .iter()
        .map(|c| Variant::Warp(*c))
        .collect();
    v.push(Variant::Classic(MatmulKernel::AsyncCopy));
    v
}

/// Finds a candidate by its printed name.
pub fn parse_choice(name: &str) -> Option<Variant> {
    candidates().into_iter().find(|v| v.name() == name)
}

fn bucket(x: usize) -> u32 {
    x.max(1).next_power_of_two().trailing_zeros().clamp(5, 15)
}

/// The shape class of a product on a device (see the module comment).
pub fn class_key(device: &str, p: &DeviceGemm) -> String {
    let source = {
        let mut h = Sha256::new();
        for src in [&MATMUL, &MATMUL_WARP] {
            h.update(src.text.as_bytes());
            for header in src.headers {
                h.update(header.text.as_bytes());
            }
        }
        h.finalize()
            .iter()
            .take(6)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let aligned = |ptr: u64, ld: usize| (ptr % 16 == 0 && ld % 4 == 0) as u8;
    format!(
        "{}|{source}|t{}{}|v{}{}{}|m{}n{}k{}",
        device.replace(['|', '=', '\n'], "_"),
        p.trans_a as u8,
        p.trans_b as u8,
        aligned(p.a, p.lda),
        aligned(p.b, p.ldb),
        aligned(p.c, p.ldc),
        bucket(p.m),
        bucket(p.n),
        bucket(p.k)
    )
}

fn table() -> &'static Mutex<HashMap<String, Variant>> {
    static TABLE: OnceLock<Mutex<HashMap<String, Variant>>> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(read_file()))
}

fn file_path() -> Option<PathBuf> {
    disk_cache_dir().map(|d| d.join(FILE))
}

fn retune() -> bool {
    crate::config::matmul_retune()
}

/// `key=choice` lines; lines that do not parse (an older kernel set) are skipped.
fn parse_table(text: &str) -> HashMap<String, Variant> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.rsplit_once('=')?;
            Some((k.to_string(), parse_choice(v.trim())?))
        })
        .collect()
}

fn read_file() -> HashMap<String, Variant> {
    if retune() {
        return HashMap::new();
    }
    file_path()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| parse_table(&t))
        .unwrap_or_default()
}

/// Writes the whole table (write then rename: a concurrent reader sees the old or the new file).
/// The cache is an optimisation: failing to write it is not an error.
fn write_file(table: &HashMap<String, Variant>) {
    let Some(path) = file_path() else { return };
    let Some(dir) = path.parent() else { return };
    let _ = std::fs::create_dir_all(dir);
    let mut lines: Vec<String> = table
        .iter()
        .map(|(k, v)| format!("{k}={}", v.name()))
        .collect();
    lines.sort();
    let tmp = dir.join(format!("{FILE}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, lines.join("\n") + "\n").is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
}

/// The cached choice for `p`'s shape class, if any (no measurement).
pub fn cached(g: &Gpu, p: &DeviceGemm) -> Option<Variant> {
    let key = class_key(&g.name, p);
    table().lock().expect("tune table").get(&key).copied()
}

/// The variant `Auto` runs for `p`: the cached choice of its class, or the fastest candidate
/// measured now on `p`'s operands (C goes to scratch memory, so `p`'s C is left alone).
pub fn choose(g: &Gpu, p: &DeviceGemm) -> Result<Variant> {
    p.validate()?;
    if let Some(v) = cached(g, p) {
        return Ok(v);
    }
    let (best, _) = measure(g, p)?;
    // Only the choice is used again: the other candidates' builds stay out of the disk cache.
    keep_variant(g, best, p.trans_a, p.trans_b);
    let key = class_key(&g.name, p);
    let mut t = table().lock().expect("tune table");
    t.insert(key, best);
    write_file(&t);
    Ok(best)
}

/// Each candidate with its median milliseconds (`None`: it could not run).
pub type Timings = Vec<(Variant, Option<f32>)>;

/// Times every candidate on `p` (C to scratch, beta 0) and returns the fastest with every
/// candidate's median milliseconds (`None` where a candidate could not run, e.g. too little
/// shared memory, or was not worth running: split K on a grid that fills the GPU).
pub fn measure(g: &Gpu, p: &DeviceGemm) -> Result<(Variant, Timings)> {
    let c_len = span(p.m, p.n, p.ldc).unwrap_or(0);
    let scratch = nan_buffer(g, c_len)?;
    let problem = DeviceGemm {
        c: cudarc::driver::DevicePtr::device_ptr(&scratch, &g.stream).0,
        beta: 0.0,
        ..*p
    };
    // Compile every candidate first, all at once (NVRTC is single-threaded per program), in
    // memory only ([`choose`] keeps its choice on disk); a candidate that fails to compile is
    // skipped below like one that cannot launch.
    std::thread::scope(|s| {
        for v in candidates() {
            s.spawn(move || {
                let _ = g
                    .bind()
                    .and_then(|()| compile_trial(g, v, p.trans_a, p.trans_b));
            });
        }
    });
    let mut results = Vec::new();
    for v in candidates() {
        // Split K only pays where the unsplit grid leaves SMs idle (and its workspace grows with
        // M x N).
        if let Variant::Warp(c) = v {
            let unsplit = WarpConfig { split: 1, ..c }.blocks(p.m, p.n);
            if c.split > 1 && unsplit >= g.limits.sm_count as usize {
                results.push((v, None));
                continue;
            }
        }
        let t = match prepare(g, &problem, v) {
            Ok(prepared) => {
                let times = time_launches(g, 1, RUNS, &|| {
                    // SAFETY: A and B are the caller's operands (its own launch needs them
                    // valid too); C is `scratch`, holding C's span, alive until the end of this
                    // function, after `time_launches` has synchronised; beta is 0, so C is not
                    // read.
                    unsafe { prepared.launch(g) }
                })?;
                Some(crate::gpu::timing::median(&times))
            }
            Err(_) => None,
        };
        results.push((v, t));
    }
    let best = results
        .iter()
        .filter_map(|(v, t)| t.map(|t| (*v, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(v, _)| v)
        .unwrap_or(Variant::Classic(MatmulKernel::AsyncCopy));
    Ok((best, results))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(m: usize, n: usize, k: usize) -> DeviceGemm {
        DeviceGemm {
            m,
            n,
            k,
            a: 0,
            lda: k,
            trans_a: false,
            b: 256,
            ldb: n,
            trans_b: false,
            c: 512,
            ldc: n,
            alpha: 1.0,
            beta: 0.0,
        }
    }

    #[test]
    fn classes_round_up_to_powers_of_two() {
        let a = class_key("H100", &problem(1000, 1000, 1000));
        assert_eq!(a, class_key("H100", &problem(1024, 1024, 600)));
        assert_ne!(a, class_key("H100", &problem(1025, 1024, 1024)));
        assert_ne!(a, class_key("A100", &problem(1000, 1000, 1000)));
        assert!(a.ends_with("|t00|v111|m10n10k10"), "{a}");
        // Odd leading dimensions are another class (the scalar paths).
        let odd = DeviceGemm {
            lda: 1001,
            ..problem(1000, 1000, 1000)
        };
        assert!(class_key("H100", &odd).contains("|v011|"));
        assert!(class_key("H100", &problem(1, 1, 1)).ends_with("m5n5k5"));
    }

    #[test]
    fn the_table_file_round_trips_and_skips_unknown_choices() {
        let mut t = HashMap::new();
        for (i, v) in candidates().into_iter().enumerate() {
            assert_eq!(parse_choice(&v.name()), Some(v));
            t.insert(format!("dev|x|t00|v111|m{i}n1k1"), v);
        }
        let text: String = t
            .iter()
            .map(|(k, v)| format!("{k}={}\n", v.name()))
            .collect::<String>()
            + "dev|y|t00|v111|m1n1k1=warp:999x1x1-w1x1-s1-b1\nnot a line\n";
        assert_eq!(parse_table(&text), t);
        assert_eq!(parse_choice("tiled16"), None);
    }
}

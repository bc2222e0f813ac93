//! The disk cache's entries: written compressed, read back whole, older uncompressed entries still
//! used (and rewritten smaller), anything torn or corrupted built again; and a measurement of the
//! compression on real CUBINs.

use super::tests::toolchain;
use super::*;
use crate::gpu::cache_file::{self, MAGIC};

/// A fresh folder of its own for one test.
fn folder(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("smemkit-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Bytes that look like a CUBIN to the reader (an ELF header), and compress.
fn fake_cubin() -> Vec<u8> {
    let mut b = b"\x7fELF\x02\x01\x01".to_vec();
    b.resize(20_000, 0);
    b.extend((0..20_000u32).map(|i| (i % 251) as u8));
    b
}

const SRC: KernelSource = KernelSource {
    name: "cached.cu",
    text: "extern \"C\" __global__ void cached_kernel(int *x) { x[0] = 11; }",
    headers: &[],
    one_kernel: false,
};

fn build_of(src: &KernelSource) -> Build<'_> {
    Build {
        src,
        defines: &[],
        kernel: "cached_kernel",
    }
}

/// The file `build_in` uses for `b` with `salt` (a salt of its own per test keeps the process's
/// memory cache from answering first).
fn entry_path(dir: &std::path::Path, b: &Build<'_>, output: Output, salt: &str) -> PathBuf {
    let arch = "compute_90a";
    let key = cache_key(b.src, &b.options(arch), output, salt);
    let ext = if output == Output::Cubin {
        "cubin"
    } else {
        "ptx"
    };
    dir.join(format!("{key}.{ext}"))
}

#[test]
fn entries_are_written_compressed_and_read_back_whole() {
    let dir = folder("compressed");
    let cubin = fake_cubin();
    let path = dir.join("k.cubin");
    write_cache(&path, "k", &Image::Cubin(cubin.clone()));
    let file = std::fs::read(&path).unwrap();
    assert!(file.starts_with(MAGIC));
    assert!(file.len() < cubin.len() / 4, "{} bytes", file.len());
    match read_cache(&path, Output::Cubin) {
        Some((Image::Cubin(b), true)) => assert_eq!(b, cubin),
        other => panic!("{other:?}"),
    }
    let ptx = ".version 9.0\n.target sm_90a\n".repeat(100);
    let path = dir.join("k.ptx");
    write_cache(&path, "k", &Image::Ptx(ptx.clone()));
    match read_cache(&path, Output::Ptx) {
        Some((Image::Ptx(t), true)) => assert_eq!(t, ptx),
        other => panic!("{other:?}"),
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
    assert_eq!(
        read_cache(&dir.join("missing.ptx"), Output::Ptx).map(|_| ()),
        None
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unusable_entry_is_a_miss() {
    let dir = folder("unusable");
    let path = dir.join("k.cubin");
    let whole = cache_file::encode(&fake_cubin());
    let cases: [(&str, Vec<u8>); 5] = [
        ("torn", whole[..whole.len() / 2].to_vec()),
        ("magic only", MAGIC.to_vec()),
        ("another version", {
            let mut f = whole.clone();
            f[4] += 1;
            f
        }),
        (
            "compressed, not an ELF file",
            cache_file::encode(b"not a cubin"),
        ),
        ("uncompressed, not an ELF file", b"\x7fEL".to_vec()),
    ];
    for (what, bytes) in cases {
        std::fs::write(&path, bytes).unwrap();
        assert!(read_cache(&path, Output::Cubin).is_none(), "{what}");
    }
    std::fs::write(&path, cache_file::encode(&[0xff, 0xfe])).unwrap();
    assert!(
        read_cache(&path, Output::Ptx).is_none(),
        "PTX that is not UTF-8"
    );
    // A folder where the file should be: unreadable, a miss, no panic.
    let as_dir = dir.join("d.ptx");
    std::fs::create_dir_all(&as_dir).unwrap();
    assert!(read_cache(&as_dir, Output::Ptx).is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_entry_written_before_compression_is_used_then_rewritten_compressed() {
    // No compiler needed: the entry is found, so nothing is built (the text is not NVRTC's,
    // which shows where the answer came from).
    let dir = folder("legacy");
    let b = build_of(&SRC);
    let salt = "legacy entry test";
    let path = entry_path(&dir, &b, Output::Ptx, salt);
    let old = "// written uncompressed by an earlier version\n".repeat(50);
    std::fs::write(&path, &old).unwrap();
    let image = build_in(
        Some(dir.clone()),
        &b,
        "compute_90a",
        Output::Ptx,
        salt,
        Keep::Disk,
    );
    match image.as_deref() {
        Ok(Image::Ptx(t)) => assert_eq!(t, &old),
        other => panic!("{other:?}"),
    }
    let file = std::fs::read(&path).unwrap();
    assert!(file.starts_with(MAGIC), "rewritten compressed");
    assert!(file.len() < old.len());
    assert!(matches!(read_cache(&path, Output::Ptx), Some((Image::Ptx(t), true)) if t == old));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_torn_entry_is_built_again_and_replaced() {
    if !toolchain() {
        return;
    }
    let dir = folder("torn");
    let b = build_of(&SRC);
    let salt = "torn entry test";
    let path = entry_path(&dir, &b, Output::Ptx, salt);
    let whole = cache_file::encode(".entry cached_kernel(".repeat(40).as_bytes());
    std::fs::write(&path, &whole[..whole.len() - 3]).unwrap();
    let image = build_in(
        Some(dir.clone()),
        &b,
        "compute_90a",
        Output::Ptx,
        salt,
        Keep::Disk,
    );
    match image.as_deref() {
        Ok(Image::Ptx(t)) => assert!(t.contains(".entry cached_kernel(") && t.contains(".target")),
        other => panic!("{other:?}"),
    }
    match read_cache(&path, Output::Ptx) {
        Some((Image::Ptx(t), true)) => assert!(t.contains(".target")),
        other => panic!("the entry was not replaced: {other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Real CUBINs (histogram kernels built one at a time as the planner names them, matmul
/// autotuner candidates) and the PTX fallback: bytes raw and compressed, and the median time to
/// read an entry back (decompression and checks). Prints one line per entry and the totals.
/// `cargo test -p smemkit --lib cache_compression_of_real_kernels -- --ignored --nocapture`.
#[test]
#[ignore = "measures: compiles a few dozen kernels with NVRTC (minutes on two cores)"]
fn cache_compression_of_real_kernels() {
    use crate::matmul::cuda::{warp_defines, WarpConfig};
    use crate::sample::SampleType;
    if !toolchain() {
        return;
    }
    let mut images: Vec<(String, Image)> = Vec::new();
    for t in [
        SampleType::I32,
        SampleType::F32,
        SampleType::U8,
        SampleType::F64,
    ] {
        let d = crate::histogram::cuda::prepared::sample_defines(t);
        let ptx = compile_uncached(&HISTOGRAM, &options("compute_90a", &d)).unwrap();
        let names: Vec<&str> = ptx
            .split(".entry ")
            .skip(1)
            .filter_map(|s| s.split('(').next())
            .collect();
        // A spread of the type's kernels (every strategy family appears among them).
        let step = (names.len() / 8).max(1);
        for name in names.iter().step_by(step) {
            let b = Build {
                src: &HISTOGRAM,
                defines: &d,
                kernel: name,
            };
            let image = compile_image(&HISTOGRAM, &b.options("sm_90a"), Output::Cubin).unwrap();
            images.push((format!("{t} {name}"), image));
        }
        if t == SampleType::I32 {
            images.push((
                format!("{t} histogram.cu, PTX of every kernel"),
                Image::Ptx(ptx),
            ));
        }
    }
    for c in WarpConfig::CANDIDATES.iter().step_by(6) {
        let d = warp_defines(c, false, false, false);
        let image = compile_image(&MATMUL_WARP, &options("sm_90a", &d), Output::Cubin).unwrap();
        images.push((format!("matmul {}", c.name()), image));
    }
    let (mut raw, mut packed, mut read_us) = (0usize, 0usize, Vec::new());
    // Bytes and encoding milliseconds at levels 1, 6 and 9, over the CUBINs only.
    let mut by_level = [(1u32, 0usize, 0f64), (6, 0, 0.0), (9, 0, 0.0)];
    for (name, image) in &images {
        let bytes = match image {
            Image::Cubin(b) => b.as_slice(),
            Image::Ptx(t) => t.as_bytes(),
        };
        if let Image::Cubin(_) = image {
            for (level, size, ms) in &mut by_level {
                let start = Instant::now();
                *size += cache_file::encode_at(bytes, *level).len();
                *ms += start.elapsed().as_secs_f64() * 1e3;
            }
        }
        let start = Instant::now();
        let file = cache_file::encode(bytes);
        let write_ms = start.elapsed().as_secs_f64() * 1e3;
        let mut times: Vec<f64> = (0..21)
            .map(|_| {
                let copy = file.clone();
                let start = Instant::now();
                let back = cache_file::decode(copy).unwrap();
                let us = start.elapsed().as_secs_f64() * 1e6;
                assert_eq!(back, cache_file::Entry::Compressed(bytes.to_vec()));
                us
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let us = times[times.len() / 2];
        println!(
            "{name:60} {:8} -> {:7} bytes ({:4.1}x), encode {write_ms:6.2} ms, read {us:7.1} us",
            bytes.len(),
            file.len(),
            bytes.len() as f64 / file.len() as f64
        );
        raw += bytes.len();
        packed += file.len();
        read_us.push(us);
    }
    for (level, size, ms) in by_level {
        println!("CUBINs at level {level}: {size} bytes, {ms:.1} ms to encode them all");
    }
    read_us.sort_by(f64::total_cmp);
    println!(
        "{} entries: {raw} -> {packed} bytes ({:.2}x); read per entry median {:.1} us, max {:.1} us",
        images.len(),
        raw as f64 / packed as f64,
        read_us[read_us.len() / 2],
        read_us[read_us.len() - 1]
    );
}

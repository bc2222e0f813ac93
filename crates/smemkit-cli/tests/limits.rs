//! Sizes the user controls that no engine or no memory can hold: one `error:` line naming the size
//! and the limit, exit status 1, never an abort or a panic, with the binary run under an
//! address-space limit of 8 GB (`ulimit -v 8000000`) as a user's shell might set it.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

use tempfile::TempDir;

/// Runs `smemkit ARGS` in `dir` under `ulimit -v 8000000`.
fn limited(dir: &Path, args: &[&str]) -> Output {
    Command::new("bash")
        .current_dir(dir)
        .arg("-c")
        .arg("ulimit -v 8000000 && exec \"$@\"")
        .arg("bash")
        .arg(env!("CARGO_BIN_EXE_smemkit"))
        .args(args)
        .output()
        .unwrap()
}

fn refused(out: &Output, args: &[&str], needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        None,
        "{args:?} died of a signal: {stderr}"
    );
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{args:?}: `{n}` not in {stderr}");
    }
}

/// A C-order float32 `.npy` (version 1.0) of `shape`, filled with ones.
fn npy_ones(shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    npy_with(&format!("({})", dims.join(", ")), shape.iter().product())
}

/// A float32 `.npy` whose header claims `shape` and whose data is `count` ones.
fn npy_with(shape: &str, count: usize) -> Vec<u8> {
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for _ in 0..count {
        out.extend_from_slice(&1f32.to_le_bytes());
    }
    out
}

#[test]
fn huge_sizes_under_an_address_space_limit_are_one_clear_error() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    std::fs::write(d.join("f.txt"), "0.5\n1.5\n2.5\n").unwrap();
    std::fs::write(d.join("i.txt"), "1\n2\n3\n").unwrap();
    std::fs::write(d.join("a.npy"), npy_ones(&[65536, 1])).unwrap();
    std::fs::write(d.join("b.npy"), npy_ones(&[1, 65536])).unwrap();
    let limit = "the address-space limit (ulimit -v)";
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec![
                "hist",
                "f.txt",
                "--bins",
                "1099511627776",
                "--backend",
                "cpu",
            ],
            vec!["--bins 1099511627776", limit],
        ),
        (
            vec![
                "hist",
                "i.txt",
                "--dtype",
                "i32",
                "--bins",
                "4294967292",
                "--backend",
                "cpu",
            ],
            vec!["--bins 4294967292", limit],
        ),
        (
            vec![
                "hist",
                "--generate",
                "uniform",
                "--count",
                "1000000000000",
                "--bins",
                "10",
            ],
            vec!["--count 1000000000000", "4000000000000 bytes", limit],
        ),
        (
            vec![
                "hist",
                "--generate",
                "uniform",
                "--count",
                "18446744073709551615",
                "--bins",
                "10",
            ],
            vec!["--count 18446744073709551615", limit],
        ),
        (
            vec![
                "bench", "--log2-n", "40", "--bins", "256", "--dtype", "i32", "--dist", "uniform",
            ],
            vec!["--log2-n 40", limit],
        ),
        (
            vec![
                "bench",
                "--runs",
                "1000000000",
                "--log2-n",
                "10",
                "--bins",
                "256",
            ],
            vec!["--runs 1000000000", "at most 1000000"],
        ),
        (
            vec![
                "matmul",
                "a.npy",
                "b.npy",
                "--out",
                "c.npy",
                "--backend",
                "cpu",
            ],
            vec!["65536 x 65536", "17179869184 bytes", limit],
        ),
    ];
    for (args, needles) in &cases {
        refused(&limited(d, args), args, needles);
    }
    assert!(!d.join("c.npy").exists());
}

#[test]
fn an_npy_header_larger_than_its_file_is_refused_before_allocating() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    // The header claims 2^40 elements; the file holds four.
    std::fs::write(d.join("big.npy"), npy_with("(1099511627776,)", 4)).unwrap();
    for cmd in ["reverse", "stencil"] {
        let mut args = vec![cmd, "big.npy", "--out", "o.npy", "--backend", "cpu"];
        if cmd == "stencil" {
            args.extend(["--radius", "1", "--weights", "1,1,1"]);
        }
        refused(&limited(d, &args), &args, &["truncated", "1099511627776"]);
    }
}

#[test]
fn plans_beyond_the_cuda_engine_name_its_limit() {
    let dir = TempDir::new().unwrap();
    for bins in [
        "4611686018427387904",
        "18446744073709551615",
        "1099511627776",
        "4294967295",
    ] {
        let args = ["plan", "--bins", bins];
        refused(
            &limited(dir.path(), &args),
            &args,
            &[bins, "the CUDA engine", "the limit is 4294967294"],
        );
    }
    let ok = limited(dir.path(), &["plan", "--bins", "4294967294"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// Sizes that pass the up-front check but meet the engine's own buffers under a tight limit:
/// either a result or one error line (the allocator's last line of defence), never an abort.
#[test]
fn allocations_that_still_fail_end_with_one_error_line() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    std::fs::write(d.join("f.txt"), "0.5\n1.5\n2.5\n").unwrap();
    let mut failures = 0;
    for bins in ["38000000", "60000000"] {
        let args = [
            "hist",
            "f.txt",
            "--bins",
            bins,
            "--backend",
            "cpu",
            "--no-chart",
        ];
        let out = Command::new("bash")
            .current_dir(d)
            .arg("-c")
            .arg("ulimit -v 1000000 && exec \"$@\"")
            .arg("bash")
            .arg(env!("CARGO_BIN_EXE_smemkit"))
            .args(args)
            .output()
            .unwrap();
        if !out.status.success() {
            refused(&out, &args, &["error:"]);
            failures += 1;
        }
    }
    // At least one of them is beyond a 1 GB address space (60M bins hold 1.4 GB of counters).
    assert!(failures >= 1);
}

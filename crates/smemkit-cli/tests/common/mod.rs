//! Helpers shared by the CLI test files: running the binary, writing npy and other inputs,
//! reading JSON histograms back. Each test binary uses a part of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

pub fn smemkit(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .args(args)
        .output()
        .expect("the binary runs");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// A `.npy` file written from the format's specification (version 1.0), not by the reader under test.
pub fn npy(descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let order = if fortran { "True" } else { "False" };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

pub fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Runs `hist` with `--out` to a JSON file and returns the parsed document.
pub fn hist_json(dir: &TempDir, args: &[&str]) -> serde_json::Value {
    let out = dir.path().join("out.json");
    let mut all = vec!["hist"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-chart", "--out", p(&out)]);
    let r = smemkit(&all);
    assert!(r.ok, "smemkit {all:?} failed: {}", r.stderr);
    let doc = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).unwrap();
    doc
}

pub fn counts(doc: &serde_json::Value) -> Vec<u64> {
    doc["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

// The data most input tests share: 0 1 1 2 2 2 3 9 (9 is above 4 integer bins).
pub const VALUES: [i64; 8] = [0, 1, 1, 2, 2, 2, 3, 9];
pub const EXPECTED: [u64; 4] = [1, 2, 3, 1];

#[macro_export]
macro_rules! le_bytes {
    ($t:ty, $big:expr) => {
        VALUES
            .iter()
            .flat_map(|&v| {
                if $big {
                    (v as $t).to_be_bytes().to_vec()
                } else {
                    (v as $t).to_le_bytes().to_vec()
                }
            })
            .collect::<Vec<u8>>()
    };
}

/// Runs a command that must fail: one `error:` line naming the problem, no panic, and no output file.
pub fn fails(dir: &TempDir, args: &[&str], needle: &str) {
    let out = dir.path().join("result.json");
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--out", p(&out)]);
    let r = smemkit(&all);
    assert!(!r.ok, "smemkit {all:?} succeeded");
    assert!(
        !r.stderr.contains("panicked"),
        "panic for {all:?}: {}",
        r.stderr
    );
    assert_eq!(
        r.stderr.lines().count(),
        1,
        "one line for {all:?}: {}",
        r.stderr
    );
    assert!(
        r.stderr.starts_with("error: ") && r.stderr.contains(needle),
        "{all:?}: expected `{needle}` in {}",
        r.stderr
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("smemkit-partial") || n == "result.json")
        .collect();
    assert!(left.is_empty(), "files left behind by {all:?}: {left:?}");
}

/// The data bytes of a little-endian `.npy` written by smemkit (its header is padded to 64 bytes).
pub fn npy_data(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    bytes[10 + header_len..].to_vec()
}

/// The peak resident memory (VmHWM) of a running process, in bytes, while it is there to ask.
pub fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

//! `stencil` and `reverse` see the logical array: the same 3x4 array stored in C order and in
//! Fortran order gives the same result, the one worked out by hand on the row-major sequence.

use std::path::Path;
use std::process::Command;

use tempfile::TempDir;

/// A `.npy` (version 1.0) of int32 `values` given in memory order.
fn npy_i32(values: &[i32], shape: &[usize], fortran: bool) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let order = if fortran { "True" } else { "False" };
    let mut header = format!(
        "{{'descr': '<i4', 'fortran_order': {order}, 'shape': ({}), }}",
        dims.join(", ")
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// The header text and the int32 elements of a version 1.0 `.npy`.
fn read_npy_i32(path: &Path) -> (String, Vec<i32>) {
    let bytes = std::fs::read(path).unwrap();
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8_lossy(&bytes[10..10 + len]).into_owned();
    let data = bytes[10 + len..]
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    (header, data)
}

fn run(dir: &Path, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_smemkit"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn stencil_and_reverse_give_the_same_result_for_either_storage_order() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let (rows, cols) = (3usize, 4usize);
    // The logical array a[i][j] = 10 i + j, row-major.
    let logical: Vec<i32> = (0..rows)
        .flat_map(|i| (0..cols).map(move |j| (10 * i + j) as i32))
        .collect();
    let column_major: Vec<i32> = (0..cols)
        .flat_map(|j| (0..rows).map(move |i| (10 * i + j) as i32))
        .collect();
    std::fs::write(d.join("c.npy"), npy_i32(&logical, &[rows, cols], false)).unwrap();
    std::fs::write(d.join("f.npy"), npy_i32(&column_major, &[rows, cols], true)).unwrap();

    let mut reversed = logical.clone();
    reversed.reverse();
    let n = logical.len();
    let stencil: Vec<i32> = (0..n)
        .map(|i| {
            let at = |k: isize| logical.get(k as usize).copied().unwrap_or(0);
            let i = i as isize;
            if i == 0 {
                at(0) + at(1)
            } else {
                at(i - 1) + at(i) + at(i + 1)
            }
        })
        .collect();
    for input in ["c.npy", "f.npy"] {
        let out = format!("rev-{input}");
        run(d, &["reverse", input, "--out", &out, "--backend", "cpu"]);
        let (_, got) = read_npy_i32(&d.join(&out));
        assert_eq!(got, reversed, "reverse of {input}");

        let out = format!("st-{input}");
        run(
            d,
            &[
                "stencil",
                input,
                "--radius",
                "1",
                "--out",
                &out,
                "--backend",
                "cpu",
            ],
        );
        let (header, got) = read_npy_i32(&d.join(&out));
        assert!(
            header.contains("'fortran_order': False") && header.contains("(3, 4"),
            "{header}"
        );
        assert_eq!(got, stencil, "stencil of {input}");
    }
}

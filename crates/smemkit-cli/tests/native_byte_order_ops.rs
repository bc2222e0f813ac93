//! The array operations read `.npy` files whose header says native byte order (`'=f4'`, which
//! numpy writes and reads) as the same array with an explicit byte order: the results of stencil,
//! transpose, reverse and matmul are byte for byte those of the `'<'` file.

mod common;

use common::{npy, npy_data, p, smemkit, write};
use tempfile::TempDir;

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Runs `args` (with `{}` standing for the input) on the `'<'` and the `'='` file and returns both
/// outputs' data.
fn both(dir: &TempDir, descr: &str, shape: &[usize], data: &[u8], args: &[&str]) -> [Vec<u8>; 2] {
    let mut outs = Vec::new();
    for (i, order) in ["<", "="].into_iter().enumerate() {
        let input = write(
            dir,
            &format!("in{i}.npy"),
            &npy(&format!("{order}{descr}"), false, shape, data),
        );
        let out = dir.path().join(format!("out{i}.npy"));
        let mut all: Vec<&str> = args
            .iter()
            .map(|a| if *a == "{}" { p(&input) } else { a })
            .collect();
        all.extend_from_slice(&["--out", p(&out), "--backend", "cpu"]);
        let r = smemkit(&all);
        assert!(r.ok, "{order}{descr} {args:?}: {}", r.stderr);
        outs.push(npy_data(&out));
    }
    [outs[0].clone(), outs[1].clone()]
}

#[test]
fn native_byte_order_headers_give_the_same_results() {
    let dir = TempDir::new().unwrap();
    let values: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 2.0).collect();
    let data = f32_bytes(&values);
    for args in [
        &[
            "stencil",
            "{}",
            "--radius",
            "1",
            "--weights",
            "0.25,0.5,0.25",
        ][..],
        &["transpose", "{}"][..],
        &["reverse", "{}"][..],
    ] {
        let [explicit, native] = both(&dir, "f4", &[3, 4], &data, args);
        assert_eq!(explicit, native, "{args:?}");
        assert_eq!(explicit.len(), data.len(), "{args:?}");
    }
    // reverse of int32 by hand: the data read as the numbers written.
    let ints: Vec<u8> = (1..=5i32).flat_map(|v| v.to_le_bytes()).collect();
    let [_, native] = both(&dir, "i4", &[5], &ints, &["reverse", "{}"]);
    let got: Vec<i32> = native
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, [5, 4, 3, 2, 1]);
}

#[test]
fn matmul_reads_native_byte_order() {
    let dir = TempDir::new().unwrap();
    // [[1, 2], [3, 4]] x [[5, 6], [7, 8]] = [[19, 22], [43, 50]]
    let a = write(
        &dir,
        "a.npy",
        &npy("=f4", false, &[2, 2], &f32_bytes(&[1., 2., 3., 4.])),
    );
    let b = write(
        &dir,
        "b.npy",
        &npy("<f4", false, &[2, 2], &f32_bytes(&[5., 6., 7., 8.])),
    );
    let out = dir.path().join("c.npy");
    let r = smemkit(&["matmul", p(&a), p(&b), "--out", p(&out), "--backend", "cpu"]);
    assert!(r.ok, "{}", r.stderr);
    let got: Vec<f32> = npy_data(&out)
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, [19., 22., 43., 50.]);
}

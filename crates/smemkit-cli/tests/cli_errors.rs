//! End-to-end: every bad input gives one error line, a non-zero exit, no panic and no output file
//! left behind.

use tempfile::TempDir;

mod common;
use common::*;

#[test]
fn bad_inputs_give_one_clear_error_line() {
    let dir = TempDir::new().unwrap();
    let good = write(
        &dir,
        "good.npy",
        &npy("<i4", false, &[8], &le_bytes!(i32, false)),
    );
    let garbage = write(&dir, "garbage.npy", b"this is not a numpy file at all");
    let mut cut = npy("<i4", false, &[8], &le_bytes!(i32, false));
    cut.truncate(cut.len() - 5);
    let truncated = write(&dir, "truncated.npy", &cut);
    let header_cut = write(&dir, "header.npy", &npy("<i4", false, &[8], &[])[..30]);
    let complex = write(&dir, "complex.npy", &npy("<c8", false, &[1], &[0u8; 8]));
    let odd_raw = write(&dir, "odd.bin", &[1, 2, 3]);
    let bad_csv = write(&dir, "bad.csv", b"1\n2\nthree\n");
    let bad_edges = write(&dir, "edges.txt", b"0\n2\n1\n");
    let w = write(&dir, "w.npy", &npy("<f8", false, &[3], &[0u8; 24]));
    let unknown = write(&dir, "data.xyz", b"1234");
    let missing = dir.path().join("missing.npy");
    let no_folder = dir.path().join("nope").join("out.json");
    let g = p(&good);

    fails(
        &dir,
        &["hist", p(&garbage), "--bins", "4"],
        "not a valid .npy file",
    );
    fails(&dir, &["hist", p(&truncated), "--bins", "4"], "truncated");
    fails(
        &dir,
        &["hist", p(&header_cut), "--bins", "4"],
        "not a valid .npy file",
    );
    fails(
        &dir,
        &["hist", p(&complex), "--bins", "4"],
        "unsupported dtype",
    );
    // Empty inputs give numpy's zero counts: tests/numpy_parity.rs.
    fails(
        &dir,
        &["hist", p(&odd_raw), "--dtype", "u16", "--bins", "4"],
        "not a whole number",
    );
    fails(&dir, &["hist", p(&bad_csv), "--bins", "4"], "line 3");
    fails(
        &dir,
        &["hist", p(&unknown), "--bins", "4"],
        "unknown input extension",
    );
    fails(
        &dir,
        &["hist", p(&unknown), "--dtype", "q7", "--bins", "4"],
        "unknown sample type `q7`",
    );
    fails(
        &dir,
        &["hist", g, "--bins", "0"],
        "--bins must be at least 1",
    );
    fails(
        &dir,
        &["hist", g, "--bins", "4", "--range", "2:1"],
        "is inverted",
    );
    // An empty range (2:2) is widened by 0.5 as numpy does: tests/numpy_parity.rs.
    fails(
        &dir,
        &["hist", g, "--edges", p(&bad_edges)],
        "increase monotonically",
    );
    fails(
        &dir,
        &["hist", g, "--bins", "4", "--weights", p(&w)],
        "3 weights for 8 samples",
    );
    fails(&dir, &["hist", p(&missing), "--bins", "4"], "cannot read");
    fails(
        &dir,
        &["hist", g, "--bins", "4", "--out-of-range", "error"],
        "out-of-range policy `error`",
    );
    fails(
        &dir,
        &["hist", g, "--bins", "4", "--out-of-range", "wrap"],
        "unknown out-of-range policy",
    );
    // Without a GPU, asking for one is an error naming CUDA (on the device machine it just runs).
    if !smemkit::internals::gpu::is_available() {
        fails(
            &dir,
            &["hist", g, "--bins", "4", "--backend", "cuda"],
            "CUDA",
        );
    }
    fails(
        &dir,
        &[
            "hist",
            g,
            "--bins",
            "4",
            "--plot",
            p(&dir.path().join("x.gif")),
        ],
        "unknown plot extension",
    );

    // Output paths are checked before any work.
    for (args, needle) in [
        (
            vec!["hist", g, "--bins", "4", "--out", p(&no_folder)],
            "does not exist",
        ),
        (
            vec![
                "hist",
                g,
                "--bins",
                "4",
                "--out",
                p(&dir.path().join("x.xlsx")),
            ],
            "unknown output extension",
        ),
    ] {
        let r = smemkit(&args);
        assert!(
            !r.ok
                && !r.stderr.contains("panicked")
                && r.stderr.lines().count() == 1
                && r.stderr.contains(needle),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert!(!no_folder.exists() && !dir.path().join("x.xlsx").exists());
}

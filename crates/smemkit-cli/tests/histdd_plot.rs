//! `smemkit histdd --plot` of 3-D histograms: a grid of 2-D slices on one colour bar, as PNG
//! (decoded here, its size checked against the grid) and SVG; merged panels beyond 64 slices; the
//! refusals (four axes, too many cells) come before any output is written.

mod common;

use common::{fails, npy, p, smemkit};
use tempfile::TempDir;

/// An (n, 3) float64 array in C order: a spiral, so that the slices differ.
fn points(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let t = i as f64 / n as f64;
            let a = t * 12.0;
            [0.5 + 0.4 * t * a.cos(), 0.5 + 0.4 * t * a.sin(), t]
        })
        .flat_map(|x| x.to_le_bytes())
        .collect()
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    let decoder = png::Decoder::new(bytes);
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a whole PNG image");
    // A plot, not a blank canvas: more than two colours among its pixels.
    let px = info.color_type.samples();
    let mut seen = std::collections::HashSet::new();
    for c in buf[..info.buffer_size()].chunks(px) {
        seen.insert(c.to_vec());
        if seen.len() > 2 {
            break;
        }
    }
    assert!(seen.len() > 2, "the PNG is one or two colours");
    (info.width, info.height)
}

#[test]
fn three_d_histograms_draw_as_a_grid_of_slices() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("pts.npy");
    std::fs::write(&data, npy("<f8", false, &[5000, 3], &points(5000))).unwrap();
    // 9 slices: a 3 x 3 grid of 240-pixel panels, the colour bar's 170 and the title's 50.
    for (bins, want) in [
        ("12,10,9", (3 * 240 + 170, 3 * 240 + 50)),
        ("8,8,100", (8 * 240 + 170, 8 * 240 + 50)),
    ] {
        let png = dir.path().join("grid.png");
        let r = smemkit(&[
            "histdd",
            p(&data),
            "--bins",
            bins,
            "--range",
            "0:1",
            "--plot",
            p(&png),
        ]);
        assert!(r.ok, "{}", r.stderr);
        assert!(r.stdout.contains("plotted"), "{}", r.stdout);
        assert_eq!(png_size(&std::fs::read(&png).unwrap()), want, "{bins}");
        std::fs::remove_file(&png).unwrap();
    }
    let svg = dir.path().join("grid.svg");
    let r = smemkit(&[
        "histdd",
        p(&data),
        "--bins",
        "6",
        "--range",
        "0:1",
        "--density",
        "--plot",
        p(&svg),
    ]);
    assert!(r.ok, "{}", r.stderr);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") || text.contains("<svg"));
    assert!(
        text.contains("density"),
        "the colour bar names what it shows"
    );
    // Six panels, one caption each, the last one closed.
    assert_eq!(text.matches(" in [").count(), 6, "{text:.2000}");
    assert_eq!(text.matches(", 1]").count(), 1);
}

#[test]
fn plots_it_cannot_draw_are_refused_before_any_output() {
    let dir = TempDir::new().unwrap();
    let four = dir.path().join("four.npy");
    let vals: Vec<u8> = (0..40)
        .flat_map(|i| (i as f64 / 40.0).to_le_bytes())
        .collect();
    std::fs::write(&four, npy("<f8", false, &[10, 4], &vals)).unwrap();
    fails(
        &dir,
        &["histdd", p(&four), "--plot", "h.png"],
        "this one has 4 axes",
    );
    let three = dir.path().join("three.npy");
    std::fs::write(&three, npy("<f8", false, &[10, 3], &vals[..240])).unwrap();
    let out = dir.path().join("h.npy");
    let r = smemkit(&[
        "histdd",
        p(&three),
        "--bins",
        "512,512,8",
        "--out",
        p(&out),
        "--plot",
        p(&dir.path().join("h.png")),
    ]);
    assert!(!r.ok && r.stderr.contains("cells"), "{}", r.stderr);
    assert!(
        !out.exists(),
        "--out was written before the plot was refused"
    );
}

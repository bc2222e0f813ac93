//! Joint histograms against a plain reference written from numpy.histogramdd's definition
//! (`searchsorted(edges, x, 'right')`, the last edge shifted into the last bin, outliers dropped,
//! `bincount` in sample order), and hand-derived numpy results.

use proptest::prelude::*;

use super::*;
use crate::histogram::bins::int_edges::IntEdges;
use crate::histogram::bins::{linspace_f32, linspace_f64};

/// numpy.histogramdd's binning of one coordinate, written the slow way: `None` for an outlier.
fn reference_bin(edges: &[f64], x: f64) -> Option<usize> {
    // searchsorted(..., 'right'): how many edges are <= x; NaN sorts after everything.
    let mut k = if x.is_nan() {
        edges.len()
    } else {
        edges.iter().filter(|&&e| e <= x).count()
    };
    if x == edges[edges.len() - 1] {
        k -= 1;
    }
    (k != 0 && k != edges.len()).then(|| k - 1)
}

/// Counts (or sums of weights, added in sample order) and tallies of `points` (one row per sample).
fn reference(points: &[Vec<f64>], edges: &[Vec<f64>], w: Option<&[f64]>) -> (Vec<f64>, u64, u64) {
    let shape: Vec<usize> = edges.iter().map(|e| e.len() - 1).collect();
    let mut out = vec![0.0; shape.iter().product()];
    let (mut outside, mut nan) = (0, 0);
    for (i, p) in points.iter().enumerate() {
        if p.iter().any(|x| x.is_nan()) {
            nan += 1;
            continue;
        }
        let bins: Option<Vec<usize>> = p
            .iter()
            .zip(edges)
            .map(|(&x, e)| reference_bin(e, x))
            .collect();
        match bins {
            None => outside += 1,
            Some(b) => {
                let flat = b.iter().zip(&shape).fold(0, |f, (&i, &n)| f * n + i);
                out[flat] += w.map_or(1.0, |w| w[i]);
            }
        }
    }
    (out, outside, nan)
}

fn values(h: &JointHistogram) -> Vec<f64> {
    (0..h.counts.len()).map(|i| h.counts.get_f64(i)).collect()
}

fn edges_spec(edges: &[Vec<f64>]) -> JointOptions {
    JointOptions::new(edges.iter().map(|e| BinSpec::Edges(e.clone())).collect())
}

fn row_major(points: &[Vec<f64>]) -> Vec<f64> {
    points.iter().flatten().copied().collect()
}

fn column_major(points: &[Vec<f64>], dims: usize) -> Vec<f64> {
    (0..dims)
        .flat_map(|j| points.iter().map(move |p| p[j]))
        .collect()
}

#[test]
fn two_by_two_by_hand() {
    // numpy.histogramdd([[0, 0], [1, 1], [0.5, 0.5], [0.5, 2]], bins=2, range=[(0, 1), (0, 1)])
    // gives [[1, 0], [0, 2]]: 0.5 is on the middle edge (right bin), 1 on the last (closed), and
    // (0.5, 2) is outside the second axis.
    let data = [0.0, 0.0, 1.0, 1.0, 0.5, 0.5, 0.5, 2.0];
    let opts = JointOptions::new(vec![BinSpec::Uniform {
        nbins: 2,
        range: Some((0.0, 1.0)),
    }]);
    let h = histogramdd(
        &JointSamples::rows(Samples::F64(&data), 2).unwrap(),
        None,
        &opts,
    )
    .unwrap();
    assert_eq!(h.shape, vec![2, 2]);
    assert_eq!(h.counts, Counts::Unweighted(vec![1, 0, 0, 2]));
    assert_eq!(h.tallies, JointTallies { outside: 1, nan: 0 });
    assert_eq!(h.edges, vec![vec![0.0, 0.5, 1.0]; 2]);
    assert_eq!(h.counted(), 3);
}

#[test]
fn nan_on_one_axis_wins_over_outside_on_another() {
    let x = [f64::NAN, 5.0, 0.25];
    let y = [0.5, f64::NAN, 0.75];
    let opts = JointOptions::new(vec![BinSpec::Edges(vec![0.0, 0.5, 1.0])]);
    let h = histogram2d(Samples::F64(&x), Samples::F64(&y), None, &opts).unwrap();
    assert_eq!(h.tallies, JointTallies { outside: 0, nan: 2 });
    assert_eq!(h.counts, Counts::Unweighted(vec![0, 1, 0, 0]));
}

#[test]
fn float32_edges_from_the_data_but_float64_from_a_range() {
    // numpy.histogramdd builds edges with linspace: float32 when the range comes from float32
    // data (numpy 2 keeps float32 scalars), float64 when the caller gives the range.
    let x = [0.0f32, 1.0, 0.5];
    let s = JointSamples::separate(vec![Samples::F32(&x)]).unwrap();
    let auto = histogramdd(
        &s,
        None,
        &JointOptions::new(vec![BinSpec::Uniform {
            nbins: 3,
            range: None,
        }]),
    )
    .unwrap();
    let f32_edges: Vec<f64> = linspace_f32(0.0, 1.0, 4)
        .into_iter()
        .map(f64::from)
        .collect();
    assert_eq!(auto.edges[0], f32_edges);
    assert_eq!(auto.edges[0][1], 0.3333333432674408);
    let ranged = histogramdd(
        &s,
        None,
        &JointOptions::new(vec![BinSpec::Uniform {
            nbins: 3,
            range: Some((0.0, 1.0)),
        }]),
    )
    .unwrap();
    assert_eq!(ranged.edges[0], linspace_f64(0.0, 1.0, 4));
    assert_eq!(ranged.edges[0][1], 1.0 / 3.0);
}

#[test]
fn one_valued_axes_widen_by_half_and_empty_input_uses_zero_one() {
    let x = [7u8, 7, 7];
    let y = [1u8, 2, 3];
    let opts = JointOptions::new(vec![BinSpec::Uniform {
        nbins: 2,
        range: None,
    }]);
    let h = histogram2d(Samples::U8(&x), Samples::U8(&y), None, &opts).unwrap();
    assert_eq!(h.edges[0], vec![6.5, 7.0, 7.5]);
    assert_eq!(h.edges[1], vec![1.0, 2.0, 3.0]);
    // y = 2 is on the middle edge: the right bin; y = 3 on the last: the last bin.
    assert_eq!(h.counts, Counts::Unweighted(vec![0, 0, 1, 2]));
    let empty: [f32; 0] = [];
    let h = histogram2d(Samples::F32(&empty), Samples::F32(&empty), None, &opts).unwrap();
    assert_eq!(h.edges, vec![vec![0.0, 0.5, 1.0]; 2]);
    assert_eq!(h.counts, Counts::Unweighted(vec![0; 4]));
}

#[test]
fn density_divides_by_each_axis_width_then_the_total() {
    // Widths 1 and 3 on axis 0, 2 on axis 1; counts [[1], [3]]: density = count / width / 4.
    let x = [0.5, 2.0, 3.0, 4.0];
    let y = [1.0, 1.0, 1.5, 2.0];
    let opts = JointOptions::new(vec![
        BinSpec::Edges(vec![0.0, 1.0, 4.0]),
        BinSpec::Edges(vec![0.0, 2.0]),
    ])
    .density(true);
    let h = histogram2d(Samples::F64(&x), Samples::F64(&y), None, &opts).unwrap();
    assert_eq!(h.counts, Counts::Unweighted(vec![1, 3]));
    let d = h.density.unwrap();
    assert_eq!(d, vec![1.0 / 1.0 / 2.0 / 4.0, 3.0 / 3.0 / 2.0 / 4.0]);
}

#[test]
fn interleaved_rgb_u8_and_fortran_order_agree_with_separate_channels() {
    let pixels: Vec<u8> = (0..300u32).map(|i| (i * 37 % 256) as u8).collect();
    let opts = JointOptions::new(vec![BinSpec::Uniform {
        nbins: 4,
        range: Some((0.0, 256.0)),
    }]);
    let rgb = histogramdd(
        &JointSamples::interleaved(Samples::U8(&pixels), 3).unwrap(),
        None,
        &opts,
    )
    .unwrap();
    let channel = |c: usize| -> Vec<u8> { pixels.iter().skip(c).step_by(3).copied().collect() };
    let (r, g, b) = (channel(0), channel(1), channel(2));
    let sep =
        JointSamples::separate(vec![Samples::U8(&r), Samples::U8(&g), Samples::U8(&b)]).unwrap();
    let separate = histogramdd(&sep, None, &opts).unwrap();
    let fortran: Vec<u8> = [r.clone(), g.clone(), b.clone()].concat();
    let cols = histogramdd(
        &JointSamples::columns(Samples::U8(&fortran), 3).unwrap(),
        None,
        &opts,
    )
    .unwrap();
    assert_eq!(rgb.shape, vec![4, 4, 4]);
    assert_eq!(rgb.counts, separate.counts);
    assert_eq!(rgb.counts, cols.counts);
    // Every pixel lands: [0, 256) holds every u8.
    assert_eq!(rgb.counted(), 100);
    let points: Vec<Vec<f64>> = (0..100)
        .map(|i| vec![r[i] as f64, g[i] as f64, b[i] as f64])
        .collect();
    let (want, _, _) = reference(&points, &rgb.edges, None);
    assert_eq!(values(&rgb), want);
}

#[test]
fn more_joint_bins_than_private_counters_take_count_through_atomics() {
    // 1025 x 1024 joint bins is above the per-thread counters' limit.
    let n = 5000;
    let x: Vec<f64> = (0..n).map(|i| (i * 7919 % 1025) as f64 + 0.5).collect();
    let y: Vec<f64> = (0..n).map(|i| (i * 104729 % 1030) as f64).collect();
    let e0 = linspace_f64(0.0, 1025.0, 1026);
    let e1 = linspace_f64(0.0, 1024.0, 1025);
    let opts = JointOptions::new(vec![BinSpec::Edges(e0.clone()), BinSpec::Edges(e1.clone())]);
    let h = histogram2d(Samples::F64(&x), Samples::F64(&y), None, &opts).unwrap();
    assert!(h.counts.len() > super::cpu::PRIVATE_COUNTERS_MAX_BINS);
    let points: Vec<Vec<f64>> = (0..n).map(|i| vec![x[i], y[i]]).collect();
    let (want, outside, nan) = reference(&points, &[e0, e1], None);
    assert_eq!(values(&h), want);
    assert_eq!(h.tallies, JointTallies { outside, nan });
    assert!(outside > 0);
}

#[test]
fn bad_requests_are_clear_errors() {
    let x = [1.0, 2.0];
    let s = JointSamples::separate(vec![Samples::F64(&x), Samples::F64(&x)]).unwrap();
    let uniform = BinSpec::Uniform {
        nbins: 2,
        range: None,
    };
    let err =
        |o: JointOptions, w: Option<Weights<'_>>| histogramdd(&s, w, &o).unwrap_err().to_string();
    assert!(err(JointOptions::new(vec![uniform.clone(); 3]), None)
        .contains("3 bin specifications for 2 axes"));
    assert!(
        err(JointOptions::new(vec![BinSpec::Integer { nbins: 4 }]), None)
            .contains("no integer bins")
    );
    // The GPU engine's limit on axes is refused before any device work (no GPU needed).
    let nine: Vec<Samples<'_>> = (0..9).map(|_| Samples::F64(&x)).collect();
    let nine = JointSamples::separate(nine).unwrap();
    let e = histogramdd(
        &nine,
        None,
        &JointOptions::new(vec![uniform.clone()]).backend(Backend::Cuda),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("up to 8 axes"), "{e}");
    assert!(err(
        JointOptions::new(vec![uniform.clone()]),
        Some(Weights::F64(&[1.0]))
    )
    .contains("1"));
    let big = BinSpec::Uniform {
        nbins: 1 << 15,
        range: Some((0.0, 1.0)),
    };
    assert!(err(JointOptions::new(vec![big]), None).contains("joint"));
    let y = [1.0f32, 2.0];
    assert!(JointSamples::separate(vec![Samples::F64(&x), Samples::F32(&y)]).is_err());
    assert!(JointSamples::separate(vec![Samples::F64(&x), Samples::F64(&[1.0])]).is_err());
    assert!(JointSamples::rows(Samples::F64(&[1.0, 2.0, 3.0]), 2).is_err());
    let nan = [f64::NAN, 1.0];
    let s = JointSamples::separate(vec![Samples::F64(&nan)]).unwrap();
    assert!(histogramdd(&s, None, &JointOptions::new(vec![uniform])).is_err());
}

/// A coordinate drawn near the edges 0..=4: on them, between them, outside, NaN.
fn coordinate() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => (0i32..=16).prop_map(|q| q as f64 * 0.25 - 0.5),
        4 => -1.0f64..5.0,
        1 => Just(f64::NAN),
    ]
}

/// Increasing edges over about [0, 4], some equal neighbours, sometimes infinite ends.
fn edges() -> impl Strategy<Value = Vec<f64>> {
    (
        prop::collection::vec(0i32..=16, 2..7),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(mut q, lo_inf, hi_inf)| {
            q.sort();
            let mut e: Vec<f64> = q.into_iter().map(|q| q as f64 * 0.25).collect();
            if lo_inf {
                e[0] = f64::NEG_INFINITY;
            }
            if hi_inf && e.len() > 2 {
                let last = e.len() - 1;
                e[last] = f64::INFINITY;
            }
            e
        })
}

fn case() -> impl Strategy<Value = (Vec<Vec<f64>>, Vec<Vec<f64>>, Vec<f64>)> {
    (1usize..=4, 0usize..150).prop_flat_map(|(dims, n)| {
        (
            prop::collection::vec(prop::collection::vec(coordinate(), dims), n),
            prop::collection::vec(edges(), dims),
            prop::collection::vec(-3.0f64..3.0, n),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_layout_matches_the_reference((points, edges, w) in case()) {
        let dims = edges.len();
        let opts = edges_spec(&edges);
        let rows = row_major(&points);
        let cols = column_major(&points, dims);
        let axes: Vec<Vec<f64>> = (0..dims).map(|j| points.iter().map(|p| p[j]).collect()).collect();
        let layouts = [
            JointSamples::rows(Samples::F64(&rows), dims).unwrap(),
            JointSamples::columns(Samples::F64(&cols), dims).unwrap(),
            JointSamples::separate(axes.iter().map(|a| Samples::F64(a)).collect()).unwrap(),
        ];
        let (want, outside, nan) = reference(&points, &edges, None);
        let (want_w, _, _) = reference(&points, &edges, Some(&w));
        for s in &layouts {
            let h = histogramdd(s, None, &opts).unwrap();
            prop_assert_eq!(values(&h), want.clone());
            prop_assert_eq!(h.tallies, JointTallies { outside, nan });
            prop_assert_eq!(h.samples, points.len() as u64);
            let hw = histogramdd(s, Some(Weights::F64(&w)), &opts).unwrap();
            // Bit for bit: numpy's bincount adds each bin's weights in sample order.
            prop_assert_eq!(values(&hw).iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                want_w.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn uniform_bins_are_the_edges_numpy_builds(
        (points, nbins) in (1usize..=3).prop_flat_map(|d| (
            prop::collection::vec(prop::collection::vec(-10.0f32..10.0, d), 1..100),
            prop::collection::vec(1usize..40, d),
        )),
        ranged in any::<bool>(),
    ) {
        let dims = nbins.len();
        let rows: Vec<f32> = points.iter().flatten().copied().collect();
        let specs: Vec<BinSpec> = nbins.iter().map(|&n| BinSpec::Uniform {
            nbins: n,
            range: ranged.then_some((-3.0, 4.5)),
        }).collect();
        let h = histogramdd(&JointSamples::rows(Samples::F32(&rows), dims).unwrap(), None, &JointOptions::new(specs)).unwrap();
        for j in 0..dims {
            let want: Vec<f64> = if ranged {
                linspace_f64(-3.0, 4.5, nbins[j] + 1)
            } else {
                let col = points.iter().map(|p| p[j]);
                let lo = col.clone().fold(f32::INFINITY, f32::min);
                let hi = col.fold(f32::NEG_INFINITY, f32::max);
                let (lo, hi) = if lo == hi { (lo - 0.5, hi + 0.5) } else { (lo, hi) };
                linspace_f32(lo, hi, nbins[j] + 1).into_iter().map(f64::from).collect()
            };
            prop_assert_eq!(&h.edges[j], &want);
        }
        let wide: Vec<Vec<f64>> = points.iter().map(|p| p.iter().map(|&x| x as f64).collect()).collect();
        let (want, outside, nan) = reference(&wide, &h.edges, None);
        prop_assert_eq!(values(&h), want);
        prop_assert_eq!(h.tallies, JointTallies { outside, nan });
        if !ranged {
            prop_assert_eq!(outside, 0);
        }
    }
}

/// The GPU engine against the CPU engine: every layout, integer and float samples, shared and
/// global counters (2048 x 2048, 16^4 and 256 x 256 bins exceed shared memory; 5^4 and 32^3 fit),
/// NaN and outside samples, uneven edges with an empty bin.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_engine_matches_the_cpu_engine() {
    let n = 1 << 20;
    let xs: Vec<f32> = (0..n)
        .map(|i| match i % 97 {
            0 => f32::NAN,
            1 => 9.0,
            _ => ((i as u64 * 2654435761) % 100000) as f32 / 25000.0,
        })
        .collect();
    let rows = JointSamples::rows(Samples::F32(&xs), 2).unwrap();
    let cols = JointSamples::columns(Samples::F32(&xs), 4).unwrap();
    let pixels: Vec<u8> = (0..3 * n)
        .map(|i| ((i * 2654435761usize) >> 7) as u8)
        .collect();
    let rgb = JointSamples::interleaved(Samples::U8(&pixels), 3).unwrap();
    let cases: Vec<(&JointSamples<'_>, Vec<BinSpec>)> = vec![
        (
            &rows,
            vec![BinSpec::Uniform {
                nbins: 256,
                range: Some((0.0, 4.0)),
            }],
        ),
        (
            &rows,
            vec![BinSpec::Uniform {
                nbins: 2048,
                range: Some((-0.5, 4.25)),
            }],
        ),
        (
            &cols,
            vec![BinSpec::Uniform {
                nbins: 16,
                range: Some((0.5, 3.5)),
            }],
        ),
        (
            &cols,
            vec![BinSpec::Edges(vec![0.0, 0.1, 0.1, 2.0, 3.9, 4.0])],
        ),
        (
            &rgb,
            vec![BinSpec::Uniform {
                nbins: 32,
                range: Some((0.0, 256.0)),
            }],
        ),
        (
            &rgb,
            vec![BinSpec::Uniform {
                nbins: 64,
                range: None,
            }],
        ),
    ];
    for (s, bins) in cases {
        let cpu = histogramdd(
            s,
            None,
            &JointOptions::new(bins.clone()).backend(Backend::Cpu),
        )
        .unwrap();
        let gpu = histogramdd(
            s,
            None,
            &JointOptions::new(bins.clone()).backend(Backend::Cuda),
        )
        .unwrap();
        assert_eq!(gpu.engine.backend, Backend::Cuda);
        assert_eq!(gpu.edges, cpu.edges, "{bins:?}");
        assert_eq!(gpu.counts, cpu.counts, "{bins:?}: {}", gpu.engine.detail);
        assert_eq!(gpu.tallies, cpu.tallies, "{bins:?}");
    }
}

/// numpy compares int64 samples with int64 edges in integers: beyond 2^53 float64 would merge
/// `2^60 - 1`, `2^60` and `2^60 + 1` (numpy's test_large_integers). float64 samples compare in
/// float64, and the GPU engine refuses such edges by name.
#[test]
fn integer_edges_beyond_2_53_are_exact_for_integer_samples() {
    let big = 1i64 << 60;
    let rows = [0i64, big, 0, big + 1, 1, big - 1];
    let opts = JointOptions::new(vec![
        BinSpec::IntEdges(IntEdges::I64(vec![-1, 1, 2])),
        BinSpec::IntEdges(IntEdges::I64(vec![big - 1, big, big + 1])),
    ]);
    let h = histogramdd(
        &JointSamples::rows(Samples::I64(&rows), 2).unwrap(),
        None,
        &opts,
    )
    .unwrap();
    assert_eq!(h.shape, vec![2, 2]);
    // (0, 2^60) in [.., 2^60 + 1] closed: bin (0, 1); (0, 2^60 + 1) too; (1, 2^60 - 1): (1, 0).
    assert_eq!(values(&h), vec![0.0, 2.0, 1.0, 0.0]);
    let floats: Vec<f64> = rows.iter().map(|&v| v as f64).collect();
    let h = histogramdd(
        &JointSamples::rows(Samples::F64(&floats), 2).unwrap(),
        None,
        &opts,
    )
    .unwrap();
    // In float64 every y is 2^60, the middle edge: the second bin.
    assert_eq!(values(&h), vec![0.0, 2.0, 0.0, 1.0]);
    let gpu = histogramdd(
        &JointSamples::rows(Samples::I64(&rows), 2).unwrap(),
        None,
        &opts.clone().backend(Backend::Cuda),
    );
    let message = gpu.unwrap_err().to_string();
    assert!(message.contains("integer edges"), "{message}");
}

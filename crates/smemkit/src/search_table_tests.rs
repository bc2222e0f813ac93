use super::*;
use rand::{Rng, SeedableRng};

type Holds = fn(f64, f64) -> bool;

/// The next float64 above `x` (`f64::next_up`, newer than the crate's minimum Rust).
fn up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

/// The next float64 below `x`.
fn down(x: f64) -> f64 {
    -up(-x)
}

/// The four predicates the kernels search with: a histogram's edges and digitize's increasing
/// bins (`b <= x`, `b < x` with right), digitize's decreasing bins (`b > x`, `b >= x`).
const PREDICATES: [(Holds, bool); 4] = [
    (|b, x| b <= x, false),
    (|b, x| b < x, false),
    (|b, x| b > x, true),
    (|b, x| b >= x, true),
];

fn samples_near(bins: &[f64], r: &mut impl Rng) -> Vec<f64> {
    let mut xs = Vec::new();
    for &b in bins {
        xs.extend([b, up(b), down(b)]);
    }
    let (lo, hi) = (
        bins[0].min(bins[bins.len() - 1]),
        bins[0].max(bins[bins.len() - 1]),
    );
    let (lo, hi) = (lo.max(-1e300), hi.min(1e300));
    xs.extend((0..3000).map(|_| lo + (hi - lo) * r.gen::<f64>()));
    xs.extend(
        (0..300).map(|_| r.gen_range(-40.0..40.0f64).exp2() * if r.gen() { 1.0 } else { -1.0 }),
    );
    xs.extend([
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
    ]);
    xs
}

fn check(name: &str, bins: &[f64], r: &mut impl Rng) -> usize {
    let mut tables = 0;
    for (holds, decreasing) in PREDICATES {
        let mut bins = bins.to_vec();
        if decreasing {
            bins.reverse();
        }
        let Some(table) = SearchTable::build(&bins, holds) else {
            continue;
        };
        tables += 1;
        assert_eq!(table.starts.len(), CELLS as usize);
        for x in samples_near(&bins, r) {
            let want = bins.partition_point(|&b| holds(b, x)) as u32;
            assert_eq!(
                table.search(&bins, x, holds),
                want,
                "{name}: x = {x:e}, cell {}, {:?}, top {}",
                table.cell(x),
                table.cells,
                table.top
            );
        }
    }
    tables
}

#[test]
fn the_narrowed_search_finds_the_plain_partition_point() {
    let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(15);
    let mut tables = 0;
    for n in [32usize, 33, 100, 1000, 1001, 5000] {
        let linear: Vec<f64> = (0..n)
            .map(|i| -4.0 + 8.0 * i as f64 / (n - 1) as f64)
            .collect();
        let logs: Vec<f64> = (0..n)
            .map(|i| 10f64.powf(-3.0 + 9.0 * i as f64 / (n - 1) as f64))
            .collect();
        let mut random: Vec<f64> = (0..n).map(|_| r.gen_range(-1e3..1e3)).collect();
        random.sort_by(f64::total_cmp);
        let mut ties: Vec<f64> = (0..n).map(|_| r.gen_range(-5i32..5) as f64).collect();
        ties.sort_by(f64::total_cmp);
        let mut infinite = linear.clone();
        infinite[0] = f64::NEG_INFINITY;
        infinite[n - 1] = f64::INFINITY;
        let mut signed_logs: Vec<f64> = logs.iter().map(|&v| -v).chain(logs.clone()).collect();
        signed_logs.sort_by(f64::total_cmp);
        let narrow: Vec<f64> = (0..n).map(|i| 1e15 + i as f64 / 8.0).collect();
        for (name, bins) in [
            ("linear", linear),
            ("log-spaced", logs),
            ("random", random),
            ("ties", ties),
            ("infinite ends", infinite),
            ("signed log-spaced", signed_logs),
            ("narrow at 1e15", narrow),
        ] {
            tables += check(&format!("{name} {n}"), &bins, &mut r);
        }
    }
    // Not vacuous: most of these sets get a table.
    assert!(tables >= 100, "only {tables} tables");
}

#[test]
fn linear_bins_get_linear_cells_and_log_spaced_bins_key_cells() {
    let le: Holds = |b, x| b <= x;
    let linear: Vec<f64> = (0..=1000).map(|i| -4.0 + 8.0 * i as f64 / 1000.0).collect();
    let t = SearchTable::build(&linear, le).unwrap();
    assert!(matches!(t.cells, Cells::Linear { .. }), "{:?}", t.cells);
    assert!(t.top <= 1, "top {}", t.top);
    let logs: Vec<f64> = (0..=1000)
        .map(|i| 10f64.powf(-3.0 + 6.0 * i as f64 / 1000.0))
        .collect();
    let t = SearchTable::build(&logs, le).unwrap();
    assert!(matches!(t.cells, Cells::Key { .. }), "{:?}", t.cells);
    assert!(t.top <= 2, "top {}", t.top);
    // Few bins: no table.
    assert!(SearchTable::build(&linear[..20], le).is_none());
}

#[test]
fn keys_keep_the_order_of_the_values() {
    let xs = [
        f64::NEG_INFINITY,
        -1e300,
        -1.0,
        -5e-324,
        -0.0,
        0.0,
        5e-324,
        1.0,
        1e300,
        f64::INFINITY,
    ];
    for w in xs.windows(2) {
        assert!(order_key(w[0]) < order_key(w[1]), "{} {}", w[0], w[1]);
    }
    for x in xs {
        assert_eq!(from_key(order_key(x)).to_bits(), x.to_bits());
    }
}

#[test]
fn the_kernel_view_names_its_kind() {
    let le: Holds = |b, x| b <= x;
    let linear: Vec<f64> = (0..=1000).map(|i| i as f64).collect();
    let k = SearchTable::build(&linear, le).unwrap().kernel(0x1000);
    assert_eq!(
        (k.starts, k.kind, k.cells, k.first),
        (0x1000, 1, CELLS, 0.0)
    );
    // The C struct: a pointer, three 8-byte numbers, four 4-byte ones.
    assert_eq!(std::mem::size_of::<KernelSearchTable>(), 48);
}

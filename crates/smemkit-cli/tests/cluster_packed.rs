//! The cluster_packed strategy from the command line: `smemkit plan` prints its plans (no GPU
//! needed), `auto` does not choose it, and a name or size it cannot take is one `error:` line.

mod common;
use common::smemkit;

fn plan(args: &[&str]) -> common::Run {
    let mut all = vec!["plan", "--bins", "1048576", "--dtype", "f32"];
    all.extend_from_slice(args);
    smemkit(&all)
}

#[test]
fn plan_prints_cluster_packed_plans() {
    for (args, strategy, bins_per_block) in [
        (
            &["--strategy", "clusterpacked"][..],
            "clusterpacked8x8",
            131_072,
        ),
        (
            &["--strategy", "clusterpacked16"][..],
            "clusterpacked16x16",
            65_536,
        ),
        (
            &["--strategy", "cluster-packed8x16"][..],
            "clusterpacked8x16",
            65_536,
        ),
        (
            &["--strategy", "clusterpacked8", "--cluster-size", "16"][..],
            "clusterpacked8x16",
            65_536,
        ),
    ] {
        let r = plan(args);
        assert!(r.ok, "{args:?}: {}", r.stderr);
        assert!(
            r.stdout.contains(&format!("strategy      {strategy}\n"))
                && r.stdout
                    .contains(&format!("bins/block    {bins_per_block}\n"))
                && r.stdout.contains("x 1024 threads"),
            "{args:?}: {}",
            r.stdout
        );
    }
    let r = plan(&[]);
    assert!(r.ok, "{}", r.stderr);
    assert!(!r.stdout.contains("clusterpacked"), "{}", r.stdout);
}

#[test]
fn cluster_packed_refusals_are_one_error_line() {
    for (args, needle) in [
        (&["--strategy", "clusterpacked16x8"][..], "262272 bytes"),
        (&["--strategy", "clusterpacked4"][..], "unknown strategy"),
        (
            &["--strategy", "clusterpacked8x8", "--cluster-size", "8"][..],
            "names its cluster size",
        ),
        (
            &["--strategy", "clusterpacked", "--weighted"][..],
            "weighted sums",
        ),
        (&["--strategy", "clusterpacked8x17"][..], "outside 2..=16"),
    ] {
        let r = plan(args);
        assert!(!r.ok, "{args:?}: {}", r.stdout);
        assert!(
            r.stderr.starts_with("error: ") && r.stderr.lines().count() == 1,
            "{args:?}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
}

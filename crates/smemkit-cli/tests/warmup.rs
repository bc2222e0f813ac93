//! `smemkit warmup` and `smemkit bench --op first-call` (issue 20): their arguments are checked
//! before any GPU work, and without a GPU each says in one line that it needs one.

mod common;
use common::smemkit;

fn one_error_line(args: &[&str], needle: &str) {
    let r = smemkit(args);
    assert!(!r.ok, "smemkit {args:?} succeeded");
    assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
    assert!(
        r.stderr.starts_with("error: ") && r.stderr.contains(needle),
        "{args:?}: expected `{needle}` in {}",
        r.stderr
    );
}

#[test]
fn warmup_names_a_sample_type_it_does_not_know() {
    one_error_line(&["warmup", "--dtype", "i32,i33"], "--dtype i33");
}

#[test]
fn warmup_wants_a_sample_type() {
    let r = smemkit(&["warmup"]);
    assert!(!r.ok);
    assert!(r.stderr.contains("--dtype"), "{}", r.stderr);
}

#[test]
fn without_a_gpu_warmup_and_first_call_say_they_need_one() {
    if smemkit::internals::gpu::is_available() {
        eprintln!(
            "a GPU is present: the GPU runs of these commands are in scripts/gpu-check first-call"
        );
        return;
    }
    one_error_line(
        &["warmup", "--dtype", "i32"],
        "warmup builds kernels for a GPU",
    );
    // The default --backend is cpu: first-call must not fall through to the CPU benchmark.
    one_error_line(
        &["bench", "--op", "first-call"],
        "the first-call benchmark needs a GPU",
    );
}

//! Reducing kernel timings: the median of repeated CUDA-event measurements, which every benchmark
//! and autotuner of the library reports.

/// Median of timings.
pub fn median(times: &[f32]) -> f32 {
    let mut t = times.to_vec();
    t.sort_by(|a, b| a.total_cmp(b));
    if t.is_empty() {
        return f32::NAN;
    }
    t[t.len() / 2]
}

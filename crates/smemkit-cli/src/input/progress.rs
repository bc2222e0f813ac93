//! Reading large inputs with a progress bar. Mapped files are read lazily by the kernel; touching
//! every page once here moves the disk time out of the histogram's timing, and gives the bar
//! something to show. The bar appears only for inputs over [`BAR_THRESHOLD`] bytes and only when
//! stderr is a terminal, so pipes and CI logs stay clean.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Inputs smaller than this are read without a bar.
pub const BAR_THRESHOLD: u64 = 64 << 20;

/// A bar over `total` bytes, or a hidden one when no bar should be shown.
pub fn bar(total: u64, what: &str) -> ProgressBar {
    if total < BAR_THRESHOLD || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(
        "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar
}

/// Reads one byte of every page of `bytes` (faulting a mapped file into memory), with a bar.
pub fn touch(bytes: &[u8], what: &str) {
    const STEP: usize = 8 << 20;
    let bar = bar(bytes.len() as u64, what);
    let mut sum = 0u8;
    for chunk in bytes.chunks(STEP) {
        sum = chunk
            .iter()
            .step_by(4096)
            .fold(sum, |a, &b| a.wrapping_add(b));
        bar.inc(chunk.len() as u64);
    }
    // Keeps the reads from being optimised away.
    std::hint::black_box(sum);
    bar.finish_and_clear();
}

//! Large fresh buffers backed by transparent huge pages where the kernel offers them on request
//! (Linux, `madvise` mode, the common default). The CPU engine's partitioned path allocates a
//! result, edges and staging regions of up to 128 MiB per call; in 4 KiB pages each costs one
//! page fault per page on first touch: a fresh 128 MiB u64 buffer took 106-129 ms to zero and touch
//! on the 2-core VM, and 42-47 ms with the advice (the kernel still zeroes 2 MiB pages).

/// Asks the kernel to back the whole 2 MiB pages inside `buf` with huge pages. Call it before the
/// buffer is first written (a freshly allocated zeroed vector: its pages are not mapped yet).
/// Only advice: where it is not available or refused, nothing changes.
pub fn advise<T>(buf: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = buf.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(buf);
        let first = start.next_multiple_of(HUGE);
        if end >= first + HUGE {
            let len = (end - first) / HUGE * HUGE;
            // SAFETY: [first, first + len) lies inside `buf`'s allocation (first >= start, first +
            // len <= end); MADV_HUGEPAGE changes how the kernel backs the range, never its
            // contents, and the range stays owned by `buf`. The result is ignored: advice only.
            unsafe {
                libc::madvise(first as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// A zeroed vector of `len` elements with [`advise`] applied.
pub fn zeroed<T: Copy + Default>(len: usize) -> Vec<T> {
    let mut v = vec![T::default(); len];
    advise(&mut v);
    v
}

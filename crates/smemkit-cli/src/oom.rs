//! The last line of defence against a failed allocation: Rust's default is to print
//! "memory allocation of N bytes failed" and abort (SIGABRT, perhaps a core dump). Every size the
//! user controls is checked first ([`crate::limits`]); an allocation that still fails (an engine's
//! working buffers, memory taken by others meanwhile) ends the command here with one `error:` line
//! naming the size and exit status 1, like every other error.

use std::alloc::{GlobalAlloc, Layout, System};

/// The system allocator, with allocation failure turned into one error line and `_exit(1)`,
/// except inside [`fallible`], where a failure is returned to the caller as usual.
pub struct ExitOnFailure;

thread_local! {
    /// Set while this thread runs a fallible allocation (`try_reserve`), whose caller handles a
    /// failure itself. A const-initialised `Cell` needs no allocation to reach.
    static FALLIBLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, whose allocations may fail back to it (`Vec::try_reserve_exact` and the like)
/// rather than end the process.
pub fn fallible<R>(f: impl FnOnce() -> R) -> R {
    let before = FALLIBLE.with(|c| c.replace(true));
    let r = f();
    FALLIBLE.with(|c| c.set(before));
    r
}

fn failed(bytes: usize) -> *mut u8 {
    if FALLIBLE.with(|c| c.get()) {
        return std::ptr::null_mut();
    }
    fail(bytes)
}

/// A vector of `len` copies of `value`, or an error naming `what`, its size and the limit when
/// the memory cannot be had.
pub fn try_vec<T: Clone>(what: &str, len: usize, value: T) -> anyhow::Result<Vec<T>> {
    let bytes = (len as u128) * std::mem::size_of::<T>() as u128;
    crate::limits::check(what, bytes)?;
    let mut v = Vec::new();
    fallible(|| v.try_reserve_exact(len)).map_err(|_| {
        anyhow::anyhow!(
            "{what} needs {bytes} bytes ({}) of host memory, which could not be allocated",
            crate::limits::human(bytes)
        )
    })?;
    v.resize(len, value);
    Ok(v)
}

fn fail(bytes: usize) -> ! {
    // No allocation here: the message is assembled in a stack buffer.
    let mut buf = [0u8; 256];
    let mut len = 0;
    let mut put = |s: &[u8]| {
        let n = s.len().min(buf.len() - len);
        buf[len..len + n].copy_from_slice(&s[..n]);
        len += n;
    };
    put(b"error: out of memory: an allocation of ");
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = bytes;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(&digits[i..]);
    put(b" bytes failed (host memory, or the address-space limit of ulimit -v, is exhausted)\n");
    // SAFETY: write(2) and _exit(2) take a buffer we own; _exit ends the process at once, which is
    // all that is safe when the allocator has failed.
    unsafe {
        libc::write(2, buf.as_ptr().cast(), len);
        libc::_exit(1);
    }
}

// SAFETY: every method forwards to `System` with the same arguments, so the GlobalAlloc contract
// holds as it does for `System`; a null result never returns (the process exits).
unsafe impl GlobalAlloc for ExitOnFailure {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            return failed(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            return failed(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is (see the impl).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            return failed(new_size);
        }
        p
    }
}

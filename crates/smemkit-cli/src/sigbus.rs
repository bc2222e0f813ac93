//! A memory-mapped input that another program truncates while we read it makes the next read of
//! the lost pages raise SIGBUS, which by default kills the process with no message. This module
//! turns that into one line naming the mapped files and exit status 1: [`watch`] records each
//! file before it is mapped and prepares the message, and the handler only writes that prepared
//! message and calls `_exit` (both async-signal-safe). No output file is written afterwards: the
//! process ends at once, and partial outputs do not exist yet while the input is read.

use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// The prepared message, a leaked `&'static [u8]` behind a thin pointer so the handler reads it
/// with one atomic load. Each update leaks the previous one (a few per command).
static MESSAGE: AtomicPtr<&'static [u8]> = AtomicPtr::new(std::ptr::null_mut());
static PATHS: Mutex<Vec<String>> = Mutex::new(Vec::new());

const UNKNOWN: &[u8] = b"error: bus error (SIGBUS) outside any mapped input\n";

extern "C" fn on_sigbus(_: libc::c_int) {
    let message = MESSAGE.load(Ordering::Acquire);
    let bytes: &[u8] = if message.is_null() {
        UNKNOWN
    } else {
        // SAFETY: a non-null pointer always comes from `Box::leak` in `watch` and is never freed.
        unsafe { *message }
    };
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer is static.
    unsafe {
        libc::write(2, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(1);
    }
}

/// Installs the SIGBUS handler (once, at start). If it cannot be installed, SIGBUS keeps its
/// default action.
pub fn install() {
    // SAFETY: a zeroed sigaction is a valid value to fill in; the handler has the signature
    // sa_handler expects and only calls async-signal-safe functions.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
    }
}

/// Records that `path` is about to be memory-mapped, so a SIGBUS names it.
pub fn watch(path: &Path) {
    let mut paths = PATHS.lock().unwrap_or_else(|p| p.into_inner());
    let name = path.display().to_string();
    if paths.contains(&name) {
        return;
    }
    paths.push(name);
    let which = if paths.len() == 1 {
        paths[0].clone()
    } else {
        format!("one of {}", paths.join(", "))
    };
    let text = format!(
        "error: {which} changed while it was being read (truncated by another program?): \
         the mapped input lost its bytes, so the command stopped without a result\n"
    );
    let leaked: &'static [u8] = Box::leak(text.into_bytes().into_boxed_slice());
    MESSAGE.store(Box::into_raw(Box::new(leaked)), Ordering::Release);
}

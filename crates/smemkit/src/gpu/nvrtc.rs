//! One NVRTC compilation through cudarc's raw layer: cudarc's safe `compile_ptx` takes neither the
//! headers a kernel file includes (the repository's `.cuh` files, embedded in the library) nor asks
//! for a CUBIN, and both are needed: the headers to split the kernels by family, the CUBIN so that
//! the driver loads machine code without compiling PTX itself.

use std::ffi::{c_char, CStr, CString};

use cudarc::nvrtc::{result, sys};

/// What NVRTC hands back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Output {
    /// PTX text: any architecture the options name, compiled to machine code by the driver.
    Ptx,
    /// Machine code for the one real architecture the options name (`-arch=sm_90a`).
    Cubin,
}

/// Why a compilation failed: NVRTC's status and its log (empty when NVRTC wrote none).
#[derive(Debug)]
pub struct Failure {
    pub status: String,
    pub log: String,
}

/// A program created from `src` (named `name` in NVRTC's messages and the PTX's file table) with
/// `headers` as (include name, text) pairs, destroyed on drop.
struct Program {
    prog: sys::nvrtcProgram,
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: `prog` came from nvrtcCreateProgram and is destroyed only here.
        let _ = unsafe { result::destroy_program(self.prog) };
    }
}

fn failure(status: impl std::fmt::Debug, log: String) -> Failure {
    Failure {
        status: format!("{status:?}"),
        log,
    }
}

fn c_string(text: &str, what: &str) -> Result<CString, Failure> {
    CString::new(text).map_err(|_| failure("invalid input", format!("{what} contains a NUL byte")))
}

/// Compiles `src` with `options` and returns the PTX or the CUBIN.
pub fn compile(
    name: &str,
    src: &str,
    headers: &[(&str, &str)],
    options: &[String],
    output: Output,
) -> Result<Vec<u8>, Failure> {
    let src = c_string(src, name)?;
    let name = c_string(name, "the file name")?;
    let texts = headers
        .iter()
        .map(|(n, t)| c_string(t, n))
        .collect::<Result<Vec<_>, _>>()?;
    let names = headers
        .iter()
        .map(|(n, _)| c_string(n, "a header name"))
        .collect::<Result<Vec<_>, _>>()?;
    let text_ptrs: Vec<*const c_char> = texts.iter().map(|t| t.as_ptr()).collect();
    let name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: every pointer refers to a NUL-terminated string declared before `program` below, so
    // alive until after it is destroyed; the two arrays hold `headers.len()` entries each; `prog`
    // is a valid out pointer.
    unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            headers.len() as i32,
            text_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    }
    .result()
    .map_err(|e| failure(e, String::new()))?;
    let program = Program { prog };
    // SAFETY: `program.prog` is a live program (destroyed only when `program` drops, below).
    if let Err(e) = unsafe { result::compile_program(program.prog, options) } {
        // SAFETY: as above.
        let log = unsafe { result::get_program_log(program.prog) }
            .map(|raw| {
                // SAFETY: NVRTC NUL-terminates the log it wrote into `raw`.
                unsafe { CStr::from_ptr(raw.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_default();
        return Err(failure(e, log));
    }
    match output {
        Output::Ptx => {
            // SAFETY: a compiled, live program.
            let raw =
                unsafe { result::get_ptx(program.prog) }.map_err(|e| failure(e, String::new()))?;
            // NVRTC's PTX ends with its NUL; the text is everything before it.
            let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
            Ok(raw[..end].iter().map(|&c| c as u8).collect())
        }
        Output::Cubin => {
            let mut size = 0usize;
            // SAFETY: a compiled, live program and a valid out pointer.
            unsafe { sys::nvrtcGetCUBINSize(program.prog, &mut size) }
                .result()
                .map_err(|e| failure(e, String::new()))?;
            if size == 0 {
                return Err(failure(
                    "no CUBIN",
                    "NVRTC made no CUBIN (the options name a virtual architecture, compute_XX, not a real one, sm_XX)"
                        .into(),
                ));
            }
            let mut cubin = vec![0u8; size];
            // SAFETY: `cubin` holds the `size` bytes NVRTC said it would write.
            unsafe { sys::nvrtcGetCUBIN(program.prog, cubin.as_mut_ptr() as *mut c_char) }
                .result()
                .map_err(|e| failure(e, String::new()))?;
            Ok(cubin)
        }
    }
}

/// NVRTC's version, as "major.minor".
pub fn version() -> Option<String> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out pointers.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .ok()?;
    Some(format!("{major}.{minor}"))
}

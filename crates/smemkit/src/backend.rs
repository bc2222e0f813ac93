//! The engine choice shared by every operation: the CPU engine, the CUDA engine, or the GPU when
//! one can be used.

use crate::error::{Error, Result};

/// Which engine runs the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// The GPU when a CUDA driver and device are present, the CPU otherwise.
    #[default]
    Auto,
    /// The rayon CPU engine.
    Cpu,
    /// The CUDA engine.
    Cuda,
}

impl Backend {
    /// `text.parse()`, kept while callers move to [`FromStr`](std::str::FromStr).
    #[doc(hidden)]
    pub fn parse(text: &str) -> Result<Self, crate::error::Error> {
        text.parse()
    }
}

impl std::str::FromStr for Backend {
    type Err = crate::error::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Backend::Auto),
            "cpu" => Ok(Backend::Cpu),
            "cuda" => Ok(Backend::Cuda),
            _ => Err(Error::InvalidArgument(format!(
                "unknown backend `{text}` (expected auto, cpu or cuda)"
            ))),
        }
    }
}

/// `Auto` becomes `Cuda` when a GPU can be used and `Cpu` otherwise; explicit choices stay.
pub fn resolve_backend(backend: Backend) -> Backend {
    match backend {
        Backend::Auto if crate::gpu::is_available() => Backend::Cuda,
        Backend::Auto => Backend::Cpu,
        b => b,
    }
}

//! No output may replace an input. Files are compared by identity (device and inode, after
//! following symbolic links), so `x.npy`, `./x.npy`, a symbolic link to it and a hard link all
//! count as the same file. Commands register their inputs once; every output is checked against
//! them before any work is done and again just before it is written.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Result};

struct Input {
    dev: u64,
    ino: u64,
    what: String,
    path: PathBuf,
}

static INPUTS: Mutex<Vec<Input>> = Mutex::new(Vec::new());

fn id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Records `path` (described as `what`, e.g. "the input" or "--weights") as an input that no
/// output may replace. Paths that do not exist (yet) or are not files are left to their reader.
pub fn protect(what: &str, path: &Path) {
    if let Some((dev, ino)) = id(path) {
        INPUTS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Input {
                dev,
                ino,
                what: what.to_string(),
                path: path.to_path_buf(),
            });
    }
}

/// Refuses an output (`flag`, e.g. "--out") that is one of the registered inputs.
pub fn check_output(flag: &str, out: &Path) -> Result<()> {
    let Some((dev, ino)) = id(out) else {
        return Ok(());
    };
    let inputs = INPUTS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(i) = inputs.iter().find(|i| i.dev == dev && i.ino == ino) {
        bail!(
            "{flag} {} is {} ({}): refusing to replace an input with a result",
            out.display(),
            i.what,
            i.path.display()
        );
    }
    Ok(())
}

//! Partial output files: every output is written to a hidden file beside its target, named
//! `.<target>.smemkit-partial-XXXXXX`, and renamed over the target once whole. The live partial
//! files are kept in a registry so that SIGINT, SIGTERM and SIGHUP remove them before the process
//! exits (with 128 + the signal's number, as a shell reports a death by that signal); only SIGKILL
//! can leave one behind, and its name then says what it is.
//!
//! A partial file is created as a plain `create` would make it (mode 0666 less the umask), or with
//! the mode of the file it replaces, so outputs are as readable as the user expects.

use std::fs::Permissions;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// The partial files that exist now. The signal thread holds the lock while it removes them and
/// exits, and [`Partial::persist`] holds it while it renames, so a file is either renamed into
/// place or removed, never left behind by a signal that lands in between.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The marker in every partial file's name.
pub const MARKER: &str = ".smemkit-partial-";

/// Starts the thread that removes the partial files on SIGINT, SIGTERM or SIGHUP and exits with
/// 128 + the signal number. Without it (if the handlers cannot be installed) signals keep their
/// default action.
pub fn install_signal_cleanup() {
    let Ok(mut signals) = Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let spawned = std::thread::Builder::new()
        .name("signal-cleanup".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
                for path in live.iter() {
                    let _ = std::fs::remove_file(path);
                }
                std::process::exit(128 + signal);
            }
        });
    // No thread: the handlers are installed but nothing acts on them, so put the defaults back.
    if spawned.is_err() {
        for s in [SIGINT, SIGTERM, SIGHUP] {
            let _ = signal_hook::low_level::emulate_default_handler(s);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A partial file for `target`, registered for removal on signals until it is persisted or
/// dropped (which removes it).
pub struct Partial {
    file: Option<tempfile::NamedTempFile>,
}

impl Partial {
    /// Creates the partial file of `target` in its folder; `suffix` ends its name (writers that
    /// choose a format by extension need it).
    pub fn create(target: &Path, suffix: &str) -> Result<Partial> {
        let folder = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prefix = format!(".{name}{MARKER}");
        // 0666 is masked by the umask at creation, as a plain create would be.
        let mut live = lock();
        let file = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(suffix)
            .rand_bytes(6)
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(folder)
            .with_context(|| format!("cannot create a file in {}", folder.display()))?;
        live.push(file.path().to_path_buf());
        drop(live);
        // Replacing a file: keep its permissions.
        if let Ok(meta) = std::fs::metadata(target) {
            if meta.is_file() {
                let mode = meta.permissions().mode() & 0o777;
                file.as_file()
                    .set_permissions(Permissions::from_mode(mode))
                    .with_context(|| format!("cannot set the mode of {}", file.path().display()))?;
            }
        }
        Ok(Partial { file: Some(file) })
    }

    pub fn path(&self) -> &Path {
        self.file.as_ref().expect("present until persisted").path()
    }

    pub fn as_file(&self) -> &std::fs::File {
        self.file
            .as_ref()
            .expect("present until persisted")
            .as_file()
    }

    /// Renames the partial file over `target`.
    pub fn persist(mut self, target: &Path) -> Result<()> {
        let file = self.file.take().expect("present until persisted");
        let mut live = lock();
        let path = file.path().to_path_buf();
        let result = file.persist(target);
        // On failure the returned NamedTempFile is dropped here, which removes the partial file.
        live.retain(|p| p != &path);
        result
            .map(|_| ())
            .map_err(|e| e.error)
            .with_context(|| format!("cannot write {}", target.display()))
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            let mut live = lock();
            let path = file.path().to_path_buf();
            drop(file);
            live.retain(|p| p != &path);
        }
    }
}

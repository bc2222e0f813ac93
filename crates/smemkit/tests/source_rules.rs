//! Rules about the source tree that the compiler does not check: every `SMEMKIT_*` environment
//! variable is read in `config.rs` and listed there.

use std::path::{Path, PathBuf};

/// The crates' source files (`src/` of the library, the binary and the Python extension).
fn sources() -> Vec<(PathBuf, String)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for krate in ["smemkit", "smemkit-cli", "smemkit-py"] {
        walk(&crates.join(krate).join("src"), &mut out);
    }
    assert!(out.len() > 50, "found only {} source files", out.len());
    out
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
}

/// The `SMEMKIT_...` names in `text` (upper case, digits and underscores after the prefix).
fn names(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("SMEMKIT_") {
        let tail = &rest[i..];
        let len = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        found.push(tail[..len].trim_end_matches('_').to_string());
        rest = &tail[len..];
    }
    found
}

/// Preprocessor defines of the kernel sources, not environment variables.
const DEFINES: [&str; 3] = ["SMEMKIT_ONE_KERNEL", "SMEMKIT_KERNEL", "SMEMKIT_LAB_MODULE"];

#[test]
fn every_smemkit_variable_is_listed_in_config() {
    let mut unknown = Vec::new();
    for (path, text) in sources() {
        for name in names(&text) {
            if !smemkit::internals::config::ALL.contains(&name.as_str())
                && !DEFINES.contains(&name.as_str())
                && name != "SMEMKIT"
            {
                unknown.push(format!("{}: {name}", path.display()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "names not in smemkit::internals::config::ALL: {unknown:#?}"
    );
}

#[test]
fn only_config_reads_smemkit_variables() {
    let mut readers = Vec::new();
    for (path, text) in sources() {
        if path.ends_with("smemkit/src/config.rs") {
            continue;
        }
        for pattern in ["var(\"SMEMKIT_", "var_os(\"SMEMKIT_", "get(\"SMEMKIT_"] {
            if text.contains(pattern) {
                readers.push(format!("{}: {pattern}", path.display()));
            }
        }
    }
    assert!(readers.is_empty(), "read outside config.rs: {readers:#?}");
}

#[test]
fn the_name_scan_finds_names() {
    assert_eq!(
        names("a SMEMKIT_RANK=1 and `SMEMKIT_KERNEL_{kernel}`, SMEMKIT_"),
        ["SMEMKIT_RANK", "SMEMKIT_KERNEL", "SMEMKIT"]
    );
}

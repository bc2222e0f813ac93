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

/// The library's folder-level import graph: a node is an operation's facade (`histogram`, its
/// `mod.rs` and what is named through it), one of its parts (a folder or file beside the facade:
/// `histogram::cuda`, `histogram::bins`, `histogram::result`, `matmul::cpu`) or a top-level module
/// (`gpu`, `error`); an arrow A -> B where code of A names a `crate::` path into B. Test files
/// (`tests.rs`, `*_tests.rs`, `mod tests` blocks) are left out: the GPU tests use the CPU engine as
/// their reference.
mod imports {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    pub type Graph = BTreeMap<String, BTreeSet<String>>;

    fn src() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
    }

    /// The node of a module path (`["histogram", "cuda", "prepared"]` -> `histogram::cuda`).
    pub fn node(segments: &[&str]) -> Option<String> {
        let first = *segments.first()?;
        // The shared runtime, the launchers and the labs are one room each.
        const OPERATIONS: [&str; 4] = ["histogram", "histogramdd", "matmul", "array_ops"];
        match segments.get(1).filter(|_| OPERATIONS.contains(&first)) {
            Some(&second)
                if src().join(first).join(second).is_dir()
                    || src().join(first).join(format!("{second}.rs")).is_file() =>
            {
                Some(format!("{first}::{second}"))
            }
            _ => Some(first.to_string()),
        }
    }

    /// The code of `text` before its `#[cfg(test)] mod tests` block, without comments and string
    /// literals.
    fn code(text: &str) -> String {
        let end = [
            "#[cfg(test)]\nmod tests {",
            "#[cfg(test)]\npub(crate) mod tests {",
        ]
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .unwrap_or(text.len());
        let mut out = String::new();
        for line in text[..end].lines() {
            let (mut in_str, mut prev) = (false, ' ');
            for (i, c) in line.char_indices() {
                if !in_str && line[i..].starts_with("//") {
                    break;
                }
                if c == '"' && prev != '\\' && !line[..i].ends_with('\'') {
                    in_str = !in_str;
                } else if !in_str {
                    out.push(c);
                }
                prev = c;
            }
            out.push('\n');
        }
        out
    }

    /// The `crate::a::b` paths of `code` (with `prefix` `crate::`; `super::` for relative ones),
    /// and those of `use crate::{a::b, c}` groups' first level.
    fn targets(code: &str, prefix: &str) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut rest = code;
        while let Some(i) = rest.find(prefix) {
            let tail = &rest[i + prefix.len()..];
            let before_ok =
                i == 0 || !rest[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
            if tail.starts_with('{') {
                // `crate::{a::b, c::{d, e}}`: the first segment of each member.
                let close = tail
                    .find("};")
                    .or_else(|| tail.find('}'))
                    .unwrap_or(tail.len());
                for part in tail[1..close].split(',') {
                    let seg: Vec<String> = part
                        .trim()
                        .split("::")
                        .take(2)
                        .map(|s| {
                            s.trim_matches(|c: char| !c.is_alphanumeric() && c != '_')
                                .to_string()
                        })
                        .filter(|s| !s.is_empty())
                        .collect();
                    if !seg.is_empty() && before_ok {
                        out.push(seg);
                    }
                }
            } else if before_ok {
                let seg: Vec<String> = tail
                    .split("::")
                    .take(2)
                    .map(|s| {
                        s.chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect::<String>()
                    })
                    .take_while(|s| !s.is_empty())
                    .collect();
                if !seg.is_empty() {
                    out.push(seg);
                }
            }
            rest = tail;
        }
        out
    }

    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }

    pub fn graph() -> Graph {
        let mut files = Vec::new();
        walk(&src(), &mut files);
        let mut g = Graph::new();
        for path in files {
            let rel = path.strip_prefix(src()).unwrap();
            let name = rel.file_stem().unwrap().to_str().unwrap();
            if name == "tests" || name.ends_with("_tests") || rel == Path::new("lib.rs") {
                continue;
            }
            let mut segs: Vec<&str> = rel
                .parent()
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_str().unwrap())
                .collect();
            if name != "mod" {
                segs.push(name);
            }
            let Some(from) = node(&segs) else { continue };
            let text = std::fs::read_to_string(&path).unwrap();
            let code = code(&text);
            let mut all = targets(&code, "crate::");
            // `super::x` from module a::b::c names a::b::x (from a::b's mod.rs, a::x).
            if let Some((_, parent)) = segs.split_last() {
                for t in targets(&code, "super::") {
                    let mut abs: Vec<String> = parent.iter().map(|s| s.to_string()).collect();
                    abs.extend(t);
                    all.push(abs.into_iter().take(2).collect());
                }
            }
            for t in all {
                let t: Vec<&str> = t.iter().map(String::as_str).collect();
                if !src().join(t[0]).is_dir() && !src().join(format!("{}.rs", t[0])).is_file() {
                    continue; // a crate-root item (`crate::Error`), a macro or `crate::internals`
                }
                let to = node(&t).unwrap();
                if to != from {
                    g.entry(from.clone()).or_default().insert(to);
                }
            }
        }
        g
    }

    /// Pairs and longer loops: every node that reaches itself, with the loop found.
    pub fn cycles(g: &Graph) -> Vec<Vec<String>> {
        let mut found = Vec::new();
        for start in g.keys() {
            // Depth-first search for a path back to `start`.
            let mut stack = vec![(start.clone(), vec![start.clone()])];
            let mut seen = BTreeSet::new();
            while let Some((at, path)) = stack.pop() {
                for next in g.get(&at).into_iter().flatten() {
                    if next == start {
                        found.push(path.clone());
                    } else if seen.insert(next.clone()) {
                        let mut p = path.clone();
                        p.push(next.clone());
                        stack.push((next.clone(), p));
                    }
                }
            }
        }
        found
    }
}

#[test]
fn no_import_cycle_between_folders() {
    let g = imports::graph();
    assert!(g.len() > 10, "the graph is too small to be right: {g:#?}");
    let cycles = imports::cycles(&g);
    assert!(
        cycles.is_empty(),
        "import cycles: {cycles:#?}\ngraph: {g:#?}"
    );
}

#[test]
fn engines_import_neither_their_facade_nor_each_other_and_gpu_imports_no_operation() {
    let g = imports::graph();
    let operations = [
        "histogram",
        "histogramdd",
        "matmul",
        "array_ops",
        "lab",
        "digitize",
    ];
    let mut broken = Vec::new();
    for (from, tos) in &g {
        for to in tos {
            let (f_op, f_part) = from.split_once("::").unwrap_or((from, ""));
            let (t_op, t_part) = to.split_once("::").unwrap_or((to, ""));
            let engine = |p: &str| p == "cpu" || p == "cuda";
            if engine(f_part) && f_op == t_op && (t_part.is_empty() || engine(t_part)) {
                broken.push(format!("{from} -> {to}"));
            }
            if f_op == "gpu" && operations.contains(&t_op) {
                broken.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}\ngraph: {g:#?}");
}

#[test]
fn the_graph_sees_known_arrows() {
    let g = imports::graph();
    // The histogram's facade calls its CUDA engine, which builds on the shared runtime.
    assert!(g["histogram"].contains("histogram::cuda"), "{g:#?}");
    assert!(g["histogram::cuda"].contains("gpu"), "{g:#?}");
    assert_eq!(
        imports::node(&["histogram", "cuda", "prepared"]).unwrap(),
        "histogram::cuda"
    );
    assert_eq!(imports::node(&["matmul", "cpu"]).unwrap(), "matmul::cpu");
    assert_eq!(
        imports::node(&["histogram", "Counts"]).unwrap(),
        "histogram"
    );
    assert_eq!(imports::node(&["gpu", "compile"]).unwrap(), "gpu");
}

//! The crate root stays one screen: a few modules by operation and the names every operation
//! shares. A new public item belongs in the module of its operation, not at the root; this test
//! names the root's entries when it fails, so that whoever adds one sees where it went.

use std::path::Path;

/// The root's public names in `lib.rs`, leaving out the hidden `internals` module: each `pub mod`
/// and each name a root `pub use` brings in.
fn root_names(lib: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut statement = String::new();
    for line in lib.lines() {
        let code = line.split("//").next().unwrap_or("");
        let trimmed = code.trim();
        if depth == 0 && statement.is_empty() && trimmed.starts_with("pub ") {
            statement.push_str(trimmed);
        } else if !statement.is_empty() {
            statement.push(' ');
            statement.push_str(trimmed);
        }
        depth += code.matches('{').count();
        depth -= code.matches('}').count();
        if statement.is_empty() {
            continue;
        }
        if let Some(rest) = statement.strip_prefix("pub mod ") {
            let name = rest.split([' ', '{', ';']).next().unwrap().to_string();
            if name != "internals" {
                names.push(name);
            }
            statement.clear();
        } else if statement.ends_with(';') && depth == 0 {
            let tree = statement
                .trim_start_matches("pub use ")
                .trim_end_matches(';');
            match tree.split_once('{') {
                Some((_, group)) => names.extend(
                    group
                        .trim_end_matches('}')
                        .split(',')
                        .map(|n| n.trim().rsplit("::").next().unwrap().to_string())
                        .filter(|n| !n.is_empty()),
                ),
                None => names.push(tree.rsplit("::").next().unwrap().trim().to_string()),
            }
            statement.clear();
        }
    }
    names
}

#[test]
fn the_root_is_a_few_modules_and_the_shared_names() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let names = root_names(&lib);
    // The count the scan must at least find (so that a broken scan fails rather than passes).
    assert!(names.len() >= 10, "the scan found only {names:?}");
    assert!(
        names.len() <= 16,
        "{} public names at the crate root ({names:?}): put a new item in its operation's module",
        names.len()
    );
    for shared in [
        "Error",
        "Result",
        "Backend",
        "Gpu",
        "gpu",
        "gpu_at",
        "histogram",
        "bins",
    ] {
        assert!(
            names.iter().any(|n| n == shared),
            "{shared} not at the root: {names:?}"
        );
    }
}

#[test]
fn the_scan_reads_groups_modules_and_single_names() {
    let lib = "pub use a::B;\npub use c::{d, E};\npub mod f {\n    pub use g::H;\n}\n\
               #[doc(hidden)]\npub mod internals {\n    pub mod x {}\n}\npub mod i;\n";
    assert_eq!(root_names(lib), ["B", "d", "E", "f", "i"]);
}

//! The one shape of every benchmark's output: a JSON object per line, each stamped with the commit
//! and the GPU it was measured at (shared/BENCH.md's schema), written and flushed as soon as it is
//! measured so that a run cut short keeps its rows. The benchmarks build only their own fields.

use std::io::Write;

use anyhow::Result;
use serde_json::{json, Value};

/// The commit and GPU that every row of one benchmark run carries.
#[derive(Debug, Clone)]
pub struct Stamp {
    commit: String,
    gpu: String,
}

impl Stamp {
    pub fn new(commit: &str, gpu: &str) -> Stamp {
        Stamp {
            commit: commit.to_string(),
            gpu: gpu.to_string(),
        }
    }

    /// `fields` with the commit and the GPU added.
    pub fn row(&self, fields: Value) -> Value {
        with(fields, json!({ "commit": self.commit, "gpu": self.gpu }))
    }
}

/// The commit rows name: `SMEMKIT_COMMIT`, else `git describe` of the build.
pub fn commit() -> String {
    smemkit::internals::config::commit().unwrap_or_else(crate::commit::describe)
}

/// `row` with each field of `extra` added (replacing one of the same name); a non-object `extra`
/// adds nothing.
pub fn with(mut row: Value, extra: Value) -> Value {
    if let (Some(row), Value::Object(extra)) = (row.as_object_mut(), extra) {
        row.extend(extra);
    }
    row
}

/// Gigabytes per second of `bytes` moved in `ms` milliseconds.
pub fn gbps(bytes: usize, ms: f64) -> f64 {
    bytes as f64 / (ms / 1e3) / 1e9
}

/// Writes `row` as one line and flushes it.
pub fn emit(out: &mut dyn Write, row: &Value) -> Result<()> {
    writeln!(out, "{row}")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_carry_the_stamp_and_extras_win() {
        let s = Stamp::new("abc123", "NVIDIA H100");
        let r = with(
            s.row(json!({ "op": "hist", "ms": 2.0 })),
            json!({ "ms": 3.0, "plan": "p" }),
        );
        assert_eq!(
            r,
            json!({ "op": "hist", "ms": 3.0, "plan": "p", "commit": "abc123", "gpu": "NVIDIA H100" })
        );
        assert_eq!(with(json!({ "a": 1 }), json!(null)), json!({ "a": 1 }));
        let mut out = Vec::new();
        emit(&mut out, &r).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), r);
        assert_eq!(gbps(4_000_000, 2.0), 2.0);
    }
}

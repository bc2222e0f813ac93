//! Variants of the joint histogram kernels, so that one benchmark run can measure them side by
//! side and the planner's choice can be changed without a rebuild: how float32 axes check their
//! bin estimate (edges loaded or computed, [`super::linear`]), how many 16-byte groups a thread has
//! in flight, whether the next step's loads are issued before the current samples are counted, how
//! often the packed counters look for their hot bin, warp aggregation of equal bins, and the
//! window plan (packed counters for the middle of the joint bins, global atomics for the rest)
//! where the bins do not fit one block. Every variant counts exactly; only speed differs.
//!
//! The default comes from `SMEMKIT_HISTDD_VARIANT` ([`crate::config::HISTDD_VARIANT`]), else
//! [`JointVariant::DEFAULT`]; a [`super::DeviceJoint`] can be given another.

use crate::config;
use crate::error::{Error, Result};

/// How float32 axes check their bin estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeCheck {
    /// Against the edge table in memory (the first build's way).
    Table,
    /// Against edges computed in registers where the host proved the formula (else the table).
    Computed,
}

/// The window plan for joint bins that do not fit one block's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// 8-bit window counters where the planner would count in global memory (counts only).
    Auto,
    /// Never.
    Off,
    /// 8- or 16-bit window counters where the planner would count in global memory.
    Bits(u32),
}

/// One variant of the joint histogram kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JointVariant {
    pub edges: EdgeCheck,
    /// 16-byte groups per thread per step (1 to 4).
    pub unroll: u32,
    /// The next step's groups loaded before the current ones are counted.
    pub prefetch: bool,
    /// The packed counters refresh their hot bin before every sample (else once per step).
    pub hot_each: bool,
    /// Lanes of a warp with the same joint bin send one update (counts only).
    pub aggregate: bool,
    pub window: Window,
}

impl JointVariant {
    /// The kernels as first built: edges from the table, two groups in flight without prefetch,
    /// the hot bin refreshed per sample, no aggregation, global counters beyond one block.
    pub const LEGACY: JointVariant = JointVariant {
        edges: EdgeCheck::Table,
        unroll: 2,
        prefetch: false,
        hot_each: true,
        aggregate: false,
        window: Window::Off,
    };

    /// The planner's choice: edges from the table (read only near a bin's ends, where the estimate
    /// needs checking: `interior.rs`), prefetch, the hot bin refreshed once per step, the 8-bit
    /// window beyond one block; the fastest of the sweep on the H100 (bench/NOTES.md, "Session 12").
    pub const DEFAULT: JointVariant = JointVariant {
        edges: EdgeCheck::Table,
        unroll: 2,
        prefetch: true,
        hot_each: false,
        aggregate: false,
        window: Window::Auto,
    };

    /// The variant `SMEMKIT_HISTDD_VARIANT` names, else [`JointVariant::DEFAULT`].
    pub fn from_env() -> Result<JointVariant> {
        match config::histdd_variant() {
            None => Ok(JointVariant::DEFAULT),
            Some(s) => s.parse::<JointVariant>().map_err(|e| {
                Error::InvalidArgument(format!("{}={s}: {e}", config::HISTDD_VARIANT))
            }),
        }
    }

    /// The canonical name, which [`str::parse`] reads back.
    pub fn name(&self) -> String {
        if *self == JointVariant::LEGACY {
            return "legacy".into();
        }
        if *self == JointVariant::DEFAULT {
            return "default".into();
        }
        format!(
            "edges={},unroll={},prefetch={},hot={},aggregate={},window={}",
            match self.edges {
                EdgeCheck::Table => "table",
                EdgeCheck::Computed => "computed",
            },
            self.unroll,
            self.prefetch as u8,
            if self.hot_each { "each" } else { "step" },
            self.aggregate as u8,
            match self.window {
                Window::Auto => "auto".to_string(),
                Window::Off => "off".to_string(),
                Window::Bits(b) => b.to_string(),
            }
        )
    }

    /// The preprocessor defines of the kernels' build (`HISTDD_*` in `kernels/histdd.cu`).
    pub fn defines(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "HISTDD_EDGES",
                ((self.edges == EdgeCheck::Computed) as u8).to_string(),
            ),
            ("HISTDD_UNROLL", self.unroll.to_string()),
            ("HISTDD_PREFETCH", (self.prefetch as u8).to_string()),
            ("HISTDD_HOT_EACH", (self.hot_each as u8).to_string()),
        ]
    }

    /// The window counters' width where the planner counts `weighted` or not in global memory.
    pub fn window_bits(&self, weighted: bool) -> Option<u32> {
        match self.window {
            _ if weighted => None,
            Window::Auto => Some(8),
            Window::Off => None,
            Window::Bits(b) => Some(b),
        }
    }

    /// The variants a benchmark sweeps: the first build, the default, and the default with one
    /// thing changed at a time (4 groups in flight without prefetch: with prefetch the kernels cap
    /// the groups at 2 vectors per buffer, so `unroll=4` would build the default again).
    pub fn sweep() -> Vec<JointVariant> {
        let d = JointVariant::DEFAULT;
        vec![
            JointVariant::LEGACY,
            d,
            JointVariant {
                edges: EdgeCheck::Computed,
                ..d
            },
            JointVariant {
                prefetch: false,
                ..d
            },
            JointVariant {
                unroll: 4,
                prefetch: false,
                ..d
            },
            JointVariant { unroll: 1, ..d },
            JointVariant {
                hot_each: true,
                ..d
            },
            JointVariant {
                aggregate: true,
                ..d
            },
            JointVariant {
                window: Window::Bits(16),
                ..d
            },
            JointVariant {
                window: Window::Off,
                ..d
            },
        ]
    }
}

impl std::str::FromStr for JointVariant {
    type Err = String;

    /// `legacy`, `default`, or either followed by `,key=value` changes; a list of changes alone
    /// starts from the default. Keys: `edges=table|computed`, `unroll=1..4`, `prefetch=0|1`,
    /// `hot=each|step`, `aggregate=0|1`, `window=auto|off|8|16`.
    fn from_str(s: &str) -> std::result::Result<JointVariant, String> {
        let mut v = JointVariant::DEFAULT;
        for (k, part) in s.split(',').map(str::trim).enumerate() {
            match part {
                "legacy" if k == 0 => v = JointVariant::LEGACY,
                "default" if k == 0 => v = JointVariant::DEFAULT,
                "" => {}
                _ => {
                    let (key, value) = part
                        .split_once('=')
                        .ok_or_else(|| format!("'{part}' is not key=value"))?;
                    let bit = |value: &str| match value {
                        "0" => Ok(false),
                        "1" => Ok(true),
                        _ => Err(format!("{key}={value}: expected 0 or 1")),
                    };
                    match key {
                        "edges" => {
                            v.edges = match value {
                                "table" => EdgeCheck::Table,
                                "computed" => EdgeCheck::Computed,
                                _ => {
                                    return Err(format!(
                                        "edges={value}: expected table or computed"
                                    ))
                                }
                            }
                        }
                        "unroll" => {
                            v.unroll = value
                                .parse()
                                .ok()
                                .filter(|u| (1..=4).contains(u))
                                .ok_or_else(|| format!("unroll={value}: expected 1 to 4"))?
                        }
                        "prefetch" => v.prefetch = bit(value)?,
                        "aggregate" => v.aggregate = bit(value)?,
                        "hot" => {
                            v.hot_each = match value {
                                "each" => true,
                                "step" => false,
                                _ => return Err(format!("hot={value}: expected each or step")),
                            }
                        }
                        "window" => {
                            v.window = match value {
                                "auto" => Window::Auto,
                                "off" => Window::Off,
                                "8" => Window::Bits(8),
                                "16" => Window::Bits(16),
                                _ => {
                                    return Err(format!(
                                        "window={value}: expected auto, off, 8 or 16"
                                    ))
                                }
                            }
                        }
                        _ => {
                            return Err(format!(
                            "unknown key '{key}' (edges, unroll, prefetch, hot, aggregate, window)"
                        ))
                        }
                    }
                }
            }
        }
        Ok(v)
    }
}

impl Default for JointVariant {
    fn default() -> Self {
        JointVariant::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for v in JointVariant::sweep() {
            assert_eq!(v.name().parse::<JointVariant>().unwrap(), v, "{}", v.name());
        }
        assert_eq!(
            "legacy,unroll=4".parse::<JointVariant>().unwrap(),
            JointVariant {
                unroll: 4,
                ..JointVariant::LEGACY
            }
        );
        assert_eq!(
            "window=off".parse::<JointVariant>().unwrap(),
            JointVariant {
                window: Window::Off,
                ..JointVariant::DEFAULT
            }
        );
    }

    #[test]
    fn bad_variants_are_refused_by_name() {
        for (s, part) in [
            ("unroll=9", "unroll=9"),
            ("edges=fast", "edges=fast"),
            ("speed=1", "speed"),
            ("prefetch", "key=value"),
            ("default,legacy", "key=value"),
            ("window=4", "window=4"),
        ] {
            let e = s.parse::<JointVariant>().unwrap_err();
            assert!(e.contains(part), "{s}: {e}");
        }
    }

    #[test]
    fn defines_follow_the_variant() {
        let d = JointVariant::LEGACY.defines();
        assert!(d.contains(&("HISTDD_EDGES", "0".into())));
        assert!(d.contains(&("HISTDD_HOT_EACH", "1".into())));
        let d = JointVariant::DEFAULT.defines();
        assert!(d.contains(&("HISTDD_EDGES", "0".into())));
        assert!(d.contains(&("HISTDD_PREFETCH", "1".into())));
        assert_eq!(JointVariant::DEFAULT.window_bits(true), None);
        assert_eq!(JointVariant::DEFAULT.window_bits(false), Some(8));
        assert_eq!(JointVariant::LEGACY.window_bits(false), None);
        let computed = JointVariant {
            edges: EdgeCheck::Computed,
            ..JointVariant::DEFAULT
        };
        assert!(computed.defines().contains(&("HISTDD_EDGES", "1".into())));
    }
}

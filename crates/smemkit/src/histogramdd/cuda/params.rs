//! The parameters `kernels/histdd.cu` takes, built from resolved axes: the C structs' mirrors, the
//! per-axis tables the host prepares once (float64 edges, float32 edges rounded outwards for
//! float32 samples, the 256-entry bin tables of 8-bit samples) and the choice of memory layout.

use cudarc::driver::DeviceRepr;

use crate::histogram::bins::Slot;
use crate::sample::SampleType;

use super::super::axis::Axis;
use super::linear::{edge_mode, EdgeMode};

/// Axes one launch takes (`HISTDD_MAX_DIMS` in `kernels/histdd.cu`).
pub const HISTDD_MAX_DIMS: usize = 8;

/// A table entry of an 8-bit sample outside its axis (`JOINT_LUT_OUT`).
pub(crate) const LUT_OUT: u32 = 0x8000_0000;

/// Field for field `struct JointAxis` of `kernels/histdd.cu`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct KernelAxis {
    pub base: u64,
    pub stride: u64,
    pub edges: u64,
    pub edges32: u64,
    pub lut: u64,
    pub nbins: u32,
    pub has_estimate: i32,
    pub first: f64,
    pub scale: f64,
    pub lo: f64,
    pub hi: f64,
    pub first32: f32,
    pub scale32: f32,
    pub lo32: f32,
    pub hi32: f32,
    pub edge_mode: i32,
    pub start32: f32,
    pub step32: f32,
    /// Fractional parts of the estimate that need no edge read (`interior::interior_fractions`):
    /// float64 arithmetic, then float32; `(0, 0)` turns the shortcut off.
    pub interior_lo: f64,
    pub interior_hi: f64,
    pub interior_lo32: f32,
    pub interior_hi32: f32,
}

/// Field for field `struct Joint` of `kernels/histdd.cu`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct KernelJoint {
    pub axis: [KernelAxis; HISTDD_MAX_DIMS],
    pub n: u64,
    pub nbins: u64,
    pub dims: i32,
    pub aggregate: i32,
    pub bins_per_block: u32,
    pub lut_shared: i32,
    pub window_lo: u64,
    pub window_len: u64,
}

// SAFETY: plain old data with the C layout of the kernel's `Joint`; passed by value.
unsafe impl DeviceRepr for KernelJoint {}

/// The smallest float32 at or above `e`: for every float32 x, `x >= e` exactly when
/// `x >= up32(e)` (the comparison numpy makes in float64).
pub(crate) fn up32(e: f64) -> f32 {
    let f = e as f32;
    if (f as f64) < e {
        next_up(f)
    } else {
        f
    }
}

/// The largest float32 at or below `e`: `x <= e` exactly when `x <= down32(e)`.
pub(crate) fn down32(e: f64) -> f32 {
    let f = e as f32;
    if (f as f64) > e {
        -next_up(-f)
    } else {
        f
    }
}

/// The float32 after `f` (`f32::next_up`, newer than the crate's minimum Rust).
fn next_up(f: f32) -> f32 {
    if f.is_nan() || f == f32::INFINITY {
        f
    } else if f == 0.0 {
        f32::from_bits(1)
    } else if f > 0.0 {
        f32::from_bits(f.to_bits() + 1)
    } else {
        f32::from_bits(f.to_bits() - 1)
    }
}

/// The tables of every axis, laid out one after another: float64 edges, float32 edges (rounded
/// up: only interior edges are compared, `x >= e[i]`), and for 8-bit samples each axis's 256
/// entries, bin times the axis's C-order stride in the joint array, or [`LUT_OUT`].
pub(crate) struct AxisTables {
    pub edges: Vec<f64>,
    pub edges32: Vec<f32>,
    pub lut: Vec<u32>,
    /// Each axis's first edge in `edges` / `edges32`.
    pub offsets: Vec<usize>,
}

impl AxisTables {
    pub fn new(axes: &[Axis], sample_type: SampleType) -> AxisTables {
        let edges: Vec<f64> = axes.iter().flat_map(|a| a.edges.iter().copied()).collect();
        let edges32 = if sample_type == SampleType::F32 {
            edges.iter().map(|&e| up32(e)).collect()
        } else {
            Vec::new()
        };
        let mut offsets = Vec::with_capacity(axes.len());
        let mut at = 0;
        for a in axes {
            offsets.push(at);
            at += a.edges.len();
        }
        let lut = if sample_type.size() == 1 {
            let signed = sample_type == SampleType::I8;
            let mut lut = Vec::with_capacity(256 * axes.len());
            let mut stride = 1u32;
            let strides: Vec<u32> = axes
                .iter()
                .rev()
                .map(|a| {
                    let s = stride;
                    stride = stride.saturating_mul(a.nbins() as u32);
                    s
                })
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            for (a, s) in axes.iter().zip(strides) {
                for byte in 0..=255u8 {
                    let x = if signed {
                        byte as i8 as f64
                    } else {
                        byte as f64
                    };
                    lut.push(match a.locate(x) {
                        Slot::Bin(b) => b as u32 * s,
                        _ => LUT_OUT,
                    });
                }
            }
            lut
        } else {
            Vec::new()
        };
        AxisTables {
            edges,
            edges32,
            lut,
            offsets,
        }
    }
}

/// One axis's kernel parameters, its tables at the given device addresses (0 where absent).
/// `computed`: float32 axes whose edges follow a formula check against computed edges
/// ([`edge_mode`]; only builds with `HISTDD_EDGES` 1 look at the mode).
pub(crate) fn kernel_axis(
    axis: &Axis,
    j: usize,
    tables: &AxisTables,
    (edges, edges32, lut): (u64, u64, u64),
    computed: bool,
) -> KernelAxis {
    let e = &axis.edges;
    let n = axis.nbins();
    let (has_estimate, first, scale) = match axis.estimate() {
        Some((first, scale)) => (1, first, scale),
        None => (0, 0.0, 0.0),
    };
    let off = tables.offsets[j] as u64;
    let mode = if computed && has_estimate == 1 && !tables.edges32.is_empty() {
        let at = tables.offsets[j];
        edge_mode(e, &tables.edges32[at..at + n + 1])
    } else {
        EdgeMode::Table
    };
    let (start32, step32) = mode.formula();
    // Pow2 axes estimate from the formula itself: start32 and 1 / step32 (exact).
    let (first32, scale32) = match mode {
        EdgeMode::Pow2 { start, step } => (start, 1.0 / step),
        _ => (first as f32, scale as f32),
    };
    let ((interior_lo, interior_hi), (interior_lo32, interior_hi32)) =
        super::interior::interior_fractions(axis);
    KernelAxis {
        base: 0,
        stride: 0,
        edges: edges + off * 8,
        edges32: if edges32 == 0 { 0 } else { edges32 + off * 4 },
        lut: if lut == 0 {
            0
        } else {
            lut + j as u64 * 256 * 4
        },
        nbins: n as u32,
        has_estimate,
        first,
        scale,
        lo: e[0],
        hi: e[n],
        first32,
        scale32,
        lo32: up32(e[0]),
        hi32: down32(e[n]),
        edge_mode: mode.code(),
        start32,
        step32,
        interior_lo,
        interior_hi,
        interior_lo32,
        interior_hi32,
    }
}

/// Where each axis's coordinates lie on the device: the address of sample 0's coordinate and the
/// elements from one sample's coordinate to the next's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceAxis {
    pub ptr: u64,
    pub stride: u64,
}

/// How the kernels read the samples (the `<layout>` of their names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JointLayout {
    /// Any bases and strides, one coordinate at a time.
    Strided,
    /// An (N, D) array in C order, D in 2..=4, sample 0 16-byte aligned: 16-byte vectors of
    /// whole samples (interleaved RGB pixels, float32 (N, 2) / (N, 3) rows).
    Rows(usize),
    /// D in 2..=4 arrays of stride 1, each 16-byte aligned: one 16-byte vector of each per step.
    Columns(usize),
}

impl JointLayout {
    /// The fastest layout the axes allow.
    pub fn detect(axes: &[DeviceAxis], sample_type: SampleType) -> JointLayout {
        let d = axes.len();
        let size = sample_type.size() as u64;
        if !(2..=4).contains(&d) {
            return JointLayout::Strided;
        }
        let rows = axes
            .iter()
            .enumerate()
            .all(|(j, a)| a.stride == d as u64 && a.ptr == axes[0].ptr + j as u64 * size)
            && axes[0].ptr % 16 == 0;
        if rows {
            return JointLayout::Rows(d);
        }
        if axes.iter().all(|a| a.stride == 1 && a.ptr % 16 == 0) {
            return JointLayout::Columns(d);
        }
        JointLayout::Strided
    }

    /// The name in the kernels' entry points.
    pub fn name(&self) -> String {
        match self {
            JointLayout::Strided => "strided".into(),
            JointLayout::Rows(d) => format!("rows{d}"),
            JointLayout::Columns(d) => format!("cols{d}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_structs_have_the_kernels_layout() {
        // JointAxis: 5 pointers/u64, u32, int, 4 doubles, 4 floats, int, 2 floats (padded to 8),
        // 2 doubles, 2 floats; Joint: 8 axes, 2 u64, 4 ints (dims, aggregate, bins_per_block,
        // lut_shared), 2 u64.
        assert_eq!(std::mem::size_of::<KernelAxis>(), 136);
        assert_eq!(std::mem::size_of::<KernelJoint>(), 8 * 136 + 48);
    }

    #[test]
    fn float32_edges_round_outwards_and_keep_every_comparison() {
        for e in [0.1f64, -0.1, 1.0 / 3.0, 4.0, -4.0, 1e300, -1e300, 3.4e38] {
            let (u, d) = (up32(e), down32(e));
            assert!((u as f64) >= e && (d as f64) <= e, "{e}");
            // Every float32 near the edge compares with the rounded edge as with the exact one.
            let mut x = (e as f32).next_down().next_down();
            for _ in 0..5 {
                assert_eq!(x >= u, (x as f64) >= e, "{e} {x}");
                assert_eq!(x <= d, (x as f64) <= e, "{e} {x}");
                x = x.next_up();
            }
        }
        assert_eq!(up32(f64::INFINITY), f32::INFINITY);
        assert_eq!(down32(f64::NEG_INFINITY), f32::NEG_INFINITY);
        for f in [0.0f32, -0.0, 1.0, -1.0, f32::MAX, -f32::MAX, 1e-45, -1e-45] {
            let u = next_up(f);
            assert!(
                u > f && (f64::from(u) - f64::from(f)) <= f64::from(f.abs()) * 1.2e-7 + 1.5e-45
                    || u == f32::INFINITY,
                "{f} {u}"
            );
        }
    }

    #[test]
    fn layouts_are_detected_from_bases_and_strides() {
        let s = SampleType::F32;
        let row = |b: u64| {
            vec![
                DeviceAxis { ptr: b, stride: 2 },
                DeviceAxis {
                    ptr: b + 4,
                    stride: 2,
                },
            ]
        };
        assert_eq!(JointLayout::detect(&row(4096), s), JointLayout::Rows(2));
        assert_eq!(JointLayout::detect(&row(4100), s), JointLayout::Strided);
        let cols = vec![
            DeviceAxis {
                ptr: 4096,
                stride: 1,
            },
            DeviceAxis {
                ptr: 8192,
                stride: 1,
            },
            DeviceAxis {
                ptr: 1 << 20,
                stride: 1,
            },
        ];
        assert_eq!(JointLayout::detect(&cols, s), JointLayout::Columns(3));
        let rgb: Vec<DeviceAxis> = (0..3)
            .map(|j| DeviceAxis {
                ptr: 4096 + j,
                stride: 3,
            })
            .collect();
        assert_eq!(
            JointLayout::detect(&rgb, SampleType::U8),
            JointLayout::Rows(3)
        );
        let bgr: Vec<DeviceAxis> = (0..3)
            .rev()
            .map(|j| DeviceAxis {
                ptr: 4096 + j,
                stride: 3,
            })
            .collect();
        assert_eq!(
            JointLayout::detect(&bgr, SampleType::U8),
            JointLayout::Strided
        );
        assert_eq!(JointLayout::detect(&cols[..1], s), JointLayout::Strided);
    }
}

//! How the samples of a joint histogram lie in memory: an (N, D) array in row-major order (which is
//! also the interleaved channel layout of RGB pixels), in column-major order, or D separate arrays.
//! Each axis is then read through an [`AxisView`] (a start and a stride), so no layout is copied.

use crate::error::{Error, Result};
use crate::sample::{Sample, SampleType, Samples};

/// The most axes a joint histogram takes (numpy's limit on array dimensions).
pub const MAX_DIMS: usize = 32;

/// Samples of a joint histogram, of one element type chosen at run time.
#[derive(Debug, Clone)]
pub struct JointSamples<'a> {
    kind: Kind<'a>,
}

#[derive(Debug, Clone)]
enum Kind<'a> {
    /// (N, D) with `data.len() == N * D`; `column_major` says how it is stored.
    Matrix {
        data: Samples<'a>,
        dims: usize,
        column_major: bool,
    },
    Separate(Vec<Samples<'a>>),
}

impl<'a> JointSamples<'a> {
    /// An (N, `dims`) array stored row by row: sample `i` is `data[i * dims..(i + 1) * dims]`.
    pub fn rows(data: Samples<'a>, dims: usize) -> Result<Self> {
        Self::matrix(data, dims, false)
    }

    /// Interleaved channels (`channels` values per pixel, e.g. RGB): the same as [`JointSamples::rows`].
    pub fn interleaved(data: Samples<'a>, channels: usize) -> Result<Self> {
        Self::matrix(data, channels, false)
    }

    /// An (N, `dims`) array stored column by column (Fortran order): axis `j` is
    /// `data[j * N..(j + 1) * N]`.
    pub fn columns(data: Samples<'a>, dims: usize) -> Result<Self> {
        Self::matrix(data, dims, true)
    }

    /// D separate arrays of one length and one element type, one per axis.
    pub fn separate(axes: Vec<Samples<'a>>) -> Result<Self> {
        check_dims(axes.len())?;
        let (ty, n) = (axes[0].sample_type(), axes[0].len());
        for (j, a) in axes.iter().enumerate() {
            if a.sample_type() != ty {
                return Err(Error::InvalidArgument(format!(
                    "joint histogram: axis {j} holds {} but axis 0 holds {ty}; every axis must have one type",
                    a.sample_type()
                )));
            }
            if a.len() != n {
                return Err(Error::InvalidArgument(format!(
                    "joint histogram: axis {j} has {} samples but axis 0 has {n}; every axis must have one length",
                    a.len()
                )));
            }
        }
        Ok(JointSamples {
            kind: Kind::Separate(axes),
        })
    }

    fn matrix(data: Samples<'a>, dims: usize, column_major: bool) -> Result<Self> {
        check_dims(dims)?;
        if data.len() % dims != 0 {
            return Err(Error::InvalidArgument(format!(
                "joint histogram: {} values do not make whole samples of {dims} coordinates",
                data.len()
            )));
        }
        Ok(JointSamples {
            kind: Kind::Matrix {
                data,
                dims,
                column_major,
            },
        })
    }

    /// Number of axes, D.
    pub fn dims(&self) -> usize {
        match &self.kind {
            Kind::Matrix { dims, .. } => *dims,
            Kind::Separate(a) => a.len(),
        }
    }

    /// Number of samples, N.
    pub fn len(&self) -> usize {
        match &self.kind {
            Kind::Matrix { data, dims, .. } => data.len() / dims,
            Kind::Separate(a) => a[0].len(),
        }
    }

    /// No samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples' type.
    pub fn sample_type(&self) -> SampleType {
        match &self.kind {
            Kind::Matrix { data, .. } => data.sample_type(),
            Kind::Separate(a) => a[0].sample_type(),
        }
    }

    /// Bytes of sample data.
    pub fn byte_len(&self) -> usize {
        self.len() * self.dims() * self.sample_type().size()
    }

    /// The typed views of every axis, when the element type is `T`.
    pub(crate) fn views<T: Pick>(&self) -> Option<Vec<AxisView<'a, T>>> {
        let n = self.len();
        match &self.kind {
            Kind::Matrix {
                data,
                dims,
                column_major,
            } => {
                let data = T::pick(*data)?;
                Some(
                    (0..*dims)
                        .map(|j| match column_major {
                            true => AxisView::new(data, j * n, 1, n),
                            false => AxisView::new(data, j, *dims, n),
                        })
                        .collect(),
                )
            }
            Kind::Separate(axes) => axes
                .iter()
                .map(|a| T::pick(*a).map(|s| AxisView::new(s, 0, 1, n)))
                .collect(),
        }
    }
}

fn check_dims(dims: usize) -> Result<()> {
    if dims == 0 || dims > MAX_DIMS {
        return Err(Error::InvalidArgument(format!(
            "a joint histogram takes 1 to {MAX_DIMS} axes (got {dims})"
        )));
    }
    Ok(())
}

/// One axis's coordinates: `len` values from `start`, `stride` apart.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AxisView<'a, T> {
    data: &'a [T],
    start: usize,
    stride: usize,
    len: usize,
}

impl<'a, T: Sample> AxisView<'a, T> {
    fn new(data: &'a [T], start: usize, stride: usize, len: usize) -> Self {
        AxisView {
            data,
            start,
            stride,
            len,
        }
    }

    /// The slice this axis reads, its first index and its stride.
    pub fn parts(&self) -> (&'a [T], usize, usize) {
        (self.data, self.start, self.stride)
    }

    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        self.data[self.start + i * self.stride]
    }

    /// numpy's `a.min()`, `a.max()` in the samples' own type (NaN if any is NaN); `None` when empty.
    pub fn min_max(&self) -> Option<(T, T)> {
        use rayon::prelude::*;
        if self.len == 0 {
            return None;
        }
        let first = self.get(0);
        let fold = |(lo, hi): (T, T), x: T| {
            if lo.is_nan() {
                (lo, hi)
            } else if x.is_nan() {
                (x, x)
            } else {
                (if x < lo { x } else { lo }, if x > hi { x } else { hi })
            }
        };
        let merge = |a: (T, T), b: (T, T)| fold(fold(a, b.0), b.1);
        let chunks = self.len.div_ceil(1 << 16);
        Some(
            (0..chunks)
                .into_par_iter()
                .map(|c| {
                    let end = ((c + 1) << 16).min(self.len);
                    ((c << 16)..end).fold((first, first), |acc, i| fold(acc, self.get(i)))
                })
                .reduce(|| (first, first), merge),
        )
    }
}

/// The typed slice inside a [`Samples`] value, when it holds this type.
pub(crate) trait Pick: Sample {
    fn pick(s: Samples<'_>) -> Option<&[Self]>;
}

macro_rules! impl_pick {
    ($t:ty, $tag:ident) => {
        impl Pick for $t {
            fn pick(s: Samples<'_>) -> Option<&[$t]> {
                match s {
                    Samples::$tag(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
impl_pick!(u8, U8);
impl_pick!(u16, U16);
impl_pick!(u32, U32);
impl_pick!(u64, U64);
impl_pick!(i8, I8);
impl_pick!(i16, I16);
impl_pick!(i32, I32);
impl_pick!(i64, I64);
impl_pick!(f32, F32);
impl_pick!(f64, F64);

//! The samples of a joint histogram from the command line's inputs: the columns of one 2-D (or
//! deeper) `.npy` array, chosen columns of one text file, or one file per axis. A `.npy` array is
//! viewed as (N, D) with D its last dimension (an (H, W, 3) image is H * W pixels of 3 channels)
//! and read in place in either memory order; everything else becomes one array per axis.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use smemkit::{
    histogramdd::JointSamples,
    sample::{SampleType, Samples},
};

use crate::input::data::OwnedSamples;
use crate::input::text::{self, Column};
use crate::input::{npy, read_file, stream, FileKind, SampleData, Shape};

/// Samples as read, held for the histogram.
pub enum JointData {
    /// One array of N x D values: `fortran` says that each axis is contiguous.
    Matrix {
        data: SampleData,
        dims: usize,
        fortran: bool,
    },
    /// One array per axis.
    Separate(Vec<SampleData>),
}

/// What was loaded, with what the summary and the weights need.
pub struct Loaded {
    pub data: JointData,
    /// The logical shape of the samples (without the axis dimension), which weights must have.
    pub shape: Shape,
    /// A name per axis (a header name, a column index, a file name).
    pub names: Vec<String>,
    /// Where the samples came from, for the summary.
    pub what: String,
    pub notes: Vec<String>,
}

impl Loaded {
    pub fn samples(&self) -> Result<JointSamples<'_>> {
        Ok(match &self.data {
            JointData::Matrix {
                data,
                dims,
                fortran: false,
            } => JointSamples::rows(data.samples(), *dims)?,
            JointData::Matrix {
                data,
                dims,
                fortran: true,
            } => JointSamples::columns(data.samples(), *dims)?,
            JointData::Separate(axes) => {
                JointSamples::separate(axes.iter().map(SampleData::samples).collect())?
            }
        })
    }

    pub fn sample_type(&self) -> SampleType {
        match &self.data {
            JointData::Matrix { data, .. } => data.samples().sample_type(),
            JointData::Separate(a) => a[0].samples().sample_type(),
        }
    }
}

/// Reads the inputs. `columns` are the `--columns` entries; `dims` the number of axes the command
/// needs (`hist2d`: 2), if fixed.
pub fn load(
    inputs: &[PathBuf],
    columns: Option<&[String]>,
    dtype: Option<SampleType>,
    dims: Option<usize>,
) -> Result<Loaded> {
    let loaded = match inputs {
        [] => bail!("give an input: a 2-D .npy, a text file with --columns, or one file per axis"),
        [one] => one_file(one, columns, dtype, dims)?,
        several => {
            if let Some(c) = columns {
                bail!(
                    "--columns {} applies to one input file; with {} files each file is one axis",
                    c.join(","),
                    several.len()
                );
            }
            per_axis(several, dtype)?
        }
    };
    let d = loaded.names.len();
    if let Some(want) = dims {
        if d != want {
            bail!("this command takes {want} axes, but the input gives {d}");
        }
    }
    Ok(loaded)
}

fn one_file(
    path: &Path,
    columns: Option<&[String]>,
    dtype: Option<SampleType>,
    dims: Option<usize>,
) -> Result<Loaded> {
    let name = stream::name(path);
    let kind = if stream::is_stream(path) {
        bail!(
            "{name}: a joint histogram reads its input more than once (its header, each column); \
             save it to a file first"
        );
    } else {
        FileKind::of(path, dtype, "--dtype")?
    };
    kind.check_flags(path, dtype, "--dtype", None)?;
    match kind {
        FileKind::Npy => npy_matrix(path, columns),
        FileKind::Text => {
            let columns: Vec<String> = match (columns, dims) {
                (Some(c), _) => c.to_vec(),
                (None, Some(d)) => (0..d).map(|i| i.to_string()).collect(),
                (None, None) => bail!(
                    "{name} is a text file: choose its columns with --columns (indices from 0 or header names, comma-separated)"
                ),
            };
            text_columns(path, &columns, dtype)
        }
        FileKind::Raw => bail!(
            "{name} is raw binary, which has no columns: give one raw file per axis, or a 2-D .npy"
        ),
    }
}

/// The (N, D) view of a `.npy` array whose last dimension is D; `--columns` copies chosen ones.
fn npy_matrix(path: &Path, columns: Option<&[String]>) -> Result<Loaded> {
    let name = stream::name(path);
    let read = npy::read(path)?;
    let dims = &read.shape.dims;
    if dims.len() < 2 {
        bail!(
            "{name} has shape {}: a joint histogram needs an (N, D) array (D axes, its last \
             dimension), or one file per axis",
            read.shape.describe()
        );
    }
    let d = dims[dims.len() - 1];
    let lead = dims[..dims.len() - 1].to_vec();
    let fortran = read.shape.fortran;
    if fortran && lead.iter().filter(|&&n| n > 1).count() > 1 {
        bail!(
            "{name} is a Fortran-order array of shape {}: numpy's histogramdd takes (N, D); save it \
             in C order or reshaped to (N, {d})",
            read.shape.describe()
        );
    }
    if d == 0 {
        bail!("{name} has shape {}: no axes", read.shape.describe());
    }
    let n: usize = lead.iter().product();
    let shape = Shape {
        dims: lead,
        fortran: false,
    };
    let what = format!("{name} ({})", read.values.how());
    let Some(columns) = columns else {
        return Ok(Loaded {
            data: JointData::Matrix {
                data: read.values,
                dims: d,
                fortran,
            },
            shape,
            names: (0..d).map(|j| format!("column {j}")).collect(),
            what,
            notes: Vec::new(),
        });
    };
    let mut axes = Vec::new();
    let mut names = Vec::new();
    for c in columns {
        let j: usize = c.parse().with_context(|| {
            format!(
                "--columns {c}: a .npy array's columns are chosen by index (0 to {})",
                d - 1
            )
        })?;
        if j >= d {
            bail!("--columns {j}: {name} has {d} columns (0 to {})", d - 1);
        }
        let (start, stride) = if fortran { (j * n, 1) } else { (j, d) };
        axes.push(SampleData::Owned(gather(
            read.values.samples(),
            start,
            stride,
            n,
        )));
        names.push(format!("column {j}"));
    }
    Ok(Loaded {
        data: JointData::Separate(axes),
        shape,
        names,
        what,
        notes: Vec::new(),
    })
}

/// `n` values from `start`, `stride` apart, copied.
fn gather(s: Samples<'_>, start: usize, stride: usize, n: usize) -> OwnedSamples {
    macro_rules! g {
        ($v:expr, $tag:ident) => {
            OwnedSamples::$tag((0..n).map(|i| $v[start + i * stride]).collect())
        };
    }
    match s {
        Samples::U8(v) => g!(v, U8),
        Samples::U16(v) => g!(v, U16),
        Samples::U32(v) => g!(v, U32),
        Samples::U64(v) => g!(v, U64),
        Samples::I8(v) => g!(v, I8),
        Samples::I16(v) => g!(v, I16),
        Samples::I32(v) => g!(v, I32),
        Samples::I64(v) => g!(v, I64),
        Samples::F32(v) => g!(v, F32),
        Samples::F64(v) => g!(v, F64),
        Samples::F16(v) => g!(v, F16),
        Samples::BF16(v) => g!(v, BF16),
    }
}

/// Chosen columns of one text file (read once per column).
fn text_columns(path: &Path, columns: &[String], dtype: Option<SampleType>) -> Result<Loaded> {
    let name = stream::name(path);
    let mut axes = Vec::new();
    let mut notes = Vec::new();
    let mut len = None;
    for c in columns {
        let column = Column::parse(Some(c));
        let read = text::read(path, &column, dtype).with_context(|| format!("--columns {c}"))?;
        if notes.is_empty() {
            notes.extend(read.note(path));
        }
        let n = read.values.samples().len();
        if *len.get_or_insert(n) != n {
            bail!(
                "{name}: column {c} has {n} values, the first column {}",
                len.unwrap_or(0)
            );
        }
        axes.push(SampleData::Owned(read.values));
    }
    let n = len.unwrap_or(0);
    if n == 0 {
        bail!("{name} holds no samples (empty input)");
    }
    Ok(Loaded {
        data: JointData::Separate(axes),
        shape: Shape::flat(n),
        names: columns
            .iter()
            .map(|c| match c.parse::<usize>() {
                Ok(j) => format!("column {j}"),
                Err(_) => c.clone(),
            })
            .collect(),
        what: format!("{name} columns {}", columns.join(", ")),
        notes,
    })
}

/// One file per axis, each read flat as `hist` reads its input.
fn per_axis(paths: &[PathBuf], dtype: Option<SampleType>) -> Result<Loaded> {
    if paths.iter().filter(|p| stream::is_stdin(p)).count() > 1 {
        bail!("standard input (`-`, /dev/stdin) can be read once: give it for one axis only");
    }
    let mut axes: Vec<SampleData> = Vec::new();
    let mut notes = Vec::new();
    for (j, path) in paths.iter().enumerate() {
        let read = read_file(path, dtype, None).with_context(|| format!("axis {j}"))?;
        notes.extend(read.note(path));
        if read.shape.dims.iter().filter(|&&d| d > 1).count() > 1 {
            bail!(
                "{} has shape {}: with one file per axis each file is one axis of samples (1-D)",
                stream::name(path),
                read.shape.describe()
            );
        }
        let values = read.values;
        if let Some(first) = axes.first() {
            let (a, b) = (first.samples(), values.samples());
            if a.sample_type() != b.sample_type() {
                bail!(
                    "{} holds {} but {} holds {}: every axis must have one type (convert them to a common one, as numpy would)",
                    stream::name(path),
                    b.sample_type(),
                    stream::name(&paths[0]),
                    a.sample_type()
                );
            }
            if a.len() != b.len() {
                bail!(
                    "{} has {} samples but {} has {}: every axis needs one per sample",
                    stream::name(path),
                    b.len(),
                    stream::name(&paths[0]),
                    a.len()
                );
            }
        }
        axes.push(values);
    }
    let n = axes[0].samples().len();
    let names: Vec<String> = paths.iter().map(|p| stream::name(p)).collect();
    Ok(Loaded {
        data: JointData::Separate(axes),
        shape: Shape::flat(n),
        what: names.join(", "),
        names,
        notes,
    })
}

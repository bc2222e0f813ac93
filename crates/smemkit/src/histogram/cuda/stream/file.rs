//! Samples in a file, read by position into the staging buffers (never mapped).

use super::*;

/// A file of native-endian samples, read by positioned reads from several threads at once (a file
/// in the page cache streams at memory speed; any file streams without being mapped or loaded).
pub struct FileInput {
    pub(super) file: File,
    pub(super) path: PathBuf,
    pub(super) offset: u64,
    pub(super) len: usize,
    pub(super) sample_type: SampleType,
}

impl FileInput {
    /// The `len` samples of `sample_type` at byte `offset` of `path` (`None`: to the end of the
    /// file, which must then hold a whole number of samples).
    pub fn open(
        path: &Path,
        offset: u64,
        sample_type: SampleType,
        len: Option<usize>,
    ) -> Result<FileInput> {
        let err = |message: String| Error::Read {
            path: path.display().to_string(),
            message,
        };
        let file = File::open(path).map_err(|e| err(e.to_string()))?;
        let size = file.metadata().map_err(|e| err(e.to_string()))?.len();
        let avail = size.checked_sub(offset).ok_or_else(|| {
            err(format!(
                "the data offset {offset} is beyond the file's {size} bytes"
            ))
        })?;
        let elem = sample_type.size() as u64;
        let len = match len {
            Some(l) => {
                if (l as u64).saturating_mul(elem) > avail {
                    return Err(err(format!(
                        "{l} {sample_type} samples at byte {offset} need {} bytes, the file holds {avail} there",
                        l as u64 * elem
                    )));
                }
                l
            }
            None => {
                if avail % elem != 0 {
                    return Err(err(format!(
                        "{avail} bytes after byte {offset} are not a whole number of {sample_type} samples"
                    )));
                }
                usize::try_from(avail / elem)
                    .map_err(|_| err("too many samples to address".into()))?
            }
        };
        Ok(FileInput {
            file,
            path: path.to_path_buf(),
            offset,
            len,
            sample_type,
        })
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.len
    }
    /// No samples.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The samples' type.
    pub fn sample_type(&self) -> SampleType {
        self.sample_type
    }
    /// The file as it was opened.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Byte of the file where the samples begin.
    pub fn offset(&self) -> u64 {
        self.offset
    }
    /// Bytes of samples.
    pub fn byte_len(&self) -> usize {
        self.len * self.sample_type.size()
    }

    /// The bins of `spec` for this file's samples, as [`Binning::resolve`] finds them for the same
    /// samples in memory. Only uniform bins without a range look at the data (numpy's rule takes
    /// the data's minimum and maximum): they cost one pass of positioned reads over the file, one
    /// piece of [`EXTREMES_PIECE`] bytes at a time, so any file fits, whatever the host memory.
    pub fn binning(&self, spec: &BinSpec) -> Result<Binning> {
        if !matches!(spec, BinSpec::Uniform { range: None, .. }) {
            // The other specs read only the sample type.
            return Binning::resolve(spec, empty_samples(self.sample_type));
        }
        match self.sample_type {
            SampleType::U8 => self.binning_by_extremes::<u8>(spec),
            SampleType::U16 => self.binning_by_extremes::<u16>(spec),
            SampleType::U32 => self.binning_by_extremes::<u32>(spec),
            SampleType::U64 => self.binning_by_extremes::<u64>(spec),
            SampleType::I8 => self.binning_by_extremes::<i8>(spec),
            SampleType::I16 => self.binning_by_extremes::<i16>(spec),
            SampleType::I32 => self.binning_by_extremes::<i32>(spec),
            SampleType::I64 => self.binning_by_extremes::<i64>(spec),
            SampleType::F32 => self.binning_by_extremes::<f32>(spec),
            SampleType::F64 => self.binning_by_extremes::<f64>(spec),
            SampleType::F16 => self.binning_by_extremes::<half::f16>(spec),
            SampleType::BF16 => self.binning_by_extremes::<half::bf16>(spec),
        }
    }

    /// [`Binning::resolve`] over the two samples that stand for the whole file: its smallest and
    /// largest (two NaNs when it holds a NaN), which give the same minimum, maximum and exact
    /// integer span as all of them; none for an empty file.
    fn binning_by_extremes<T>(&self, spec: &BinSpec) -> Result<Binning>
    where
        T: Sample + Default,
        for<'b> &'b [T]: Into<Samples<'b>>,
    {
        let per_piece = (EXTREMES_PIECE / std::mem::size_of::<T>()).max(1);
        let mut buf: Vec<T> = vec![T::default(); per_piece.min(self.len)];
        let mut acc: Option<(T, T)> = None;
        let mut at = 0usize;
        while at < self.len {
            let k = (self.len - at).min(per_piece);
            let piece = &mut buf[..k];
            // SAFETY: `piece` is `k` initialised numbers, viewed over exactly their own bytes; `T`
            // is one of the ten primitive number types (the only ones `binning` passes), for
            // which every bit pattern the file may hold is a valid value.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    piece.as_mut_ptr().cast::<u8>(),
                    std::mem::size_of_val(piece),
                )
            };
            self.read_into((at * std::mem::size_of::<T>()) as u64, bytes)?;
            let here = piece
                .par_chunks(1 << 16)
                .map(|c| c.iter().fold(None, |a, &x| merge(a, (x, x))))
                .reduce(|| None, |a, b| b.map_or(a, |b| merge(a, b)));
            if let Some(h) = here {
                acc = merge(acc, h);
            }
            if matches!(acc, Some((lo, _)) if lo.is_nan()) {
                // NaN makes the data's range NaN (an error below), whatever else the file holds.
                break;
            }
            at += k;
        }
        let two: Vec<T> = acc.map(|(lo, hi)| vec![lo, hi]).unwrap_or_default();
        Binning::resolve(spec, two.as_slice().into())
    }

    /// Reads bytes `at..at + dst.len()` of the samples into `dst` with several threads.
    pub(super) fn read_into(&self, at: u64, dst: &mut [u8]) -> Result<()> {
        dst.par_chunks_mut(FILL_PIECE)
            .enumerate()
            .try_for_each(|(i, piece)| self.read_piece(at + (i * FILL_PIECE) as u64, piece))
    }

    #[cfg(unix)]
    fn read_piece(&self, at: u64, mut dst: &mut [u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let mut pos = self.offset + at;
        while !dst.is_empty() {
            match self.file.read_at(dst, pos) {
                Ok(0) => {
                    return Err(Error::Read {
                        path: self.path.display().to_string(),
                        message: format!(
                            "the file ended at byte {pos}, before the {} bytes it held when streaming began (did it shrink?)",
                            self.offset + (self.len * self.sample_type.size()) as u64
                        ),
                    })
                }
                Ok(k) => {
                    dst = &mut dst[k..];
                    pos += k as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::Read {
                        path: self.path.display().to_string(),
                        message: format!("at byte {pos}: {e}"),
                    })
                }
            }
        }
        Ok(())
    }

    #[cfg(not(unix))]
    fn read_piece(&self, _at: u64, _dst: &mut [u8]) -> Result<()> {
        Err(Error::NotImplemented(
            "streaming from a file needs positioned reads (unix only so far)".into(),
        ))
    }
}

/// Smallest and largest of two pairs; a NaN on either side makes both NaN.
pub(super) fn merge<T: Sample>(a: Option<(T, T)>, (lo, hi): (T, T)) -> Option<(T, T)> {
    Some(match a {
        None => (lo, hi),
        Some((a, _)) if a.is_nan() => (a, a),
        Some(_) if lo.is_nan() => (lo, lo),
        Some((alo, ahi)) => (
            if lo < alo { lo } else { alo },
            if hi > ahi { hi } else { ahi },
        ),
    })
}

/// No samples of `ty`.
pub(super) fn empty_samples(ty: SampleType) -> Samples<'static> {
    match ty {
        SampleType::U8 => Samples::U8(&[]),
        SampleType::U16 => Samples::U16(&[]),
        SampleType::U32 => Samples::U32(&[]),
        SampleType::U64 => Samples::U64(&[]),
        SampleType::I8 => Samples::I8(&[]),
        SampleType::I16 => Samples::I16(&[]),
        SampleType::I32 => Samples::I32(&[]),
        SampleType::I64 => Samples::I64(&[]),
        SampleType::F32 => Samples::F32(&[]),
        SampleType::F64 => Samples::F64(&[]),
        SampleType::F16 => Samples::F16(&[]),
        SampleType::BF16 => Samples::BF16(&[]),
    }
}

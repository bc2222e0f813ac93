//! Each GPU's accumulator: the counts or sums and the tallies a shard's runs write, cleared by
//! the first of them.

use super::*;

/// One GPU's counters: unweighted, `nbins` u64 counts followed by the 3 tallies in one buffer (one
/// all-reduce); weighted, `nbins` f64 sums and the tallies apart.
pub(super) struct Accum {
    pub(super) counts: CudaSlice<u64>,
    pub(super) sums: CudaSlice<f64>,
}

impl Accum {
    pub(super) fn new(gpu: &Gpu, nbins: usize, weighted: bool) -> Result<Accum> {
        gpu.bind()?;
        let s = &gpu.stream;
        Ok(Accum {
            counts: s
                .alloc_zeros::<u64>(if weighted { 3 } else { nbins + 3 })
                .map_err(cuda_err("allocating counters"))?,
            sums: s
                .alloc_zeros::<f64>(if weighted { nbins } else { 0 })
                .map_err(cuda_err("allocating sums"))?,
        })
    }

    fn weighted(&self) -> bool {
        !self.sums.is_empty()
    }

    /// (counters, tallies) device addresses.
    pub(super) fn ptrs(&self, gpu: &Gpu) -> (u64, u64) {
        let c = self.counts.device_ptr(&gpu.stream).0;
        if self.weighted() {
            (self.sums.device_ptr(&gpu.stream).0, c)
        } else {
            (c, c + 8 * (self.counts.len() as u64 - 3))
        }
    }

    #[cfg(feature = "nccl")]
    pub(super) fn sum_buffers(&self, gpu: &Gpu) -> Vec<SumBuffer> {
        let c = SumBuffer {
            ptr: self.counts.device_ptr(&gpu.stream).0,
            len: self.counts.len(),
            elem: Elem::U64,
        };
        if self.weighted() {
            vec![
                SumBuffer {
                    ptr: self.sums.device_ptr(&gpu.stream).0,
                    len: self.sums.len(),
                    elem: Elem::F64,
                },
                c,
            ]
        } else {
            vec![c]
        }
    }

    pub(super) fn read(&self, gpu: &Gpu, nbins: usize) -> Result<(Counts, Tallies)> {
        gpu.bind()?;
        let s = &gpu.stream;
        let c = s.clone_dtoh(&self.counts).map_err(cuda_err(
            "reading the counters back (a kernel or the reduction may have failed)",
        ))?;
        let t = &c[c.len() - 3..];
        let tallies = Tallies {
            below: t[0],
            above: t[1],
            nan: t[2],
        };
        let counts = if self.weighted() {
            Counts::Weighted(
                s.clone_dtoh(&self.sums)
                    .map_err(cuda_err("reading the sums back"))?,
            )
        } else {
            Counts::Unweighted(c[..nbins].to_vec())
        };
        Ok((counts, tallies))
    }
}

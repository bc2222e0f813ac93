//! The device passes of numpy's bin estimators (`kernels/estimate.cu`): each function enqueues
//! kernels on one stream and reads back the few numbers it computes. The samples never leave the
//! device; the reads back are the synchronisations the estimators cannot avoid (the number of bins
//! decides the shape of the result). The radix select of the percentiles is in
//! [`super::estimate_select`].

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr};

use crate::error::{Error, Result};
use crate::gpu::compile::ESTIMATE;
use crate::gpu::device::{cuda_err, Gpu};
use crate::gpu::launch::{self, LaunchShape};
use crate::histogram::bins::stats::CAST_BUFFER;
use crate::sample::SampleType;

/// How `estimate.cu` treats a sample type (its `SAMPLE_KIND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    F32,
    /// float16, read as its bits (`SAMPLE_KIND` 4): sums in float32, numpy's float16 steps.
    F16,
    /// bfloat16, read as its bits (`SAMPLE_KIND` 5): ml_dtypes' bfloat16 steps, its sums one
    /// value after another ([`Passes::chain`]).
    BF16,
    F64,
    Signed,
    Unsigned,
}

/// The compile defines of `estimate.cu` for a sample type, and how it treats it.
pub(crate) fn defines(t: SampleType) -> Result<(Vec<(&'static str, String)>, Kind)> {
    let (c_type, kind) = match t {
        SampleType::U8 => ("unsigned char", Kind::Unsigned),
        SampleType::U16 => ("unsigned short", Kind::Unsigned),
        SampleType::U32 => ("unsigned int", Kind::Unsigned),
        SampleType::U64 => ("unsigned long long", Kind::Unsigned),
        SampleType::I8 => ("signed char", Kind::Signed),
        SampleType::I16 => ("short", Kind::Signed),
        SampleType::I32 => ("int", Kind::Signed),
        SampleType::I64 => ("long long", Kind::Signed),
        SampleType::F32 => ("float", Kind::F32),
        SampleType::F64 => ("double", Kind::F64),
        SampleType::F16 => ("unsigned short", Kind::F16),
        SampleType::BF16 => ("unsigned short", Kind::BF16),
    };
    let code = match kind {
        Kind::F32 => 0,
        Kind::F64 => 1,
        Kind::Signed => 2,
        Kind::Unsigned => 3,
        Kind::F16 => 4,
        Kind::BF16 => 5,
    };
    Ok((
        vec![
            ("SAMPLE_T", c_type.to_string()),
            ("SAMPLE_KIND", code.to_string()),
        ],
        kind,
    ))
}

/// The kernels' entry points of every sample type.
pub(crate) const ENTRIES: [&str; 15] = [
    "est_extremes",
    "est_sum_values",
    "est_sum_squares",
    "est_sum_cubes",
    "est_combine",
    "est_sequential",
    "est_tile_counts",
    "est_scan",
    "est_compact",
    "est_digits",
    "est_select",
    "est_gather",
    "est_digits_mapped",
    "est_sample",
    "est_window",
];

/// The entry points of bfloat16 alone (`est_chain.cuh`).
pub(crate) const CHAIN_ENTRIES: [&str; 2] = ["est_chain_maxima", "est_chain_walk"];

/// Every entry point compiled for `kind`.
pub(crate) fn entries(kind: Kind) -> Vec<&'static str> {
    let mut e = ENTRIES.to_vec();
    if kind == Kind::BF16 {
        e.extend(CHAIN_ENTRIES);
    }
    e
}

/// Values of a chunk and chunks of a super-chunk of the bfloat16 chain's maxima (`CHAIN_CHUNK`,
/// `CHAIN_SUPER` in est_chain.cuh).
const CHAIN_CHUNK: usize = 256;
const CHAIN_SUPER: usize = 32;
/// Blocks of est_chain_maxima an SM holds at once (256 threads each).
const CHAIN_BLOCKS_PER_SM: u32 = 8;

/// Blocks of the sum kernels that fit an SM (their `SUM_BLOCKS`, three for float32 and two for
/// the rest): six makes whole waves of either.
const SUM_BLOCKS_PER_SM: u32 = 6;

/// Blocks of est_tile_counts an SM holds at once (256 threads each; its grid is one wave).
const TILE_BLOCKS_PER_SM: u32 = 8;
/// Blocks of `est_digits` that fit an SM (32 KiB of shared memory and about 44 registers a
/// thread each: five).
pub(super) const DIGITS_BLOCKS_PER_SM: u32 = 5;
/// Blocks of `est_gather` that fit an SM (about 40 registers a thread: six).
pub(super) const GATHER_BLOCKS_PER_SM: u32 = 6;
/// Samples each thread of `est_digits` and `est_gather` loads per trip (`AHEAD`).
pub(super) const AHEAD: usize = 8;

/// Samples per tile of the packing kernels (`TILE` in estimate.cu).
const TILE: usize = 256 * 16;
/// Values per radix-select digit histogram (`DIGITS`), and the ranks selected at once (`RANKS`).
pub(super) const DIGIT_BITS: usize = 11;
pub(super) const DIGITS: usize = 1 << DIGIT_BITS;
pub(super) const RANKS: usize = 4;

/// The depth of numpy's tree at which eight lanes sum each node (`sum_nodes` in estimate.cu):
/// the shallowest whose nodes average at most 224 values. A split moves each half at most 7.5
/// values from half its parent, so a node at depth d is within 15 values of m / 2^d: the nodes
/// there hold at most 239 values (one leaf, or two leaves of at most 127 after one split), and
/// every node above holds more than 2 * 112 - 15 > 128 values (so it is split, as the kernel's
/// perfect tree above the nodes assumes).
pub(crate) fn node_depth(m: usize) -> u32 {
    let mut d = 0;
    while m > (224usize << d) {
        d += 1;
    }
    d
}

/// How many levels of the tree above the nodes a warp adds (`g` in estimate.cu): its four
/// nodes, when a problem has four or more.
pub(crate) fn warp_levels(depth: u32) -> u32 {
    depth.min(2)
}

/// The samples inside a range in each tile of `TILE` samples, on the device (est_tile_counts),
/// for [`Passes::pack`].
pub(crate) struct Tiles {
    counts: CudaSlice<u8>,
}

/// The compiled kernels for one sample type, with the stream they run on.
pub(crate) struct Passes {
    /// The device (its kept scratch, [`crate::gpu::scratch`]).
    pub gpu: Arc<Gpu>,
    pub stream: Arc<CudaStream>,
    pub kind: Kind,
    pub size: usize,
    /// The compiled entry points, with their names.
    funcs: Vec<(&'static str, CudaFunction)>,
    /// Blocks of the grid-stride kernels.
    grid: u32,
    /// Multiprocessors of the device.
    sm_count: u32,
}

/// A kernel argument, as `cuLaunchKernelEx` takes it.
pub(super) fn arg<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

impl Passes {
    pub fn new(gpu: &Arc<Gpu>, stream: Arc<CudaStream>, t: SampleType) -> Result<Passes> {
        let (defines, kind) = defines(t)?;
        gpu.bind()?;
        let funcs = entries(kind)
            .into_iter()
            .map(|e| Ok((e, gpu.function(&ESTIMATE, &defines, e)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Passes {
            gpu: gpu.clone(),
            stream,
            kind,
            size: t.size(),
            funcs,
            grid: gpu.limits.sm_count.max(1) * 8,
            sm_count: gpu.limits.sm_count.max(1),
        })
    }

    fn func(&self, name: &str) -> &CudaFunction {
        let (_, f) = self
            .funcs
            .iter()
            .find(|(e, _)| *e == name)
            .expect("an entry of this sample type");
        f
    }

    /// # Safety
    /// `args` must match the kernel's parameters, pointing at memory alive until the stream runs.
    pub(super) unsafe fn launch(
        &self,
        name: &str,
        grid: u32,
        block: u32,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let shape = LaunchShape {
            grid: grid.max(1),
            block,
            shared_bytes: 0,
            cluster: 1,
        };
        // SAFETY: forwarded from the caller.
        unsafe { launch::launch(self.func(name), &self.stream, &shape, args) }
    }

    pub(super) fn grid_for(&self, n: usize, block: usize) -> u32 {
        (n.div_ceil(block) as u64).min(self.grid as u64) as u32
    }

    /// Blocks for `threads` threads of a grid-stride kernel of which `per_sm` blocks fit an SM
    /// at once: at most one whole wave, so that the blocks (which stride over equal shares)
    /// finish together rather than leaving a last partial wave to run alone.
    pub(super) fn wave_for(&self, threads: usize, block: usize, per_sm: u32) -> u32 {
        (threads.div_ceil(block) as u64).min((self.sm_count * per_sm) as u64) as u32
    }

    pub(super) fn alloc(&self, bytes: usize) -> Result<CudaSlice<u8>> {
        self.stream
            .alloc_zeros::<u8>(bytes.max(8))
            .map_err(cuda_err("allocating the estimator's scratch"))
    }

    /// [`Passes::alloc`] without the zeroing (a memset of the whole buffer), for a buffer the
    /// kernels write in full before anything reads it.
    fn alloc_unset(&self, bytes: usize) -> Result<CudaSlice<u8>> {
        // SAFETY: plain bytes, every one of which the caller's kernels (est_compact, or
        // est_chain_maxima) write before another kernel reads them.
        unsafe { self.stream.alloc::<u8>(bytes.max(8)) }
            .map_err(cuda_err("allocating the estimator's scratch"))
    }

    pub(super) fn ptr(&self, s: &CudaSlice<u8>) -> u64 {
        s.device_ptr(&self.stream).0
    }

    pub(super) fn read_u64(&self, s: &CudaSlice<u8>, count: usize) -> Result<Vec<u64>> {
        let bytes = self.stream.clone_dtoh(s).map_err(cuda_err(
            "reading the estimator's statistics back (a kernel may have failed)",
        ))?;
        Ok(bytes[..count * 8]
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
            .collect())
    }

    /// A fresh `[kept count, smallest key, largest key, NaN count, sum]` on the device, as the
    /// kernels that find extremes expect it (the sum's word for the fused sum).
    pub(super) fn extremes_out(&self) -> Result<CudaSlice<u8>> {
        let init: Vec<u8> = [0u64, u64::MAX, 0, 0, 0]
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .collect();
        self.stream
            .clone_htod(&init)
            .map_err(cuda_err("allocating the estimator's scratch"))
    }

    /// `[kept count, smallest key, largest key, NaN count]` of the `n` samples at `input`
    /// (inside `[lo, hi]` when `range` is given).
    ///
    /// # Safety
    /// `input` must hold `n` samples of the type on the stream's device until the stream runs.
    pub unsafe fn extremes(
        &self,
        input: u64,
        n: usize,
        range: Option<(f64, f64)>,
    ) -> Result<[u64; 4]> {
        let out = self.extremes_out()?;
        let (mut input, mut n64) = (input, n as u64);
        let mut has_range = range.is_some() as i32;
        let (mut lo, mut hi) = range.unwrap_or((0.0, 0.0));
        let mut out_ptr = self.ptr(&out);
        let mut args = [
            arg(&mut input),
            arg(&mut n64),
            arg(&mut has_range),
            arg(&mut lo),
            arg(&mut hi),
            arg(&mut out_ptr),
        ];
        if n > 0 {
            // SAFETY: est_extremes(in, n, has_range, lo, hi, out); `out` lives to the read below.
            unsafe { self.launch("est_extremes", self.grid_for(n, 256), 256, &mut args)? };
        }
        let w = self.read_u64(&out, 4)?;
        Ok([w[0], w[1], w[2], w[3]])
    }

    /// [`Passes::extremes`] of all `n` samples (no range) and, from the same pass, numpy's sum
    /// of them (`np.sum` as `np.mean` takes it: pairwise; integers in float64 blocks, see
    /// [`Passes::buffered`]). One read back.
    ///
    /// # Safety
    /// As [`Passes::extremes`].
    pub unsafe fn extremes_and_sum(&self, input: u64, n: usize) -> Result<([u64; 4], f64)> {
        let out = self.extremes_out()?;
        let ext = self.ptr(&out);
        let sum_at = ext + 32;
        if n > 0 {
            // SAFETY: forwarded; `out` holds the four words and the sum's.
            unsafe {
                if matches!(self.kind, Kind::Signed | Kind::Unsigned) {
                    self.buffered_into(input, n, (0, 0.0, 0.0), ext, sum_at)?;
                } else {
                    self.sum_into(input, n, 1, (0, 0.0, 0.0), sum_at, ext)?;
                }
            }
        }
        let w = self.read_u64(&out, 5)?;
        // The sum's word holds the accumulator's bytes from its start (float32: the first four).
        let bytes = w[4].to_ne_bytes();
        let sum = if self.acc_is_f32() {
            f32::from_ne_bytes(bytes[..4].try_into().expect("4 bytes")) as f64
        } else {
            f64::from_ne_bytes(bytes)
        };
        Ok(([w[0], w[1], w[2], w[3]], sum))
    }

    /// Enqueues est_tile_counts: the samples of `[lo, hi]` in each tile of the `n` at `input`,
    /// into a new buffer of one word per tile (and, with `ext` non-zero, their extremes into the
    /// four words there).
    ///
    /// # Safety
    /// As [`Passes::extremes`]; `ext` zero or four words.
    unsafe fn tile_counts(
        &self,
        input: u64,
        n: usize,
        (lo, hi): (f64, f64),
        ext: u64,
    ) -> Result<Tiles> {
        let tiles = n.div_ceil(TILE);
        let counts = self.alloc(tiles * 8)?;
        let (mut input, mut n64, mut lo, mut hi) = (input, n as u64, lo, hi);
        let (mut counts_ptr, mut ext) = (self.ptr(&counts), ext);
        // SAFETY: est_tile_counts(in, n, lo, hi, counts, ext) with `tiles` counts (its blocks
        // stride over the tiles).
        unsafe {
            self.launch(
                "est_tile_counts",
                self.wave_for(tiles * 256, 256, TILE_BLOCKS_PER_SM),
                256,
                &mut [
                    arg(&mut input),
                    arg(&mut n64),
                    arg(&mut lo),
                    arg(&mut hi),
                    arg(&mut counts_ptr),
                    arg(&mut ext),
                ],
            )?
        };
        Ok(Tiles { counts })
    }

    /// [`Passes::extremes`] of the samples of `range` and, from the same pass, the tile counts
    /// that [`Passes::pack`] needs to pack them (for the sums of a trimmed `scott` or `doane`).
    ///
    /// # Safety
    /// As [`Passes::extremes`].
    pub unsafe fn extremes_and_tiles(
        &self,
        input: u64,
        n: usize,
        range: (f64, f64),
    ) -> Result<([u64; 4], Tiles)> {
        let out = self.extremes_out()?;
        // SAFETY: forwarded; `out` holds the four words.
        let tiles = unsafe { self.tile_counts(input, n, range, self.ptr(&out))? };
        let w = self.read_u64(&out, 4)?;
        Ok(([w[0], w[1], w[2], w[3]], tiles))
    }

    /// The samples of `[lo, hi]` packed in order into a new buffer (`kept` of them), from the
    /// tile counts of [`Passes::extremes_and_tiles`] when given (else counted here).
    ///
    /// # Safety
    /// As [`Passes::extremes`]; `tiles` from the same samples and range.
    pub unsafe fn pack(
        &self,
        input: u64,
        n: usize,
        (lo, hi): (f64, f64),
        kept: usize,
        tiles: Option<Tiles>,
    ) -> Result<CudaSlice<u8>> {
        let count = n.div_ceil(TILE);
        let offsets = match tiles {
            Some(t) => t.counts,
            // SAFETY: forwarded.
            None => unsafe { self.tile_counts(input, n, (lo, hi), 0)?.counts },
        };
        let packed = self.alloc_unset(kept * self.size)?;
        let (mut input, mut n64, mut lo, mut hi) = (input, n as u64, lo, hi);
        let mut offsets_ptr = self.ptr(&offsets);
        let mut packed_ptr = self.ptr(&packed);
        let mut tiles64 = count as u64;
        // SAFETY: est_scan(counts, tiles).
        unsafe {
            self.launch(
                "est_scan",
                1,
                1024,
                &mut [arg(&mut offsets_ptr), arg(&mut tiles64)],
            )?
        };
        // SAFETY: est_compact(in, n, lo, hi, offsets, out): `packed` holds the `kept` samples.
        unsafe {
            self.launch(
                "est_compact",
                count as u32,
                256,
                &mut [
                    arg(&mut input),
                    arg(&mut n64),
                    arg(&mut lo),
                    arg(&mut hi),
                    arg(&mut offsets_ptr),
                    arg(&mut packed_ptr),
                ],
            )?
        };
        // The offsets may be freed once the stream has run the kernels (cudarc frees in order).
        drop(offsets);
        Ok(packed)
    }

    /// Whether the kernels sum in float32 (float32, float16 and bfloat16 data; the others in
    /// float64).
    fn acc_is_f32(&self) -> bool {
        matches!(self.kind, Kind::F32 | Kind::F16 | Kind::BF16)
    }

    /// Bytes of one accumulator (float32 data sums in float32, others in float64).
    fn acc_size(&self) -> usize {
        if self.acc_is_f32() {
            4
        } else {
            8
        }
    }

    /// Enqueues numpy's pairwise sum of `term` of the `m` values at `input` into the accumulator
    /// at `out` (`problems` arrays of `m` values one after the other: one sum each); with `ext`
    /// non-zero, the samples' extremes are added to the words there (see
    /// [`Passes::extremes_out`]; only without a range: every sample counts).
    ///
    /// # Safety
    /// `input` holds `problems * m` samples, `out` room for `problems` accumulators, `ext` zero
    /// or four words.
    unsafe fn sum_into(
        &self,
        input: u64,
        m: usize,
        problems: usize,
        term: (i32, f64, f64),
        out: u64,
        ext: u64,
    ) -> Result<()> {
        let depth_nodes = node_depth(m);
        // The kernel adds 2^g nodes per output; the remaining `depth` levels are est_combine's.
        let mut depth = depth_nodes - warp_levels(depth_nodes);
        let a = self.acc_size();
        // At depth 0 the kernel's outputs are the problems' sums: straight to `out`.
        let mut nodes = if depth == 0 {
            None
        } else {
            Some(self.alloc((problems << depth) * a)?)
        };
        let (mut input, mut m64, mut problems64) = (input, m as u64, problems as u64);
        let mut depth_arg = depth_nodes as i32;
        let kernel = match term.0 {
            0 => "est_sum_values",
            1 => "est_sum_squares",
            _ => "est_sum_cubes",
        };
        let (mut p1_32, mut p2_32) = (term.1 as f32, term.2 as f32);
        let (mut p1_64, mut p2_64) = (term.1, term.2);
        let mut nodes_ptr = nodes.as_ref().map_or(out, |s| self.ptr(s));
        let (p1, p2) = if self.acc_is_f32() {
            (arg(&mut p1_32), arg(&mut p2_32))
        } else {
            (arg(&mut p1_64), arg(&mut p2_64))
        };
        let mut ext = ext;
        // One warp per four nodes, the grid striding over them.
        let threads = (problems << depth_nodes).div_ceil(4) * 32;
        // SAFETY: est_sum_<term>(in, m, problems, depth, p1, p2, out, ext) with
        // `problems << depth` outputs (the levels the warps add taken off).
        unsafe {
            self.launch(
                kernel,
                self.wave_for(threads, 256, SUM_BLOCKS_PER_SM),
                256,
                &mut [
                    arg(&mut input),
                    arg(&mut m64),
                    arg(&mut problems64),
                    arg(&mut depth_arg),
                    p1,
                    p2,
                    arg(&mut nodes_ptr),
                    arg(&mut ext),
                ],
            )?
        };
        // The warps' sums, 2^depth per problem, added as a perfect tree 2^10 at a time.
        while let Some(from_buf) = nodes.take() {
            let k = depth.min(10);
            let groups = (problems << depth) >> k;
            depth -= k;
            let next = if depth == 0 {
                None
            } else {
                Some(self.alloc(groups * a)?)
            };
            let mut from = self.ptr(&from_buf);
            let mut to = next.as_ref().map_or(out, |s| self.ptr(s));
            let mut k_arg = k as i32;
            // Half a group's threads add its first level; the many small groups of the integers'
            // cast blocks need no more.
            let block = ((1u32 << k) / 2).clamp(32, 512);
            // SAFETY: est_combine(in, k, out): `groups << k` values in, `groups` out.
            unsafe {
                self.launch(
                    "est_combine",
                    groups as u32,
                    block,
                    &mut [arg(&mut from), arg(&mut k_arg), arg(&mut to)],
                )?
            };
            nodes = next;
        }
        Ok(())
    }

    fn read_acc(&self, s: &CudaSlice<u8>) -> Result<f64> {
        let bytes = self.stream.clone_dtoh(s).map_err(cuda_err(
            "reading the estimator's sum back (a kernel may have failed)",
        ))?;
        Ok(if self.acc_is_f32() {
            f32::from_ne_bytes(bytes[..4].try_into().expect("4 bytes")) as f64
        } else {
            f64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes"))
        })
    }

    /// numpy's pairwise sum of `term` of the `m` samples at `input` (float32 sums widened
    /// exactly). `term`: 0 the samples, 1 their squared deviations from `p1`, 2 their deviations
    /// divided by `p2`, cubed.
    ///
    /// # Safety
    /// As [`Passes::extremes`], with `m` samples.
    pub unsafe fn pairwise(&self, input: u64, m: usize, term: (i32, f64, f64)) -> Result<f64> {
        let out = self.alloc(8)?;
        // SAFETY: forwarded; `out` holds one accumulator.
        unsafe { self.sum_into(input, m, 1, term, self.ptr(&out), 0)? };
        self.read_acc(&out)
    }

    /// numpy's sum of `term` (as [`Passes::pairwise`]) in a casting reduction: blocks of 8192
    /// summed pairwise, the block sums added in order (integer samples in float64; float16 ones
    /// in float32, as `np.mean` sums them).
    ///
    /// # Safety
    /// As [`Passes::pairwise`].
    pub unsafe fn buffered(&self, input: u64, m: usize, term: (i32, f64, f64)) -> Result<f64> {
        let out = self.alloc(8)?;
        // SAFETY: forwarded; `out` holds one accumulator.
        unsafe { self.buffered_into(input, m, term, 0, self.ptr(&out))? };
        self.read_acc(&out)
    }

    /// Enqueues [`Passes::buffered`] into the accumulator at `to` (and the extremes into `ext`,
    /// as [`Passes::sum_into`]).
    ///
    /// # Safety
    /// As [`Passes::sum_into`], with one accumulator at `to`.
    unsafe fn buffered_into(
        &self,
        input: u64,
        m: usize,
        term: (i32, f64, f64),
        ext: u64,
        to: u64,
    ) -> Result<()> {
        let (full, rest) = (m / CAST_BUFFER, m % CAST_BUFFER);
        let count = full + (rest > 0) as usize;
        let a = self.acc_size();
        let sums = self.alloc(count * a)?;
        let base = self.ptr(&sums);
        // SAFETY: `full` blocks of CAST_BUFFER samples, then the rest, into `count` accumulators.
        unsafe {
            if full > 0 {
                self.sum_into(input, CAST_BUFFER, full, term, base, ext)?;
            }
            if rest > 0 {
                let at = input + (full * CAST_BUFFER * self.size) as u64;
                self.sum_into(at, rest, 1, term, base + (full * a) as u64, ext)?;
            }
        }
        let (mut from, mut count64, mut to) = (base, count as u64, to);
        // SAFETY: est_sequential(in, count, out).
        unsafe {
            self.launch(
                "est_sequential",
                1,
                32,
                &mut [arg(&mut from), arg(&mut count64), arg(&mut to)],
            )
        }
    }

    /// ml_dtypes' sum of `term` (as [`Passes::pairwise`]; bfloat16 values, `p1` and `p2`
    /// bfloat16) of the `m >= 1` bfloat16 samples at `input`: the first value, then each next one
    /// added with the total rounded to bfloat16 (`est_chain.cuh`: a parallel pass finds the
    /// extremes of each chunk's values, then one warp walks the chain, skipping the chunks too
    /// small to move the total).
    ///
    /// # Safety
    /// As [`Passes::pairwise`].
    pub unsafe fn chain(&self, input: u64, m: usize, term: (i32, f64, f64)) -> Result<f64> {
        if self.kind != Kind::BF16 || m == 0 {
            return Err(Error::InvalidArgument(format!(
                "internal: the bfloat16 chain sums {m} {:?} samples",
                self.kind
            )));
        }
        let chunks = m.div_ceil(CHAIN_CHUNK);
        let supers = chunks.div_ceil(CHAIN_SUPER);
        // Each chunk's and super-chunk's smallest and largest value (a float2).
        let chunk_ext = self.alloc_unset(chunks * 8)?;
        let super_ext = self.alloc_unset(supers * 8)?;
        let out = self.alloc(8)?;
        let (mut input, mut m64, mut which) = (input, m as u64, term.0);
        let (mut p1, mut p2) = (term.1 as f32, term.2 as f32);
        let (mut chunk_ptr, mut super_ptr, mut out_ptr) =
            (self.ptr(&chunk_ext), self.ptr(&super_ext), self.ptr(&out));
        // SAFETY: est_chain_maxima(in, m, which, p1, p2, chunk_ext, super_ext) writes every one
        // of the `chunks` and `supers` pairs (a warp per super-chunk, the grid striding); then
        // est_chain_walk(.., out) reads them and writes one float; all live to the read below.
        unsafe {
            self.launch(
                "est_chain_maxima",
                self.wave_for(supers * 32, 256, CHAIN_BLOCKS_PER_SM),
                256,
                &mut [
                    arg(&mut input),
                    arg(&mut m64),
                    arg(&mut which),
                    arg(&mut p1),
                    arg(&mut p2),
                    arg(&mut chunk_ptr),
                    arg(&mut super_ptr),
                ],
            )?;
            self.launch(
                "est_chain_walk",
                1,
                32,
                &mut [
                    arg(&mut input),
                    arg(&mut m64),
                    arg(&mut which),
                    arg(&mut p1),
                    arg(&mut p2),
                    arg(&mut chunk_ptr),
                    arg(&mut super_ptr),
                    arg(&mut out_ptr),
                ],
            )?;
        }
        self.read_acc(&out)
    }
}

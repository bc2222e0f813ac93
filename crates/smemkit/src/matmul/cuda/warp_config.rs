//! The tile configurations of the warp-tiled kernel (`kernels/matmul_warp.cu`): their fields,
//! limits and the defines each compiles with.

use super::*;

/// One tile configuration of `kernels/matmul_warp.cu` (see the file's header for the meaning of
/// each field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WarpConfig {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub wm: u32,
    pub wn: u32,
    pub stages: u32,
    /// Blocks per SM asked of the compiler (`__launch_bounds__`): 2 caps registers at 128.
    pub min_blocks: u32,
    /// K split in this many parts (a launch parameter, not compiled in): each part writes a
    /// partial product to a workspace that a second kernel sums into C, so that products with
    /// few tiles of C still fill the GPU. 1: no split.
    pub split: u32,
    /// The prefetching FP32 loop (`PREFETCH=1` in matmul_warp.cu): fragments of step k + 1 read
    /// during the FMAs of step k, one barrier per tile; the warp tile then sets the lane tile
    /// (WM/8 lane rows: 64 x 32 gives 8 x 8 outputs per lane, 64 x 64 gives 8 x 16).
    pub prefetch: bool,
}

impl WarpConfig {
    /// The `warp` kernel: 128 x 128 x 8 block tiles, 8 warps of 64 x 32, four stages, two blocks
    /// per SM (ptxas fits it in 128 registers without spilling for every layout).
    pub const DEFAULT: WarpConfig = WarpConfig {
        bm: 128,
        bn: 128,
        bk: 8,
        wm: 64,
        wn: 32,
        stages: 4,
        min_blocks: 2,
        split: 1,
        prefetch: false,
    };

    /// The prefetching loop on the default tiles: 128 x 128 x 8, 8 warps of 64 x 32 (8 x 8 per
    /// lane), three stages, two blocks per SM (127 registers by ptxas 13.0 for sm_90a, no spill in
    /// any layout).
    pub const PREFETCH: WarpConfig = WarpConfig {
        stages: 3,
        prefetch: true,
        ..WarpConfig::DEFAULT
    };

    /// The TF32 kernel's tiles: 8 warps, each 4 x 4 mma tiles of 16 x 8.
    pub const TF32: WarpConfig = WarpConfig {
        bm: 128,
        bn: 128,
        bk: 16,
        wm: 64,
        wn: 32,
        stages: 3,
        min_blocks: 1,
        split: 1,
        prefetch: false,
    };

    /// The configurations the autotuner measures (the default first). Registers by ptxas 13.0
    /// for sm_90a (NN layout): 127, 128, 127, 149, 149, 151,
    /// 153, 127, 127, 128 for the first ten, then 127, 123, 128, 235, 237, 241, 127, 127, 167 and
    /// 127 for the next ten, 237, 241, 239 and 233 for the last four (with the unchecked loads and
    /// shifted edge tiles). None spills, except
    /// 128x128x16-w64x32-s3-b2-p with both operands transposed (4 bytes). The split-K ones are
    /// measured only for products with fewer tiles than the GPU has SMs.
    pub const CANDIDATES: [WarpConfig; 24] = [
        WarpConfig::DEFAULT,
        WarpConfig {
            stages: 3,
            ..WarpConfig::DEFAULT
        },
        // One block per SM, registers unconstrained.
        WarpConfig {
            min_blocks: 1,
            ..WarpConfig::DEFAULT
        },
        WarpConfig {
            bk: 16,
            stages: 3,
            min_blocks: 1,
            ..WarpConfig::DEFAULT
        },
        WarpConfig {
            bk: 16,
            stages: 2,
            min_blocks: 1,
            ..WarpConfig::DEFAULT
        },
        // 128 x 64: twice the blocks, for products with few tiles of 128 x 128.
        WarpConfig {
            bn: 64,
            bk: 16,
            stages: 3,
            min_blocks: 2,
            ..WarpConfig::DEFAULT
        },
        // 64 x 64 with two warps of 32 x 64: for small products.
        WarpConfig {
            bm: 64,
            bn: 64,
            bk: 16,
            wm: 32,
            wn: 64,
            stages: 3,
            min_blocks: 4,
            split: 1,
            prefetch: false,
        },
        WarpConfig {
            split: 2,
            ..WarpConfig::DEFAULT
        },
        WarpConfig {
            split: 4,
            ..WarpConfig::DEFAULT
        },
        // Double buffering at 2 blocks per SM (16.9 KB of shared memory per block, no spill at
        // 128 registers in any layout): a 3-stage candidate beat the 4-stage default; if the gain
        // came from the smaller shared-memory footprint, 2 stages take it further (bench/NOTES.md,
        // "Measured thresholds").
        WarpConfig {
            stages: 2,
            ..WarpConfig::DEFAULT
        },
        // The prefetching loop (fragments of step k + 1 read during the FMAs of step k, one barrier
        // per tile); which shapes the tuner gives it is in bench/NOTES.md.
        WarpConfig::PREFETCH,
        WarpConfig {
            stages: 2,
            ..WarpConfig::PREFETCH
        },
        // BK 16: half the barriers and per-tile load work, still 127 registers at 2 blocks/SM.
        WarpConfig {
            bk: 16,
            ..WarpConfig::PREFETCH
        },
        // 8 x 16 outputs per lane (128 accumulators, 6 fragment loads per 128 FMAs), one block
        // of 8 warps per SM, block tiles of 128 x 256 and 256 x 128.
        WarpConfig {
            bn: 256,
            wn: 64,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        },
        WarpConfig {
            bm: 256,
            wn: 64,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        },
        // 8 x 16 per lane on 128 x 128 tiles: 4 warps, two blocks per SM.
        WarpConfig {
            wn: 64,
            ..WarpConfig::PREFETCH
        },
        // Split K for products with few tiles (1000^3: 64 tiles of 128 x 128).
        WarpConfig {
            split: 2,
            ..WarpConfig::PREFETCH
        },
        WarpConfig {
            split: 4,
            ..WarpConfig::PREFETCH
        },
        WarpConfig {
            bm: 64,
            bn: 64,
            bk: 16,
            wm: 32,
            wn: 64,
            stages: 3,
            min_blocks: 4,
            split: 1,
            prefetch: true,
        },
        // The original loop at BK 16 and 2 blocks per SM: it spilled 104-156 bytes before the
        // operands' per-group addresses were folded into one, and fits now.
        WarpConfig {
            bk: 16,
            stages: 3,
            ..WarpConfig::DEFAULT
        },
        // The 8 x 16 lane tiles that won at 2048^3 and 4096^3 (one block of 8 warps
        // per SM), with BK 16 (half the barriers and per-tile load work; 233-249 registers, no
        // spill) and with a fourth stage of BK 8 (two tiles of loads in flight behind the one
        // being multiplied; 75 KB of shared memory).
        WarpConfig {
            bn: 256,
            bk: 16,
            wn: 64,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        },
        WarpConfig {
            bm: 256,
            bk: 16,
            wn: 64,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        },
        WarpConfig {
            bn: 256,
            wn: 64,
            stages: 4,
            min_blocks: 1,
            ..WarpConfig::PREFETCH
        },
        // 4 warps of 64 x 64 on 128 x 128 x 16 tiles, two blocks per SM (237-255 registers).
        WarpConfig {
            bk: 16,
            wn: 64,
            ..WarpConfig::PREFETCH
        },
    ];

    pub fn threads(&self) -> u32 {
        (self.bm / self.wm) * (self.bn / self.wn) * 32
    }

    /// Floats of padding per shared-memory row: 4 for the FP32 kernel (16-byte rows), 8 for TF32
    /// (conflict-free mma fragment reads).
    fn pad(tf32: bool) -> u32 {
        if tf32 {
            8
        } else {
            4
        }
    }

    /// Dynamic shared memory of one block.
    pub fn smem_bytes(&self, tf32: bool) -> u32 {
        let pad = Self::pad(tf32);
        self.stages * self.bk * (self.bm + pad + self.bn + pad) * 4
    }

    /// A printable, parseable name, e.g. `128x128x16-w64x32-s3-b1` (`-p` appended for the
    /// prefetching loop, then `-k2` for a split).
    pub fn name(&self) -> String {
        let split = if self.split > 1 {
            format!("-k{}", self.split)
        } else {
            String::new()
        };
        let prefetch = if self.prefetch { "-p" } else { "" };
        format!(
            "{}x{}x{}-w{}x{}-s{}-b{}{prefetch}{split}",
            self.bm, self.bn, self.bk, self.wm, self.wn, self.stages, self.min_blocks
        )
    }

    /// Outputs per lane, rows x columns: 8 x 8 for the original loop; with `prefetch`, WM/8 lane
    /// rows and the columns that the warp tile leaves to each lane.
    pub fn lane_tile(&self) -> (u32, u32) {
        if !self.prefetch {
            return (8, 8);
        }
        let lanes_m = self.wm / 8;
        let lanes_n = 32 / lanes_m.max(1);
        (8, self.wn / lanes_n.max(1))
    }

    /// Blocks of the product's grid: tiles of C times the K split.
    pub fn blocks(&self, m: usize, n: usize) -> usize {
        m.div_ceil(self.bm as usize) * n.div_ceil(self.bn as usize) * self.split.max(1) as usize
    }

    pub(super) fn defines(
        &self,
        trans_a: bool,
        trans_b: bool,
        tf32: bool,
    ) -> Vec<(&'static str, String)> {
        let mut d = defines(trans_a, trans_b);
        for (k, v) in [
            ("BM", self.bm),
            ("BN", self.bn),
            ("BK", self.bk),
            ("WM", self.wm),
            ("WN", self.wn),
            ("STAGES", self.stages),
            ("MINB", self.min_blocks),
            ("PAD", Self::pad(tf32)),
            ("TF32", tf32 as u32),
            ("PREFETCH", self.prefetch as u32),
        ] {
            d.push((k, v.to_string()));
        }
        d
    }
}

//! The CUDA histogram benchmark (`smemkit bench --backend cuda`). Owned by the GPU engine's work;
//! it receives the parsed bench flags as they are and prints JSON lines in shared/BENCH.md's schema.

use crate::cli::BenchArgs;

pub fn bench_cuda(args: &BenchArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("the CUDA benchmark is not built yet")
}

//! `smemkit digitize`: numpy's `digitize(x, bins, right)` over a file of samples, written as a
//! `.npy` of int64 bin indices (flat, in the order the samples are stored). The library computes
//! it on the CPU (rayon), or with `--backend cuda` on the GPU (the same indices).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use npyz::WriterBuilder;
use smemkit::{sample::SampleType, Backend};

use crate::commands::hist::config::check_folder;
use crate::input::{edges, read_file};
use crate::output::identity::{check_output, protect};
use crate::output::write_atomic;

#[derive(Debug, Args)]
pub struct DigitizeArgs {
    /// Input file (.npy, .csv, .tsv, .txt, or raw binary with --dtype).
    pub input: PathBuf,
    /// File of bins, monotonically increasing or decreasing (a 1-D .npy, or text, one per line).
    #[arg(long, value_name = "FILE")]
    pub bins: PathBuf,
    /// numpy's right=True: bins[i-1] < x <= bins[i] instead of bins[i-1] <= x < bins[i].
    #[arg(long)]
    pub right: bool,
    /// Output .npy of int64 indices, one per sample.
    #[arg(long, value_name = "FILE.npy")]
    pub out: PathBuf,
    /// Sample type of raw or text input: u8 u16 u32 u64 i8 i16 i32 i64 f16 bf16 f32 f64.
    #[arg(long, value_name = "T")]
    pub dtype: Option<String>,
    /// Column of a CSV/text file: an index counted from 0, or a header name.
    #[arg(long, value_name = "N|NAME")]
    pub column: Option<String>,
    /// Engine: auto (the CPU), cpu or cuda.
    #[arg(long, default_value = "auto")]
    pub backend: String,
}

pub fn run(a: &DigitizeArgs, out: &mut dyn Write) -> Result<()> {
    let backend = a.backend.parse::<Backend>().context("--backend")?;
    if a.out.extension().and_then(|e| e.to_str()) != Some("npy") {
        bail!("--out {}: digitize writes a .npy file", a.out.display());
    }
    check_folder(&a.out).context("--out")?;
    protect("the input", &a.input);
    protect("the --bins file", &a.bins);
    check_output("--out", &a.out)?;
    if [&a.input, &a.bins]
        .iter()
        .all(|p| crate::input::stream::is_stdin(p))
    {
        bail!("standard input (`-`, /dev/stdin) can be read once: give it to the input or --bins, not both");
    }
    let dtype = a
        .dtype
        .as_deref()
        .map(|t| t.parse::<SampleType>().context("--dtype"))
        .transpose()?;
    let bins = edges::read(&a.bins)
        .with_context(|| format!("cannot use --bins {}", a.bins.display()))?
        .values
        .to_f64();
    let data = read_file(&a.input, dtype, a.column.as_deref())?;
    let indices = smemkit::digitize::digitize_on(data.values.samples(), &bins, a.right, backend)
        .with_context(|| format!("--bins {}", a.bins.display()))?;
    write_atomic(&a.out, |w: &mut dyn Write| {
        let mut npy = npyz::WriteOptions::<i64>::new()
            .default_dtype()
            .shape(&[indices.len() as u64])
            .writer(w)
            .begin_nd()?;
        npy.extend(indices.iter().copied())?;
        npy.finish()?;
        Ok(())
    })?;
    writeln!(
        out,
        "digitized   {} samples into {} bins{}\nwrote       {}",
        indices.len(),
        bins.len(),
        if a.right { " (right=True)" } else { "" },
        a.out.display()
    )?;
    Ok(())
}

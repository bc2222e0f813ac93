//! One column of a CSV, TSV or whitespace-separated text file. The delimiter follows the extension
//! (`.csv` comma, `.tsv` tab, `.txt` comma when the first data line has one, else whitespace). A
//! UTF-8 byte-order mark is skipped. The first line is a header when none of its cells is a number
//! (always, when the column is chosen by name), data when all are, and an error when it mixes
//! both; a skipped header is reported to the caller for the summary. Values are parsed as f64 unless `--dtype` asks for another type, so integer
//! columns can take integer bins.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context, Result};
use smemkit::sample::SampleType;

use super::data::OwnedSamples;
use super::{progress, Parsed, Shape};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Delimiter {
    Char(char),
    Whitespace,
}

/// Which column to read.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    Index(usize),
    Name(String),
}

impl Column {
    pub fn parse(text: Option<&str>) -> Column {
        match text {
            None => Column::Index(0),
            Some(t) => t
                .parse()
                .map(Column::Index)
                .unwrap_or_else(|_| Column::Name(t.to_string())),
        }
    }
}

/// Reads the column as samples of `ty` (f64 when `None`).
pub fn read(path: &Path, column: &Column, ty: Option<SampleType>) -> Result<Parsed<OwnedSamples>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read {}", super::stream::name(path)))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bar = progress::bar(total, "reading");
    let reader = BufReader::new(bar.wrap_read(file));
    let values = parse(reader, path, column, ty.unwrap_or(SampleType::F64));
    bar.finish_and_clear();
    values
}

/// Reads the column as samples of `ty` (f64 when `None`) from any reader (a pipe).
pub fn read_from(
    reader: impl BufRead,
    path: &Path,
    column: &Column,
    ty: Option<SampleType>,
) -> Result<Parsed<OwnedSamples>> {
    parse(reader, path, column, ty.unwrap_or(SampleType::F64))
}

fn delimiter_for(path: &Path, first_line: &str) -> Delimiter {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("csv") => Delimiter::Char(','),
        Some("tsv") => Delimiter::Char('\t'),
        _ if first_line.contains(',') => Delimiter::Char(','),
        _ => Delimiter::Whitespace,
    }
}

fn split(line: &str, d: Delimiter) -> Vec<&str> {
    let fields: Vec<&str> = match d {
        Delimiter::Char(c) => line.split(c).collect(),
        Delimiter::Whitespace => line.split_whitespace().collect(),
    };
    fields
        .into_iter()
        .map(|f| f.trim().trim_matches('"').trim())
        .collect()
}

/// Accumulates parsed values of one type.
struct Sink {
    ty: SampleType,
    out: OwnedSamples,
}

impl Sink {
    fn new(ty: SampleType) -> Sink {
        Sink {
            ty,
            out: OwnedSamples::new(ty),
        }
    }

    /// Parses and appends `text`; false when it is not a value of the sink's type.
    fn push(&mut self, text: &str) -> bool {
        macro_rules! p {
            ($v:expr) => {
                match text.parse() {
                    Ok(x) => {
                        $v.push(x);
                        true
                    }
                    Err(_) => false,
                }
            };
        }
        match &mut self.out {
            OwnedSamples::U8(v) => p!(v),
            OwnedSamples::U16(v) => p!(v),
            OwnedSamples::U32(v) => p!(v),
            OwnedSamples::U64(v) => p!(v),
            OwnedSamples::I8(v) => p!(v),
            OwnedSamples::I16(v) => p!(v),
            OwnedSamples::I32(v) => p!(v),
            OwnedSamples::I64(v) => p!(v),
            OwnedSamples::F32(v) => p!(v),
            OwnedSamples::F64(v) => p!(v),
            // As numpy reads them: the decimal to float64, then to the 16-bit type (once for
            // float16; through float32 for ml_dtypes' bfloat16).
            OwnedSamples::F16(v) => match text.parse::<f64>() {
                Ok(x) => {
                    v.push(smemkit::internals::histogram::bins::half::f16_from_f64(x));
                    true
                }
                Err(_) => false,
            },
            OwnedSamples::BF16(v) => match text.parse::<f64>() {
                Ok(x) => {
                    v.push(smemkit::internals::histogram::bins::half::bf16_from_f64(x));
                    true
                }
                Err(_) => false,
            },
        }
    }
}

/// What the first line of data-or-header is: decided by its cells alone, so that a number with a
/// typo in a one-column file is shown as a header (never silently dropped), and a line that is
/// half numbers, half words is refused rather than guessed at.
enum FirstLine {
    Header,
    Data,
}

fn classify(fields: &[&str], number: usize, path: &Path) -> Result<FirstLine> {
    let is_number = |f: &&str| f.parse::<f64>().is_ok();
    // Empty cells say nothing (pandas writes an empty name for the index column).
    let cells: Vec<(usize, &str)> = fields
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, f)| !f.is_empty())
        .collect();
    let numeric = cells.iter().find(|(_, f)| is_number(f));
    let word = cells.iter().find(|(_, f)| !is_number(f));
    match (numeric, word) {
        (Some((i, n)), Some((j, w))) => bail!(
            "line {number} of {} is neither a header nor data: column {i} (`{n}`) is a number but \
             column {j} (`{w}`) is not (columns counted from 0); a header line must hold only names, \
             a data line only numbers",
            super::stream::name(path)
        ),
        (None, Some(_)) => Ok(FirstLine::Header),
        _ => Ok(FirstLine::Data),
    }
}

/// The index of the column named `name` in the header `fields`; a name held by two columns is an
/// error naming both, since either could be the one meant.
fn named_column(fields: &[&str], name: &str, path: &Path) -> Result<usize> {
    let mut at = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| **f == name)
        .map(|(i, _)| i);
    let i = at.next().with_context(|| {
        format!(
            "{} has no column named `{name}` (its first line has: {})",
            super::stream::name(path),
            fields.join(", ")
        )
    })?;
    if let Some(j) = at.next() {
        bail!(
            "{}: columns {i} and {j} (counted from 0) are both named `{name}`: choose one with --column {i} or --column {j}",
            super::stream::name(path)
        );
    }
    Ok(i)
}

fn parse(
    reader: impl BufRead,
    path: &Path,
    column: &Column,
    ty: SampleType,
) -> Result<Parsed<OwnedSamples>> {
    let mut sink = Sink::new(ty);
    let mut delimiter = None;
    let mut index = match column {
        Column::Index(i) => *i,
        Column::Name(_) => 0,
    };
    let mut header = None;
    let mut first = true;
    for (number, line) in reader.lines().enumerate() {
        let number = number + 1;
        let line = line.map_err(|e| {
            let name = super::stream::name(path);
            if e.kind() == std::io::ErrorKind::InvalidData {
                anyhow::anyhow!(
                    "line {number} of {name} is not UTF-8 text (a binary file, or text in another \
                     encoding such as UTF-16: save it as UTF-8)"
                )
            } else {
                anyhow::anyhow!("cannot read line {number} of {name}: {e}")
            }
        })?;
        // A UTF-8 byte-order mark (Windows editors write one) is not part of the first cell.
        let line = match number {
            1 => line.strip_prefix('\u{feff}').unwrap_or(&line),
            _ => &line,
        };
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let d = *delimiter.get_or_insert_with(|| delimiter_for(path, line));
        let fields = split(line, d);
        if first {
            first = false;
            let is_header = match column {
                // A name is looked up in the first line, which is then the header whatever it holds.
                Column::Name(name) => {
                    index = named_column(&fields, name, path)?;
                    true
                }
                Column::Index(_) => matches!(classify(&fields, number, path)?, FirstLine::Header),
            };
            if is_header {
                header = Some(line.trim().to_string());
                continue;
            }
        }
        let Some(field) = fields.get(index) else {
            bail!(
                "line {number} of {} has {} fields, no column {index}",
                super::stream::name(path),
                fields.len()
            );
        };
        if !sink.push(field) {
            bail!(
                "line {number} of {}: `{field}` is not a {} value",
                super::stream::name(path),
                sink.ty
            );
        }
    }
    let shape = Shape::flat(sink.out.samples().len());
    Ok(Parsed {
        values: sink.out,
        shape,
        header,
    })
}

/// Reads a one-column text file of numbers as f64 (bin edges, weights).
pub fn read_f64(path: &Path) -> Result<Parsed<Vec<f64>>> {
    let mut text = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut text))
        .with_context(|| format!("cannot read {}", super::stream::name(path)))?;
    parse_f64(&text[..], path)
}

/// Parses one column of numbers as f64 from any reader (a file's bytes, a pipe).
pub fn parse_f64(reader: impl BufRead, path: &Path) -> Result<Parsed<Vec<f64>>> {
    let parsed = parse(reader, path, &Column::Index(0), SampleType::F64)?;
    let values = match parsed.values {
        OwnedSamples::F64(v) => v,
        other => super::to_f64(other.samples()),
    };
    Ok(Parsed {
        values,
        shape: parsed.shape,
        header: parsed.header,
    })
}

//! One column of a CSV, TSV or whitespace-separated text file. The delimiter follows the extension
//! (`.csv` comma, `.tsv` tab, `.txt` comma when the first data line has one, else whitespace). A
//! first line whose chosen field is not a number is taken as a header, which is how a column can
//! be chosen by name. Values are parsed as f64 unless `--dtype` asks for another type, so integer
//! columns can take integer bins.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context, Result};
use smemkit::SampleType;

use super::data::OwnedSamples;
use super::progress;

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
pub fn read(path: &Path, column: &Column, ty: Option<SampleType>) -> Result<OwnedSamples> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bar = progress::bar(total, "reading");
    let reader = BufReader::new(bar.wrap_read(file));
    let values = parse(reader, path, column, ty.unwrap_or(SampleType::F64));
    bar.finish_and_clear();
    values
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
        let out = match ty {
            SampleType::U8 => OwnedSamples::U8(Vec::new()),
            SampleType::U16 => OwnedSamples::U16(Vec::new()),
            SampleType::U32 => OwnedSamples::U32(Vec::new()),
            SampleType::U64 => OwnedSamples::U64(Vec::new()),
            SampleType::I8 => OwnedSamples::I8(Vec::new()),
            SampleType::I16 => OwnedSamples::I16(Vec::new()),
            SampleType::I32 => OwnedSamples::I32(Vec::new()),
            SampleType::I64 => OwnedSamples::I64(Vec::new()),
            SampleType::F32 => OwnedSamples::F32(Vec::new()),
            SampleType::F64 => OwnedSamples::F64(Vec::new()),
        };
        Sink { ty, out }
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
        }
    }
}

fn parse(
    reader: impl BufRead,
    path: &Path,
    column: &Column,
    ty: SampleType,
) -> Result<OwnedSamples> {
    let mut sink = Sink::new(ty);
    let mut delimiter = None;
    let mut index = match column {
        Column::Index(i) => Some(*i),
        Column::Name(_) => None,
    };
    let mut first = true;
    for (number, line) in reader.lines().enumerate() {
        let number = number + 1;
        let line =
            line.with_context(|| format!("cannot read line {number} of {}", path.display()))?;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let d = *delimiter.get_or_insert_with(|| delimiter_for(path, &line));
        let fields = split(&line, d);
        if first {
            first = false;
            if let Column::Name(name) = column {
                let i = fields.iter().position(|f| f == name).with_context(|| {
                    format!(
                        "{} has no column named `{name}` (its first line has: {})",
                        path.display(),
                        fields.join(", ")
                    )
                })?;
                index = Some(i);
                continue;
            }
            let i = index.unwrap_or(0);
            if let Some(f) = fields.get(i) {
                if f.parse::<f64>().is_err() {
                    // A header line: the column is chosen by index, so it is skipped.
                    continue;
                }
            }
        }
        let i = index.unwrap_or(0);
        let Some(field) = fields.get(i) else {
            bail!(
                "line {number} of {} has {} fields, no column {i}",
                path.display(),
                fields.len()
            );
        };
        if !sink.push(field) {
            bail!(
                "line {number} of {}: `{field}` is not a {} value",
                path.display(),
                sink.ty
            );
        }
    }
    Ok(sink.out)
}

/// Reads a one-column text file of numbers as f64 (bin edges, weights).
pub fn read_f64(path: &Path) -> Result<Vec<f64>> {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .with_context(|| format!("cannot read {}", path.display()))?;
    match parse(text.as_bytes(), path, &Column::Index(0), SampleType::F64)? {
        OwnedSamples::F64(v) => Ok(v),
        other => Ok(super::to_f64(other.samples())),
    }
}

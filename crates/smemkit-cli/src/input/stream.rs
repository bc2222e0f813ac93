//! Inputs read by streaming, and plain piecewise reads. `-` (standard input) and anything that is
//! not a regular file (a pipe, a FIFO, `/dev/stdin` on a pipe) cannot be mapped or read twice:
//! their kind comes from their name when it has a known extension, else from their first bytes
//! (the `.npy` magic), else text when a column is chosen, else raw with a dtype flag, else text;
//! they are then read once, a piece at a time, into memory. Weights are read with the same piecewise reads from regular files too (never
//! mapped: a mapped file truncated under us is a SIGBUS, a short read is an error naming it).

use std::io::{BufRead, BufReader, Cursor, ErrorKind, Read};
use std::path::Path;

use anyhow::{bail, Context, Result};

use smemkit::sample::SampleType;

use super::data::OwnedSamples;
use super::{npy, text, FileKind, Parsed, SampleData, Shape};

/// The name that means standard input.
pub const STDIN: &str = "-";

/// Bytes read and decoded at a time.
const PIECE: usize = 16 << 20;

/// Bytes of a stream looked at to tell numbers written as text from raw binary.
const LOOK_AHEAD: usize = 4096;

/// Whether `bytes` read as nothing but numbers written as text: digits, signs, points, exponents,
/// separators and line breaks, with at least one digit and one line break. Raw samples of real
/// data almost never stay within those few byte values for long.
fn looks_like_text(bytes: &[u8]) -> bool {
    bytes.contains(&b'\n')
        && bytes.iter().any(u8::is_ascii_digit)
        && bytes
            .iter()
            .all(|b| b.is_ascii_digit() || b" \t\r\n,;+-.eE".contains(b))
}

/// Whether `path` names this process's standard input (`-`, `/dev/stdin`, its file descriptor).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
        || ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]
            .iter()
            .any(|s| path == Path::new(s))
}

/// Whether `path` is read by streaming: `-`, or something that exists and is neither a regular
/// file nor a directory (a missing file or a directory is left to the usual "cannot read").
pub fn is_stream(path: &Path) -> bool {
    path.as_os_str() == STDIN || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Opens the stream at `path`, finds its kind (`flag` names the dtype flag for messages) and
/// returns it with a reader that still yields every byte, the ones looked at included.
pub fn open(
    path: &Path,
    dtype: Option<SampleType>,
    column: bool,
    flag: &str,
) -> Result<(FileKind, Box<dyn BufRead>)> {
    let mut reader: Box<dyn Read> = if path.as_os_str() == STDIN {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).with_context(|| format!("cannot read {}", name(path)))?)
    };
    let mut head = Vec::with_capacity(npy::MAGIC.len());
    (&mut reader)
        .take(npy::MAGIC.len() as u64)
        .read_to_end(&mut head)
        .with_context(|| format!("cannot read {}", name(path)))?;
    let kind = FileKind::resolve(path, &head, dtype, column, true, flag)?;
    if kind == FileKind::Raw && path.extension().is_none() {
        // Numbers typed into a pipe with a dtype flag would otherwise be summed as their ASCII
        // bytes: a wrong answer, silently. Look further before trusting the flag.
        (&mut reader)
            .take(LOOK_AHEAD.saturating_sub(head.len()) as u64)
            .read_to_end(&mut head)
            .with_context(|| format!("cannot read {}", name(path)))?;
        if looks_like_text(&head) {
            let fix = if flag == "--dtype" {
                "add --column 0 to read it as text of that type"
            } else {
                "leave it out to read the numbers as text"
            };
            bail!(
                "{} looks like text (digits and line breaks) but {flag} reads a stream without an \
                 extension as raw binary: {fix}",
                name(path)
            );
        }
    }
    Ok((
        kind,
        Box::new(BufReader::with_capacity(
            1 << 20,
            Cursor::new(head).chain(reader),
        )),
    ))
}

/// The name to show for `path` in messages (`-` is standard input).
pub fn name(path: &Path) -> String {
    if path.as_os_str() == STDIN {
        "standard input".to_string()
    } else {
        path.display().to_string()
    }
}

/// Reads samples of the given kind from a stream (nothing is mapped: they are read into memory).
pub fn read_samples(
    kind: FileKind,
    mut reader: Box<dyn std::io::BufRead>,
    path: &Path,
    dtype: Option<SampleType>,
    column: Option<&str>,
) -> Result<Parsed<SampleData>> {
    let mut bool_data = false;
    let (ty, count, little_endian, shape) = match kind {
        FileKind::Text => {
            let t = text::read_from(reader, path, &text::Column::parse(column), dtype)?;
            return Ok(Parsed {
                values: SampleData::Owned(t.values),
                shape: t.shape,
                header: t.header,
            });
        }
        FileKind::Npy => {
            let l = npy::read_header(&mut reader, path)?;
            bool_data = l.bool_data;
            (l.ty, Some(l.len), l.little_endian, Some(l.shape))
        }
        FileKind::Raw => {
            let ty = dtype.context("raw input needs --dtype")?;
            (ty, None, cfg!(target_endian = "little"), None)
        }
    };
    let mut out = OwnedSamples::new(ty);
    let name = name(path);
    let no_room = |n: usize| {
        anyhow::anyhow!(
            "{name}: {n} more samples ({} bytes) do not fit in memory",
            n.saturating_mul(ty.size())
        )
    };
    if let Some(n) = count {
        out.try_reserve(n).map_err(|_| no_room(n))?;
    }
    let what = format!("{ty} samples");
    read_pieces(&mut reader, ty.size(), count, path, &what, |piece| {
        if bool_data {
            npy::check_bool(piece, path)?;
        }
        let n = piece.len() / ty.size();
        out.try_reserve(n).map_err(|_| no_room(n))?;
        out.extend_decoded(piece, little_endian);
        Ok(())
    })?;
    let shape = shape.unwrap_or_else(|| Shape::flat(out.samples().len()));
    Ok(Parsed {
        values: SampleData::Owned(out),
        shape,
        header: None,
    })
}

/// Reads elements of `size` bytes from `reader`, a piece at a time, and hands each piece of whole
/// elements to `each`: `count` of them (a `.npy` header's promise: fewer is an error saying how
/// many were read), or all until the end (`None`: a partial element at the end is an error).
/// Returns the number of elements read.
pub fn read_pieces(
    reader: &mut dyn Read,
    size: usize,
    count: Option<usize>,
    path: &Path,
    what: &str,
    mut each: impl FnMut(&[u8]) -> Result<()>,
) -> Result<usize> {
    let size = size.max(1);
    let piece = (PIECE / size).max(1) * size;
    let first = count.map_or(piece, |c| c.saturating_mul(size).min(piece));
    let mut buf = vec![0u8; first.max(size)];
    let (mut done, mut total_bytes, mut carry) = (0usize, 0u64, 0usize);
    loop {
        let want = match count {
            Some(c) => (c - done).saturating_mul(size).min(piece),
            None => piece,
        };
        if want == 0 {
            break;
        }
        if buf.len() < want {
            buf.resize(want, 0);
        }
        let mut filled = carry;
        let mut end = false;
        while filled < want {
            match reader.read(&mut buf[filled..want]) {
                Ok(0) => {
                    end = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => bail!("cannot read {}: {e}", name(path)),
            }
        }
        total_bytes += (filled - carry) as u64;
        let whole = filled / size * size;
        each(&buf[..whole])?;
        done += whole / size;
        carry = filled - whole;
        buf.copy_within(whole..filled, 0);
        if end {
            break;
        }
    }
    match count {
        Some(c) if done < c => bail!(
            "{}: the data ends early: {done} of the {c} {what} the header promises were read",
            name(path)
        ),
        None if carry > 0 => bail!(
            "{} holds {total_bytes} bytes, not a whole number of {what} ({size} bytes each)",
            name(path)
        ),
        _ => Ok(done),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(bytes: &[u8], size: usize, count: Option<usize>) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut r = bytes;
        let n = read_pieces(&mut r, size, count, Path::new("x"), "things", |b| {
            assert_eq!(b.len() % size, 0);
            out.extend_from_slice(b);
            Ok(())
        })?;
        assert_eq!(n * size, out.len());
        Ok(out)
    }

    #[test]
    fn text_is_told_from_raw_bytes() {
        assert!(looks_like_text(b"1\n2.5\n-3e4\r\n"));
        assert!(looks_like_text(b"1, 2\n"));
        assert!(!looks_like_text(b"12"));
        assert!(!looks_like_text(&[1, 0, 0, 0, 10, 0, 0, 0]));
        assert!(!looks_like_text(b"\n\n"));
    }

    #[test]
    fn whole_elements_or_a_clear_error() {
        assert_eq!(collect(&[1, 2, 3, 4], 2, None).unwrap(), [1, 2, 3, 4]);
        assert_eq!(collect(&[1, 2, 3, 4, 5], 2, Some(2)).unwrap(), [1, 2, 3, 4]);
        assert_eq!(collect(&[], 8, None).unwrap(), [] as [u8; 0]);
        let e = format!("{:#}", collect(&[1, 2, 3], 2, None).unwrap_err());
        assert!(e.contains("3 bytes, not a whole number of things"), "{e}");
        let e = format!("{:#}", collect(&[1, 2, 3], 2, Some(4)).unwrap_err());
        assert!(e.contains("1 of the 4 things"), "{e}");
    }
}

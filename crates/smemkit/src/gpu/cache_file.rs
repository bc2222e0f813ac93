//! The bytes of one kernel-cache entry on disk. CUBINs and PTX are mostly zero padding, symbol
//! tables and repeated instruction patterns, so the cache stores them zlib-compressed (flate2, pure
//! Rust): several times smaller on disk, for well under a millisecond of decompression per entry
//! (bench/NOTES.md, "Session 13 predictions (caches)"). An entry is
//! `MAGIC`, a format version byte, the uncompressed length (u64, little-endian), then one zlib
//! stream, whose Adler-32 checksum catches a corrupted file.
//!
//! Entries written before compression (a bare CUBIN or PTX text) are still read: their file name is
//! the same cache key, so they hold the same kernel. Anything else that cannot be decoded whole (a
//! torn or corrupted file, another format version) is reported as such and the caller builds the
//! kernel again; decoding never panics and never returns part of a kernel.

use flate2::{Compression, Decompress, FlushDecompress, Status};

/// The first bytes of a compressed entry. Neither a CUBIN (an ELF file) nor PTX (text) starts so.
pub const MAGIC: &[u8; 4] = b"SMKZ";
/// The format this build writes and reads. Another version is a miss (built again, overwritten).
pub const VERSION: u8 = 1;
/// Bytes before the zlib stream: magic, version, uncompressed length.
const HEADER: usize = 4 + 1 + 8;
/// No kernel image comes near this; a larger length is a corrupted header, not an allocation.
const MAX_IMAGE: u64 = 1 << 30;
/// Deflate cannot expand its input more than about 1032 times: a claimed length beyond that for
/// the stream's size is corrupt (and bounds what a bad header makes us allocate).
const MAX_RATIO: u64 = 1100;

/// The compression level: zlib's default. On real CUBINs level 9 saved 2 % more bytes for 2.4
/// times the encoding time, level 1 kept 54 % more bytes (bench/NOTES.md); an entry is encoded
/// once, after its NVRTC compile, and read on every process's first use of the kernel.
const LEVEL: u32 = 6;

/// What a cache file held.
#[derive(Debug, PartialEq, Eq)]
pub enum Entry {
    /// A compressed entry, decompressed and checked.
    Compressed(Vec<u8>),
    /// An entry written before compression, as it is on disk (the caller checks it is a CUBIN or
    /// PTX as before, and may write it again compressed).
    Uncompressed(Vec<u8>),
}

/// Why a cache file cannot be used (the entry is then built again).
#[derive(Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// Shorter than the header of a compressed entry.
    Truncated,
    /// Written by another version of the format.
    Version(u8),
    /// The header's length cannot be right for the stream it precedes.
    Length(u64),
    /// The zlib stream is corrupt, ends early, fails its checksum, is followed by other bytes,
    /// or does not decompress to the header's length.
    Stream(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Truncated => write!(f, "shorter than its header"),
            Unreadable::Version(v) => write!(f, "format version {v}, this build reads {VERSION}"),
            Unreadable::Length(n) => write!(f, "a header length of {n} bytes cannot be right"),
            Unreadable::Stream(why) => write!(f, "compressed data unusable: {why}"),
        }
    }
}

/// The file bytes of an entry holding `image`.
pub fn encode(image: &[u8]) -> Vec<u8> {
    encode_at(image, LEVEL)
}

/// [`encode`] at compression level `level` (0-9; the measurement compares them).
pub(crate) fn encode_at(image: &[u8], level: u32) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::with_capacity(HEADER + image.len() / 3);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&(image.len() as u64).to_le_bytes());
    let mut z = flate2::write::ZlibEncoder::new(out, Compression::new(level));
    // Writing into a Vec fails only where allocation does (which ends the process anyway).
    z.write_all(image).expect("compressing into memory");
    z.finish().expect("compressing into memory")
}

/// The image held by the file bytes `file`.
pub fn decode(file: Vec<u8>) -> Result<Entry, Unreadable> {
    if !file.starts_with(MAGIC) {
        // A prefix of the magic is a compressed entry cut short, not an old entry.
        if MAGIC.starts_with(&file) {
            return Err(Unreadable::Truncated);
        }
        return Ok(Entry::Uncompressed(file));
    }
    if file.len() < HEADER {
        return Err(Unreadable::Truncated);
    }
    let version = file[MAGIC.len()];
    if version != VERSION {
        return Err(Unreadable::Version(version));
    }
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(&file[MAGIC.len() + 1..HEADER]);
    let len = u64::from_le_bytes(len_bytes);
    let stream = &file[HEADER..];
    if len > MAX_IMAGE || len > (stream.len() as u64).saturating_mul(MAX_RATIO) {
        return Err(Unreadable::Length(len));
    }
    let mut image = Vec::with_capacity(len as usize);
    let mut z = Decompress::new(true);
    // With `Finish` and room for exactly `len` bytes, a whole stream ends in `StreamEnd` (after
    // its checksum matched); one that is cut short or longer than `len` does not.
    let status = z
        .decompress_vec(stream, &mut image, FlushDecompress::Finish)
        .map_err(|e| Unreadable::Stream(e.to_string()))?;
    if status != Status::StreamEnd {
        return Err(Unreadable::Stream(format!(
            "ends early or holds more than {len} bytes"
        )));
    }
    if z.total_in() != stream.len() as u64 {
        return Err(Unreadable::Stream(format!(
            "{} bytes after the stream's end",
            stream.len() as u64 - z.total_in()
        )));
    }
    if image.len() as u64 != len {
        return Err(Unreadable::Stream(format!(
            "{} bytes where the header says {len}",
            image.len()
        )));
    }
    Ok(Entry::Compressed(image))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes shaped like a CUBIN: an ELF header, zero padding, repeated instruction words.
    fn sample_image() -> Vec<u8> {
        let mut b = b"\x7fELF\x02\x01\x01".to_vec();
        b.resize(4096, 0);
        for i in 0..20_000u32 {
            b.extend_from_slice(&(i % 97).wrapping_mul(0x9e37_79b9).to_le_bytes());
        }
        b
    }

    #[test]
    fn an_image_comes_back_whole_and_smaller() {
        let image = sample_image();
        let file = encode(&image);
        assert!(file.starts_with(MAGIC));
        assert!(
            file.len() < image.len() / 2,
            "{} of {}",
            file.len(),
            image.len()
        );
        assert_eq!(decode(file), Ok(Entry::Compressed(image)));
        assert_eq!(decode(encode(&[])), Ok(Entry::Compressed(vec![])));
    }

    #[test]
    fn an_entry_written_before_compression_is_read_as_it_is() {
        let elf = sample_image();
        assert_eq!(decode(elf.clone()), Ok(Entry::Uncompressed(elf)));
        let ptx = b"//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n".to_vec();
        assert_eq!(decode(ptx.clone()), Ok(Entry::Uncompressed(ptx)));
    }

    #[test]
    fn every_cut_of_an_entry_is_refused() {
        let file = encode(&sample_image());
        // Every length from empty to one byte short (the Adler-32 trailer included).
        for cut in 1..file.len() {
            let r = decode(file[..cut].to_vec());
            assert!(r.is_err(), "cut at {cut} of {}: {r:?}", file.len());
        }
    }

    #[test]
    fn a_changed_byte_anywhere_never_gives_another_image() {
        let image = sample_image();
        let file = encode(&image);
        let mut refused = 0;
        for at in 0..file.len() {
            let mut bad = file.clone();
            bad[at] ^= 0x5a;
            match decode(bad) {
                Err(_) => refused += 1,
                // The padding bits after the last deflate block carry nothing.
                Ok(Entry::Compressed(back)) => assert_eq!(back, image, "byte {at} changed"),
                // A changed magic makes an old-style entry: the caller checks it is a CUBIN.
                Ok(Entry::Uncompressed(b)) => {
                    assert!(at < MAGIC.len() && !b.starts_with(b"\x7fELF"))
                }
            }
        }
        // The magic's 4 bytes aside, only padding bits may go unnoticed.
        assert!(
            refused + MAGIC.len() + 1 >= file.len(),
            "{refused} of {}",
            file.len()
        );
    }

    #[test]
    fn bytes_after_the_stream_are_refused() {
        let mut file = encode(&sample_image());
        file.extend_from_slice(b"tail");
        assert!(matches!(decode(file), Err(Unreadable::Stream(_))));
    }

    #[test]
    fn another_version_or_an_impossible_length_is_refused_without_allocating_it() {
        let mut file = encode(&sample_image());
        file[4] = VERSION + 1;
        assert_eq!(decode(file), Err(Unreadable::Version(VERSION + 1)));
        let mut file = encode(&sample_image());
        file[5..13].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(decode(file), Err(Unreadable::Length(u64::MAX)));
        let mut file = encode(&[1, 2, 3]);
        file[5..13].copy_from_slice(&(1u64 << 29).to_le_bytes());
        assert!(matches!(decode(file), Err(Unreadable::Length(_))));
    }
}

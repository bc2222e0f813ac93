//! Arbitrary bytes fed to every reader of the CLI: `.npy` headers and data, raw samples, text and
//! CSV columns, bin edges and weights, as files or as streams. Each must give an answer or an
//! error, never a panic; and what they do answer is checked where the bytes make the answer
//! known. The case counts are kept small: these run in CI with every `cargo test`.

use std::io::Cursor;
use std::path::Path;

use proptest::prelude::*;
use smemkit::sample::SampleType;

use super::stream::read_samples as read_stream;
use super::text::{self, Column};
use super::weights;
use super::{npy, shape, FileKind, Shape};

const TYPES: [SampleType; 10] = [
    SampleType::U8,
    SampleType::U16,
    SampleType::U32,
    SampleType::U64,
    SampleType::I8,
    SampleType::I16,
    SampleType::I32,
    SampleType::I64,
    SampleType::F32,
    SampleType::F64,
];

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(64)
}

/// Bytes that are often nearly text: digits, signs, separators, quotes, a BOM, words, comments.
fn texty() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            Just("0"),
            Just("1"),
            Just("7"),
            Just("-"),
            Just("."),
            Just("e"),
            Just(","),
            Just("\t"),
            Just(" "),
            Just("\n"),
            Just("\r\n"),
            Just("\""),
            Just("#"),
            Just("a"),
            Just("x"),
            Just("nan"),
            Just("inf"),
            Just("\u{feff}"),
            Just("\u{ff}"),
            Just("1e400"),
        ],
        0..60,
    )
    .prop_map(|parts| parts.concat().into_bytes())
}

/// Bytes that start like a `.npy` file some of the time.
fn npy_like() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        0u8..4,
        proptest::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(|(magic, version, rest)| {
            let mut b = Vec::new();
            if magic {
                b.extend_from_slice(npy::MAGIC);
                b.extend_from_slice(&[version, 0]);
            }
            b.extend_from_slice(&rest);
            b
        })
}

fn any_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        texty(),
        npy_like()
    ]
}

fn reader(bytes: &[u8]) -> Box<dyn std::io::BufRead> {
    Box::new(Cursor::new(bytes.to_vec()))
}

fn column() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        (0usize..4).prop_map(|i| Some(i.to_string())),
        Just(Some("a".to_string())),
        Just(Some("x".to_string())),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn npy_headers_from_a_reader_never_panic(bytes in npy_like()) {
        let mut r = &bytes[..];
        if let Ok(l) = npy::read_header(&mut r, Path::new("x.npy")) {
            // The reader stops at the first data byte, which is where the header says.
            prop_assert_eq!(bytes.len() - r.len(), l.data_start);
            prop_assert_eq!(l.shape.dims.iter().product::<usize>(), l.len);
        }
    }

    #[test]
    fn samples_of_every_kind_never_panic(
        bytes in any_bytes(),
        t in 0usize..10,
        kind in 0usize..3,
        column in column(),
    ) {
        let ty = TYPES[t];
        let kind = [FileKind::Npy, FileKind::Raw, FileKind::Text][kind];
        let column = if kind == FileKind::Text { column } else { None };
        let dtype = (kind != FileKind::Npy).then_some(ty);
        let got = read_stream(kind, reader(&bytes), Path::new("-"), dtype, column.as_deref());
        if let (Ok(read), FileKind::Raw) = (&got, kind) {
            // Raw bytes are the samples: all of them, whole, in order.
            prop_assert_eq!(bytes.len() % ty.size(), 0);
            prop_assert_eq!(read.values.samples().len(), bytes.len() / ty.size());
            prop_assert_eq!(read.values.samples().byte_len(), bytes.len());
        }
        if kind == FileKind::Raw && bytes.len() % ty.size() != 0 {
            prop_assert!(got.is_err());
        }
        // The kind of a stream from its first bytes, whatever they are.
        let _ = FileKind::resolve(Path::new("-"), &bytes, dtype, column.is_some(), true, "--dtype");
    }

    #[test]
    fn text_columns_never_panic(bytes in texty(), t in 0usize..10, column in column()) {
        let col = Column::parse(column.as_deref());
        if let Ok(read) = text::read_from(&bytes[..], Path::new("t.csv"), &col, Some(TYPES[t])) {
            prop_assert_eq!(read.shape, Shape::flat(read.values.samples().len()));
            // Never more values than lines.
            prop_assert!(read.values.samples().len() <= bytes.split(|&b| b == b'\n').count());
        }
    }

    #[test]
    fn one_number_per_line_round_trips(values in proptest::collection::vec(-1e6f64..1e6, 0..20), bom in any::<bool>(), header in any::<bool>()) {
        let mut text = String::new();
        if bom {
            text.push('\u{feff}');
        }
        if header {
            text.push_str("value\n");
        }
        for v in &values {
            text.push_str(&format!("{v}\n"));
        }
        let read = text::parse_f64(text.as_bytes(), Path::new("e.txt")).unwrap();
        prop_assert_eq!(read.values, values);
        prop_assert_eq!(read.header.is_some(), header);
    }

    #[test]
    fn edges_never_panic(bytes in any_bytes()) {
        for kind in [FileKind::Npy, FileKind::Text] {
            if let Ok(read) = read_stream(kind, reader(&bytes), Path::new("e"), None, None) {
                let edges = super::to_f64(read.values.samples());
                let _ = crate::commands::hist::config::check_edges(&edges);
            }
        }
    }

    #[test]
    fn weights_never_panic(bytes in any_bytes(), t in 0usize..10, kind in 0usize..3, rows in 1usize..4, fortran in any::<bool>()) {
        let kind = [FileKind::Npy, FileKind::Raw, FileKind::Text][kind];
        let dtype = (kind == FileKind::Raw).then_some(TYPES[t]);
        let _ = weights::check_flags(kind, Path::new("w"), dtype);
        if let Ok(read) = weights::from_reader(kind, reader(&bytes), Path::new("w"), dtype) {
            let n = read.values.len();
            prop_assert_eq!(read.shape.dims.iter().product::<usize>(), n);
            // Pairing with samples of any shape: an answer or an error, and the same length.
            let samples = Shape { dims: vec![rows, n / rows], fortran };
            if let Ok(w) = read.values.pair(&read.shape, &samples) {
                prop_assert_eq!(w.weights().len(), n);
            }
        }
        if kind == FileKind::Raw {
            let raw = weights::from_reader(kind, reader(&bytes), Path::new("w"), dtype);
            prop_assert_eq!(raw.is_ok(), bytes.len() % TYPES[t].size() == 0);
        }
    }

    #[test]
    fn pairing_is_a_permutation(dims in proptest::collection::vec(1usize..4, 1..4), fw in any::<bool>(), fs in any::<bool>()) {
        let n: usize = dims.iter().product();
        let w: Vec<usize> = (0..n).collect();
        let got = shape::pair(w, &Shape { dims: dims.clone(), fortran: fw }, &Shape { dims, fortran: fs }).unwrap();
        let mut sorted = got.clone();
        sorted.sort_unstable();
        prop_assert_eq!(sorted, (0..n).collect::<Vec<_>>());
    }
}

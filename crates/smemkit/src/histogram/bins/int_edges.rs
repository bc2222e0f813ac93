//! Integer bin edges kept exact. numpy keeps an int64 or uint64 `bins` array in its own type and
//! compares samples with it in the type both promote to: int64 edges with signed or narrower
//! unsigned samples compare as int64, uint64 edges with unsigned samples as uint64, exactly, even
//! beyond 2^53 where float64 merges neighbouring integers (`[2**60 - 1, 2**60 + 1]` counts
//! `2**60`). Every other pairing (float samples, int64 with uint64) compares in float64, as numpy
//! does, and so becomes ordinary float edges.

use crate::error::{Error, Result};
use crate::histogram::bins::Slot;
use crate::sample::SampleType;

/// An integer `bins` array as numpy would hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntEdges {
    /// Signed edges.
    I64(Vec<i64>),
    /// Unsigned edges.
    U64(Vec<u64>),
}

/// Integers of magnitude up to this are exact in float64.
const F64_EXACT: i128 = 1 << 53;

impl IntEdges {
    /// How many edges.
    pub fn len(&self) -> usize {
        match self {
            IntEdges::I64(e) => e.len(),
            IntEdges::U64(e) => e.len(),
        }
    }
    /// No edges.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The edges widened to i128 (exact for both kinds).
    pub fn to_i128(&self) -> Vec<i128> {
        match self {
            IntEdges::I64(e) => e.iter().map(|&x| x as i128).collect(),
            IntEdges::U64(e) => e.iter().map(|&x| x as i128).collect(),
        }
    }
    /// The edges as float64, as numpy converts them when it compares in float64.
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            IntEdges::I64(e) => e.iter().map(|&x| x as f64).collect(),
            IntEdges::U64(e) => e.iter().map(|&x| x as f64).collect(),
        }
    }

    /// Whether numpy compares samples of this type with these edges in an integer type (else in
    /// float64).
    pub fn compares_exactly_with(&self, samples: SampleType) -> bool {
        use SampleType::*;
        match self {
            IntEdges::I64(_) => matches!(samples, U8 | U16 | U32 | I8 | I16 | I32 | I64),
            IntEdges::U64(_) => matches!(samples, U8 | U16 | U32 | U64),
        }
    }

    /// numpy's checks (at least two edges, never decreasing, in the edges' own type) and the rule
    /// the samples are compared with: `Ok(Some(edges))` when the comparison is exact in integers
    /// and float64 would lose it, `Ok(None)` when float64 edges give numpy's answer.
    pub(crate) fn resolve(&self, samples: SampleType) -> Result<Option<Vec<i128>>> {
        let e = self.to_i128();
        if e.len() < 2 {
            return Err(Error::TooFewEdges(e.len()));
        }
        if let Some(i) = e.windows(2).position(|w| w[1] < w[0]) {
            return Err(Error::EdgesNotIncreasing {
                index: i + 1,
                value: e[i + 1] as f64,
                previous: e[i] as f64,
            });
        }
        let integer_compare = self.compares_exactly_with(samples);
        // 64-bit samples beyond 2^53 round to a float64 of at least 2^53 in magnitude, which
        // compares as they do with every edge of smaller magnitude but equals an edge of
        // exactly 2^53 (2^53 + 1 would land in a last bin closed at 2^53): such edges need the
        // integers too.
        let wide_samples = matches!(samples, SampleType::I64 | SampleType::U64);
        let beyond_f64 = e
            .iter()
            .any(|x| x.abs() > F64_EXACT || (wide_samples && x.abs() == F64_EXACT));
        Ok((integer_compare && beyond_f64).then_some(e))
    }
}

/// Bin of the integer `x` among exact integer edges (numpy's `searchsorted`: `[e[i], e[i+1])`,
/// the last bin closed).
#[inline(always)]
pub fn locate_in_int_edges(edges: &[i128], x: i128) -> Slot {
    let n = edges.len() - 1;
    if x < edges[0] {
        Slot::Below
    } else if x > edges[n] {
        Slot::Above
    } else if x == edges[n] {
        Slot::Bin(n - 1)
    } else {
        Slot::Bin(edges.partition_point(|&e| e <= x) - 1)
    }
}

#[cfg(test)]
mod tests {
    use crate::histogram::bins::{BinSpec, Binning, Slot};
    use crate::sample::Samples;

    const TWO_53: i64 = 1 << 53;

    #[test]
    fn an_edge_of_exactly_2_53_compares_64_bit_samples_in_integers() {
        // numpy: 2^53 + 1 lies above [0, 2^53]; in float64 it equals the closed last edge.
        let x = [TWO_53 + 1, TWO_53, 5];
        let spec = BinSpec::IntEdges(super::IntEdges::I64(vec![0, TWO_53]));
        let b = Binning::resolve(&spec, Samples::I64(&x)).unwrap();
        assert!(matches!(b, Binning::IntEdges(_)), "{b:?}");
        let slots: Vec<Slot> = x.iter().map(|&v| b.locate(v)).collect();
        assert_eq!(slots, [Slot::Above, Slot::Bin(0), Slot::Bin(0)]);
        let below = [-TWO_53 - 1];
        let spec = BinSpec::IntEdges(super::IntEdges::I64(vec![-TWO_53, 0]));
        let b = Binning::resolve(&spec, Samples::I64(&below)).unwrap();
        assert_eq!(b.locate(below[0]), Slot::Below);
        // 32-bit samples never reach 2^53: float64 edges serve them.
        let spec = BinSpec::IntEdges(super::IntEdges::I64(vec![0, TWO_53]));
        let b = Binning::resolve(&spec, Samples::I32(&[1])).unwrap();
        assert!(matches!(b, Binning::Edges(_)), "{b:?}");
    }
}

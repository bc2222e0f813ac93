//! numpy.histogramdd's `density=True`, with numpy's own rounding: each bin is divided by the width
//! of its bin on axis 0, then axis 1, ..., and last by the total `s = hist.sum()`. Counts sum
//! exactly in any order, so unweighted densities are numpy's bit for bit. Sums of weights are added
//! in numpy's order ([`numpy_total`]): `hist` there is a strided view (the outlier bins cut off), which
//! numpy's iterator sums in pieces, each with its pairwise summation.

use crate::histogram::Counts;

use super::axis::Axis;

/// Below this many elements numpy's pairwise sum adds in a plain loop.
const PW_LEAF: usize = 8;
/// numpy's `PW_BLOCKSIZE`: up to this many elements, eight interleaved partial sums.
const PW_BLOCK: usize = 128;

/// numpy's `pairwise_sum` of float64 values.
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < PW_LEAF {
        let mut res = 0.0;
        for &x in a {
            res += x;
        }
        res
    } else if n <= PW_BLOCK {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - (n % 8) {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
    }
}

/// numpy's buffer size (`np.getbufsize()`): how many elements its iterator copies at a time.
const NUMPY_BUFSIZE: usize = 8192;

/// `hist.sum()` of the strided view `full[1:-1, ..., 1:-1]` of shape `shape`, whose values are
/// `values` in C order, in the pieces numpy 2.3+ adds (checked against numpy 2.4 on 2-D to 14-D
/// shapes, with axes of one bin and rows longer than its buffer): axes of length 1 drop out; rows
/// (the last remaining axis) longer than the buffer are summed one by one; otherwise the buffer
/// takes as many whole blocks of the trailing axes that fit in it as it can, never crossing into the
/// next index of the axis above. Each piece is pairwise-summed, and the pieces added in order.
fn numpy_total(values: &[f64], shape: &[usize]) -> f64 {
    let mut dims: Vec<usize> = shape.iter().copied().filter(|&d| d != 1).collect();
    if dims.is_empty() {
        dims.push(1);
    }
    let last = dims[dims.len() - 1];
    if last > NUMPY_BUFSIZE {
        return values
            .chunks(last)
            .fold(0.0, |s, row| s + pairwise_sum(row));
    }
    let mut k = 0;
    while dims[k..].iter().product::<usize>() > NUMPY_BUFSIZE {
        k += 1;
    }
    if k == 0 {
        return pairwise_sum(values);
    }
    let block: usize = dims[k..].iter().product();
    let per_piece = (NUMPY_BUFSIZE / block).min(dims[k - 1]) * block;
    values.chunks(dims[k - 1] * block).fold(0.0, |s, parent| {
        parent
            .chunks(per_piece)
            .fold(s, |s, piece| s + pairwise_sum(piece))
    })
}

/// The density of `counts` (C order over the axes' bins), as numpy computes it.
pub(crate) fn density(counts: &Counts, axes: &[Axis]) -> Vec<f64> {
    let values: Vec<f64> = (0..counts.len()).map(|i| counts.get_f64(i)).collect();
    let shape: Vec<usize> = axes.iter().map(Axis::nbins).collect();
    let total = numpy_total(&values, &shape);
    let mut out = values;
    for (flat, v) in out.iter_mut().enumerate() {
        // The multi-index of `flat`, last axis fastest; divide in axis order.
        let mut rest = flat;
        let mut index = [0usize; super::layout::MAX_DIMS];
        for (d, &len) in shape.iter().enumerate().rev() {
            index[d] = rest % len;
            rest /= len;
        }
        let mut x = *v;
        for (d, axis) in axes.iter().enumerate() {
            x /= axis.widths[index[d]];
        }
        *v = x / total;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{numpy_total, pairwise_sum};

    #[test]
    fn pairwise_sum_differs_from_a_plain_loop_where_numpy_does() {
        // 1e16 then ones: a plain loop loses every 1.0, the eight partial sums keep some.
        let mut a = vec![1.0; 16];
        a[0] = 1e16;
        let plain = a.iter().fold(0.0, |s, &x| s + x);
        assert_eq!(plain, 1e16);
        // numpy.sum gives 1.0000000000000014e16 for this array.
        assert_eq!(pairwise_sum(&a), 1.0000000000000014e16);
        assert_eq!(pairwise_sum(&[1.0, 2.0, 3.0]), 6.0);
    }

    #[test]
    fn the_total_is_cut_where_numpys_iterator_cuts_it() {
        // 1e16 and ones again: which ones survive depends on how the sum is cut into pieces.
        let mut v = vec![1.0; 100 * 100];
        v[0] = 1e16;
        // 100 x 100: pieces of 81 rows (8100 values), then 19 rows.
        let pieces = pairwise_sum(&v[..8100]) + pairwise_sum(&v[8100..]);
        assert_eq!(numpy_total(&v, &[100, 100]), pieces);
        assert_ne!(pieces, pairwise_sum(&v));
        // Axes of one bin drop out; a small histogram is one piece.
        assert_eq!(numpy_total(&v[..50], &[1, 50, 1]), pairwise_sum(&v[..50]));
        // Two rows of 5000 do not fit the buffer together: one piece each.
        let rows = pairwise_sum(&v[..5000]) + pairwise_sum(&v[5000..]);
        assert_eq!(numpy_total(&v, &[2, 5000]), rows);
        // One row longer than the buffer: a single piece.
        assert_eq!(numpy_total(&v, &[1, 10000]), pairwise_sum(&v));
    }
}

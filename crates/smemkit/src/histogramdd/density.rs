//! numpy.histogramdd's `density=True`, with numpy's own rounding: each bin is divided by the width
//! of its bin on axis 0, then axis 1, ..., and last by the total `s = hist.sum()`. Counts sum
//! exactly in any order, so unweighted densities are numpy's bit for bit. For weighted sums numpy's
//! pairwise summation is repeated over the bins in C order; numpy's iterator may cut a large
//! strided view into buffered blocks (seen for some 3-D histograms of more than 8192 bins), and then
//! `s`, and so every density, can differ from numpy's in the last bit.

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

/// The density of `counts` (C order over the axes' bins), as numpy computes it.
pub(crate) fn density(counts: &Counts, axes: &[Axis]) -> Vec<f64> {
    let values: Vec<f64> = (0..counts.len()).map(|i| counts.get_f64(i)).collect();
    let total = pairwise_sum(&values);
    let shape: Vec<usize> = axes.iter().map(Axis::nbins).collect();
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
    use super::pairwise_sum;

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
}

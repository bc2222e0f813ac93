//! The logical shape of what was read, and how weights are paired with samples. A histogram does
//! not care in which order its samples lie, so samples are read flat in the order their bytes are
//! stored (C or Fortran); but weights pair with samples element by element, and numpy pairs
//! `x[i, j]` with `w[i, j]` whatever the storage. So the weights (always held in memory) are put
//! into the samples' storage order here, and weights of another shape are refused as numpy does.

use anyhow::{anyhow, bail, Result};

/// Dimensions and storage order of an array; files without a shape (text, raw) and generated
/// samples are one-dimensional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub dims: Vec<usize>,
    /// Stored in Fortran (column-major) order.
    pub fortran: bool,
}

impl Shape {
    pub fn flat(len: usize) -> Shape {
        Shape {
            dims: vec![len],
            fortran: false,
        }
    }

    fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// As numpy prints a shape: `(3,)`, `(2, 3)`, `()`.
    pub fn describe(&self) -> String {
        match self.dims.as_slice() {
            [d] => format!("({d},)"),
            dims => format!(
                "({})",
                dims.iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Whether C and Fortran order put the elements in different orders: only when two or more
    /// axes have more than one element.
    fn order_matters(&self) -> bool {
        self.dims.iter().filter(|&&d| d > 1).count() > 1
    }
}

/// The weights, of shape `w`, in the storage order of the samples, of shape `s`, so that the
/// n-th weight in memory belongs to the n-th sample in memory. Weights of another number of
/// elements are left as they are (the library names both lengths); weights of the same number but
/// another shape are refused, as numpy refuses them.
pub fn pair<T: Copy>(weights: Vec<T>, w: &Shape, s: &Shape) -> Result<Vec<T>> {
    if w.len() != s.len() || weights.len() != w.len() {
        return Ok(weights);
    }
    if w.dims != s.dims {
        bail!(
            "weights should have the same shape as the samples (numpy: \"weights should have the same shape as a\"): \
             the weights have shape {}, the samples {}",
            w.describe(),
            s.describe()
        );
    }
    if w.fortran == s.fortran || !s.order_matters() {
        return Ok(weights);
    }
    if w.fortran {
        fortran_to_c(&weights, &w.dims)
    } else {
        // C order of some dims is Fortran order of the reversed dims, so the same walk serves.
        let reversed: Vec<usize> = w.dims.iter().rev().copied().collect();
        fortran_to_c(&weights, &reversed)
    }
}

/// The elements of a Fortran-order array of `dims` (in `src`) in C order.
pub fn fortran_to_c<T: Copy>(src: &[T], dims: &[usize]) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(src.len()).map_err(|_| {
        anyhow!(
            "{} weights ({} bytes) do not fit in memory a second time, to put them in the samples' order",
            src.len(),
            src.len().saturating_mul(std::mem::size_of::<T>())
        )
    })?;
    // Fortran strides: the first axis is contiguous.
    let mut strides = Vec::with_capacity(dims.len());
    let mut step = 1usize;
    for &d in dims {
        strides.push(step);
        step = step.saturating_mul(d);
    }
    // An odometer over the C-order index (last axis fastest), keeping the Fortran offset.
    let mut index = vec![0usize; dims.len()];
    let mut offset = 0usize;
    for _ in 0..src.len() {
        out.push(src[offset]);
        for k in (0..dims.len()).rev() {
            index[k] += 1;
            offset += strides[k];
            if index[k] < dims[k] {
                break;
            }
            offset -= strides[k] * dims[k];
            index[k] = 0;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn shape(dims: &[usize], fortran: bool) -> Shape {
        Shape {
            dims: dims.to_vec(),
            fortran,
        }
    }

    #[test]
    fn a_fortran_matrix_in_c_order() {
        // [[1, 2, 3], [4, 5, 6]] stored by columns.
        let f = [1, 4, 2, 5, 3, 6];
        assert_eq!(fortran_to_c(&f, &[2, 3]).unwrap(), [1, 2, 3, 4, 5, 6]);
        // Weights stored by rows, samples by columns: the weights follow the samples' order.
        let w = pair(
            vec![1, 2, 3, 4, 5, 6],
            &shape(&[2, 3], false),
            &shape(&[2, 3], true),
        );
        assert_eq!(w.unwrap(), f);
        let w = pair(f.to_vec(), &shape(&[2, 3], true), &shape(&[2, 3], false));
        assert_eq!(w.unwrap(), [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn another_shape_of_the_same_size_is_refused() {
        let e = pair(vec![0.0; 6], &shape(&[3, 2], false), &shape(&[2, 3], false)).unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("same shape") && e.contains("(3, 2)") && e.contains("(2, 3)"),
            "{e}"
        );
        assert!(pair(vec![0.0; 6], &Shape::flat(6), &shape(&[2, 3], true)).is_err());
        // Another size: left for the library's length check.
        assert_eq!(
            pair(vec![1.0; 5], &Shape::flat(5), &shape(&[2, 3], true))
                .unwrap()
                .len(),
            5
        );
        // Order matters only with two axes longer than one.
        let v = vec![1, 2, 3];
        assert_eq!(
            pair(v.clone(), &shape(&[1, 3], true), &shape(&[1, 3], false)).unwrap(),
            v
        );
    }

    proptest! {
        #[test]
        fn matches_indexing_by_hand(dims in proptest::collection::vec(1usize..5, 0..4)) {
            let n: usize = dims.iter().product();
            let src: Vec<usize> = (0..n).collect();
            let got = fortran_to_c(&src, &dims).unwrap();
            // Element c (C order) of a multi-index i lies at sum(i_k * fstride_k) in Fortran order.
            for (c, &g) in got.iter().enumerate() {
                let (mut rest, mut f, mut stride) = (c, 0, 1);
                let mut cstrides: Vec<usize> = dims.iter().rev().scan(1, |s, &d| { let v = *s; *s *= d; Some(v) }).collect();
                cstrides.reverse();
                for (k, &d) in dims.iter().enumerate() {
                    let i = rest / cstrides[k];
                    rest %= cstrides[k];
                    f += i * stride;
                    stride *= d;
                }
                prop_assert_eq!(g, f);
            }
            // And back: C to Fortran to C is the identity.
            let rev: Vec<usize> = dims.iter().rev().copied().collect();
            prop_assert_eq!(fortran_to_c(&fortran_to_c(&src, &rev).unwrap(), &dims).unwrap(), src);
        }
    }
}

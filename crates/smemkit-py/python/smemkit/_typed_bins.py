"""numpy's histogram where the engines cannot bin in numpy's arithmetic.

The engines compute bins in float16, bfloat16, float32 or float64. numpy bins in the type its
promotion of the samples, the range and the edges gives, which can be wider (long double samples,
a long double range or edges) or a mix the engines do not follow (a float16 range over float32
samples, a numpy scalar beside a Python float it cannot hold). And numpy sums weights it cannot
cast to float64 or complex (Decimal, Fraction, long double) in their own type. For those calls
each sample's bin is found here, vectorised in exactly the types numpy's promotion gives, by
numpy's rule for the path numpy takes (uniform bins: the index from the sample's offset,
corrected against the edges; explicit edges, or weights that are not simple: the edges
searched). The bins are then counted by the library's bincount (the host engine); weights that
are not simple are summed per bin in their own type. An estimator's number of bins is computed
in the same types (``_typed_estimators``)."""

from __future__ import annotations

import numpy as np

from . import _native
from . import _ranges
from . import _typed_estimators
from ._typed_estimators import span


def is_long(dtype: np.dtype) -> bool:
    """Long double (or its complex) where it is wider than float64, as on x86-64 and aarch64."""
    return (dtype.kind == "f" and dtype.itemsize > 8) or (dtype.kind == "c" and dtype.itemsize > 16)


def simple_weights(w) -> bool:
    """numpy's test of weights it sums through float64 (or complex): the others it sums in their
    own type."""
    return w is None or np.can_cast(w.dtype, np.double) or np.can_cast(w.dtype, complex)


def takes(a: np.ndarray, bins, range_, w, half_name) -> bool:
    """Whether this histogram needs numpy's arithmetic in types the engines do not compute in."""
    if is_long(a.dtype) or not simple_weights(w):
        return True
    if isinstance(bins, str) or np.ndim(bins) == 0:
        if range_ is None:
            return False
        first, last = range_
        range_type = np.result_type(first, last)
        if is_long(range_type):
            return True
        bin_type = np.result_type(first, last, a)
        sample_type = bin_type if (a.dtype.kind == "f" or half_name) and bin_type != a.dtype \
            else a.dtype
        try:
            _ranges.range_arithmetic(first, last, sample_type, half_name)
        except NotImplementedError:
            return True
        return False
    return np.ndim(bins) == 1 and is_long(np.asarray(bins).dtype)


def _reason(a, bins, range_, w) -> str:
    if is_long(a.dtype):
        return f"{a.dtype} samples"
    if not simple_weights(w):
        return f"{w.dtype} weights"
    return "this range" if np.ndim(bins) == 0 else f"{np.asarray(bins).dtype} edges"


def outer_edges(a: np.ndarray, range_):
    """numpy's first and last edge: the range as given (numpy's checks), or the data's extremes
    (in the samples' type); an empty range is widened by 0.5 on each side."""
    if range_ is not None:
        first, last = range_
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif a.size == 0:
        first, last = 0, 1
    else:
        first, last = a.min(), a.max()
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _offset(x: np.ndarray, first):
    return np.subtract(x, first, dtype=np.result_type(x, first))


def uniform_edges(a: np.ndarray, nbins: int, range_):
    """``(first, last, edges)``: numpy's equal bins over the range or the data, in its type."""
    first, last = outer_edges(a, range_)
    bin_type = np.result_type(first, last, a)
    if bin_type.kind in "biu":
        bin_type = np.dtype(np.float64)
    edges = np.linspace(first, last, nbins + 1, endpoint=True, dtype=bin_type)
    if np.any(edges[:-1] >= edges[1:]):
        raise ValueError(f"Too many bins for data range: {nbins} bins would not all have a "
                         f"width in numpy's arithmetic for this range ({edges.dtype} edges)")
    return first, last, edges


def _uniform_bins(a: np.ndarray, first, last, nbins: int, edges: np.ndarray):
    """``(keep, bins)``: the samples inside ``[first, last]`` and the bin of each, from its
    offset in numpy's types, corrected by one against the edges as numpy corrects it."""
    keep = a >= first
    keep &= a <= last
    x = a[keep].astype(edges.dtype, copy=False)
    index = ((_offset(x, first) / span(last, first)) * nbins).astype(np.intp)
    index[index == nbins] -= 1
    index[x < edges[index]] -= 1
    index[(x >= edges[index + 1]) & (index != nbins - 1)] += 1
    return keep, index


def _searched_bins(a: np.ndarray, edges: np.ndarray):
    """``(keep, bins)`` by the edges: ``[e[i], e[i+1])``, the last bin closed, as numpy counts
    explicit edges (and uniform ones with weights it does not cast): a zero-width bin holds
    nothing unless it is the last; NaN lies in none."""
    nbins = edges.size - 1
    after = np.searchsorted(edges, a, side="right")  # edges <= each sample
    keep = (after >= 1) & ((after <= nbins) | (a == edges[-1]))
    return keep, np.minimum(after[keep] - 1, nbins - 1)


def _count(index: np.ndarray, w, nbins: int, result_type, backend, strategy):
    """The counts (or sums) of each bin: the engine's bincount; weights that are not simple
    summed in their own type."""
    index = np.ascontiguousarray(index, dtype=np.int64)
    if index.size and index.min() < 0:
        # numpy's bincount refuses it (a sample below the range kept by numpy's comparison in
        # another type than its bins', e.g. bfloat16 beside a Python float): np.add.at would
        # wrap it into the last bin.
        raise ValueError("'list' argument must have no negative elements")
    if w is None:
        return _native.bincount(index, None, nbins, backend, strategy, None).view(np.int64)
    if not simple_weights(w):
        sums = np.zeros(nbins, w.dtype)
        np.add.at(sums, index, w)
        return sums
    if w.dtype.kind in "biu":
        # Exact modulo 2**64, then wrapped to the weights' type as numpy's sums wrap.
        wide = np.uint64 if w.dtype.kind == "u" else np.int64
        sums = np.zeros(nbins, wide)
        np.add.at(sums, index, w.astype(wide))
        return sums.astype(result_type)
    w64 = np.ascontiguousarray(w, dtype=np.float64)
    return _native.bincount(index, w64, nbins, backend, strategy, None).astype(
        result_type, copy=False)


def histogram(a, bins, range_, w, result_type, density, backend, strategy, out_of_range):
    """numpy's histogram of host samples ``a`` (weights ``w``, same shape, or None) for the calls
    ``takes`` accepts."""
    why = _reason(a, bins, range_, w)
    if out_of_range != "ignore":
        raise NotImplementedError(
            f"out_of_range={out_of_range!r} with {why} is not supported yet (only numpy's rule, "
            "'ignore', is implemented there)")
    if isinstance(bins, str):
        if w is not None:
            raise TypeError(
                "Automated estimation of the number of bins is not supported for weighted data")
        bins = estimate(a.ravel(), bins, range_, backend, strategy)
    flat = a.ravel()
    flat_w = None if w is None else w.ravel()
    if np.ndim(bins) == 0:
        nbins = int(bins)
        first, last, edges = uniform_edges(flat, nbins, range_)
        if simple_weights(w):
            keep, index = _uniform_bins(flat, first, last, nbins, edges)
        else:
            keep, index = _searched_bins(flat, edges)
        bin_edges = edges
    else:
        bin_edges = np.asarray(bins)
        nbins = bin_edges.size - 1
        if nbins < 1:
            empty = np.zeros(0, np.int64 if w is None else result_type)
            return (empty / 1.0 if density else empty), bin_edges
        keep, index = _searched_bins(flat, bin_edges)
    n = _count(index, None if flat_w is None else flat_w[keep], nbins, result_type, backend,
               strategy)
    if density:
        db = np.array(np.diff(bin_edges), float)
        return n / db / n.sum(), bin_edges
    return n, bin_edges


def estimate(flat: np.ndarray, rule: str, range_, backend, strategy) -> int:
    """numpy's number of bins for the estimator ``rule`` on ``flat``, computed in numpy's types
    (``_typed_estimators``); 'stone' counts with the library's histogram on ``backend``."""
    if rule not in _typed_estimators.RULES:
        raise ValueError(f"{rule!r} is not a valid estimator for `bins`")
    from . import _numpy_api  # the public histogram, which imports this module

    def histogram(x, bins, range):
        return _numpy_api.histogram(x, bins=bins, range=range, backend=backend,
                                    strategy=strategy)

    return _typed_estimators.nbins(flat, rule, outer_edges(flat, range_), range_ is not None,
                                   histogram)


def bin_edges(a, bins, range_) -> np.ndarray:
    """numpy's edges for the calls ``takes`` accepts."""
    if isinstance(bins, str):
        bins = estimate(a.ravel(), bins, range_, "auto", None)
    if np.ndim(bins) == 0:
        return uniform_edges(a.ravel(), int(bins), range_)[2]
    return np.asarray(bins)

"""numpy's bin estimators for float16 and bfloat16 GPU samples (torch, CuPy, JAX).

numpy computes a 16-bit sample's statistics in float16 (or, with ml_dtypes, bfloat16)
arithmetic. A 16-bit sample takes
one of 65536 values, so one device pass - the library's histogram of the samples' bit patterns -
tells how many samples hold each value, and that is all the order statistics need: the extremes
(`sqrt`, `sturges`, `rice`), the range's trim (numpy's own comparisons, of each distinct value)
and the quartiles' neighbours (`fd`, `auto`) come from those 65536 counts on the host, never
from the samples. `stone` histograms the samples on the device at each candidate bin count.
numpy's own arithmetic then makes the width as it makes it from the whole array: the extremes
as scalars of the samples' type, the quartiles by ``np.percentile`` over a short array holding
the same neighbours at the same fractional position. `scott` and `doane` need numpy's 16-bit
sums, which counts do not give: they are the library's device estimate, whose sum kernels read
float16 samples in numpy's order and rounding, and walk ml_dtypes' bfloat16 sums (one value
after another, each total rounded to bfloat16) with one warp that skips the values too small to
move the total."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import _typed_estimators

RULES = ("auto", "fd", "stone", "rice", "sturges", "sqrt", "scott", "doane")


def scalar_type(dtype: str):
    if dtype == "float16":
        return np.float16
    try:
        import ml_dtypes
    except ImportError:
        raise NotImplementedError(
            "numpy's estimators on bfloat16 GPU samples follow numpy with ml_dtypes' bfloat16, "
            "which is not installed: install ml_dtypes or give a number of bins") from None
    return ml_dtypes.bfloat16


class _Summary:
    """The trimmed samples as numpy's estimators read them: extremes, size and quartiles."""

    def __init__(self, lo, hi, size, dtype, order_statistics):
        self._lo, self._hi, self.size, self.dtype = lo, hi, size, dtype
        self._order_statistics = order_statistics

    def max(self):
        return self._hi

    def min(self):
        return self._lo

    def quartiles(self):
        return _percentiles(self.size, self._order_statistics, self.dtype)


def ranks(n: int):
    """The order statistics numpy's linear percentiles 75 and 25 of ``n`` samples read: the
    neighbours below and above each one's virtual index ``n * q - q``."""
    out = []
    for q in (0.75, 0.25):
        below = int(np.floor(n * q - q))
        out += [below, min(below + 1, n - 1)]
    return out


# Below this many samples their sorted values themselves come back.
_FEW = 12


def _percentiles(n: int, order_statistics, dtype):
    """``np.percentile(x, [75, 25])`` of ``n`` samples, from ``order_statistics(ranks)``: numpy's
    own percentile of a short sorted array holding the same values at the ranks it reads there,
    whose length has the same remainder modulo 4 as ``n`` (so the same fraction between the
    neighbours: numpy's virtual index is ``(n - 1) * q``)."""
    if n < _FEW:
        return np.percentile(np.array(order_statistics(list(range(n))), dtype), [75, 25])
    a75, b75, a25, b25 = order_statistics(ranks(n))
    m = _FEW + (n - _FEW) % 4
    r = ranks(m)
    y = np.empty(m, dtype)
    # Sorted: the 25th percentile's neighbours, then the 75th's, each value repeated up to the
    # next one's rank.
    y[: r[2] + 1] = a25
    y[r[2] + 1: r[0]] = b25
    y[r[0]] = a75
    y[r[0] + 1:] = b75
    return np.percentile(y, [75, 25])


def estimate(x, kind: str, dtype: str, rule: str, range_, histogram, pattern_counts,
             device_sums):
    """numpy's number of bins for ``rule`` on the 16-bit GPU samples ``x`` (the framework's
    array, any shape), over ``range_`` (Python floats) or the data's extremes.
    ``histogram(nbins, range)`` counts ``x`` on the device into a host array (for 'stone');
    ``pattern_counts()`` counts, on the device, the samples of each of the 65536 bit patterns
    (int64 on the host, indexed by the pattern). ``device_sums()`` is the library's device estimate
    (``(nbins, extremes)``), which `scott` and `doane` take: numpy's 16-bit sums need the samples
    in order, not their counts.
    Returns ``(nbins, extremes)``: the data's (min, max) as floats when no range was given, ()
    for no samples, None with a range."""
    st = scalar_type(dtype)
    if kind not in ("torch", "cupy", "jax"):
        raise NotImplementedError(
            "numpy's estimators on 16-bit GPU samples need torch, CuPy or JAX arrays: give a "
            "number of bins")
    n = int(x.numel()) if kind == "torch" else int(x.size)
    extremes = None
    if range_ is not None:
        first, last = range_
        if not all(type(v) is float or (type(v) is int and dtype == "float16")
                   for v in (first, last)):
            raise NotImplementedError(
                f"an estimator on {dtype} GPU samples takes the range as Python floats (numpy "
                "computes in other types beside other ranges)")
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
        if n == 0:
            return 1, extremes
        if rule in ("scott", "doane"):
            return device_sums()
        # numpy keeps the samples inside the outer edges (a range widened when empty), by its
        # own comparisons of the samples' type with them: here those of each distinct value.
        if first == last:
            first, last = first - 0.5, last + 0.5
        values, counts, nan = _distinct(pattern_counts(), np.dtype(st),
                                        _inside(np.dtype(st), first, last))
    elif n == 0:
        first, last = 0, 1
        extremes = ()
    elif rule in ("scott", "doane"):
        return device_sums()
    else:
        values, counts, nan = _distinct(pattern_counts(), np.dtype(st))
        # numpy's min and max: NaN where any sample is NaN.
        first, last = (st(np.nan), st(np.nan)) if nan else (values[0], values[-1])
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
        extremes = (float(first), float(last))
    if first == last:
        first, last = first - 0.5, last + 0.5
    outer = (first, last)
    if n == 0:
        return 1, extremes
    kept_n = int(counts.sum())
    if kept_n == 0:
        return 1, extremes
    ends = np.cumsum(counts)

    def order_statistics(at):
        # The value of rank r (from 0) is the first whose running count exceeds r.
        return [values[i] for i in np.searchsorted(ends, np.asarray(at), side="right")]

    summary = _Summary(values[0], values[-1], kept_n, np.dtype(st), order_statistics)

    def stone_counts(_x, bins, range):
        # numpy histograms the trimmed samples over the outer edges: the whole array over them
        # counts the same; over the data's own range, as numpy's bins from the data.
        return (histogram(bins, None if range_ is None else (float(first), float(last))),)

    w = _typed_estimators.width(summary, rule, outer, stone_counts)
    return _typed_estimators.bins_of_width(w, np.dtype(st), outer), extremes


_PATTERNS = np.arange(65536, dtype=np.uint16)
# Per dtype: the non-NaN patterns in ascending order of their values, those values, and the
# NaN patterns.
_ORDER: dict = {}


def _order(dtype: np.dtype):
    if dtype not in _ORDER:
        wide = _PATTERNS.view(dtype).astype(np.float32)  # exact, NaN staying NaN
        with np.errstate(invalid="ignore"):
            is_nan = np.isnan(wide)
        at = np.flatnonzero(~is_nan)
        at = at[np.argsort(wide[at], kind="stable")]
        _ORDER[dtype] = (at, _PATTERNS.view(dtype)[at], np.flatnonzero(is_nan))
    return _ORDER[dtype]


@lru_cache(maxsize=32)
def _inside(dtype: np.dtype, first, last) -> np.ndarray:
    """Which of the type's values (in ``_order``'s order) numpy keeps in ``[first, last]``, by
    numpy's own comparisons of the type with those bounds."""
    values = _order(dtype)[1]
    return (values >= first) & (values <= last)


def _distinct(pattern_counts: np.ndarray, dtype: np.dtype, inside=None):
    """``(values, counts, nan)``: the distinct non-NaN values the samples hold (only those
    ``inside`` marks, if given), ascending (of ``dtype``), how many samples hold each, and how
    many are NaN; from the counts of each bit pattern (``pattern_counts``)."""
    at, values, nan_at = _order(dtype)
    counts = pattern_counts[at]
    held = counts > 0
    if inside is not None:
        held &= inside
    return values[held], counts[held], int(pattern_counts[nan_at].sum())

"""numpy's bin estimators in the types the engines do not compute in.

The library's estimators (``_native.estimate_bins``, the device estimate) reproduce numpy's
arithmetic for float16, float32, float64 and the integers. numpy computes an estimator's
statistics in the samples' own type, and for long double or bfloat16 samples (or a range of a
type the engines do not follow, see ``_typed_bins``) that is arithmetic the engines do not have.
Here each rule is computed from its definition with numpy's own operations on the samples as
given (their extremes, standard deviation, mean and percentiles), so every rounding happens in
the type numpy's promotion gives; the number of bins then goes to the counting paths. 'stone'
histograms the samples at every candidate bin count through ``histogram`` (the library's)."""

from __future__ import annotations

import warnings

import numpy as np

RULES = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")

_UNSIGNED_OF = {np.dtype(t): np.dtype(u) for t, u in (
    (np.int8, np.uint8), (np.int16, np.uint16), (np.int32, np.uint32), (np.int64, np.uint64))}


def span(last, first):
    """``last - first`` in the type of the two values, as numpy's bins take it: signed integers
    subtracted as their unsigned type (an int8 range of -100..100 is 200 wide)."""
    dt = np.result_type(last, first)
    unsigned = _UNSIGNED_OF.get(dt)
    if unsigned is None:
        return np.subtract(last, first, dtype=dt)
    return np.subtract(np.asarray(last, dt), np.asarray(first, dt), casting="unsafe",
                       dtype=unsigned)


def _ptp(x):
    return span(x.max(), x.min())


def _sqrt(x, _range):
    return _ptp(x) / np.sqrt(x.size)


def _sturges(x, _range):
    return _ptp(x) / (np.log2(x.size) + 1.0)


def _rice(x, _range):
    return _ptp(x) / (2.0 * x.size ** (1.0 / 3))


def _std(x):
    return np.std(x)


def _standardized_cube_mean(x, sigma):
    """The mean of ``((x - mean(x)) / sigma) ** 3`` as numpy's `doane` computes it: standardised
    in place, in the deviations' own type, then cubed."""
    z = x - np.mean(x)
    np.true_divide(z, sigma, z)
    np.power(z, 3, z)
    return np.mean(z)


def _scott(x, _range):
    return (24.0 * np.pi ** 0.5 / x.size) ** (1.0 / 3.0) * _std(x)


def _doane(x, _range):
    if x.size <= 2:
        return 0.0
    n = x.size
    sg1 = np.sqrt(6.0 * (n - 2) / ((n + 1.0) * (n + 3)))
    sigma = _std(x)
    if not sigma > 0.0:
        return 0.0
    g1 = _standardized_cube_mean(x, sigma)
    return _ptp(x) / (1.0 + np.log2(n) + np.log2(1.0 + np.absolute(g1) / sg1))


def _quartiles(x):
    """``np.percentile(x, [75, 25])``, or for a summary of device samples (``_device_half``),
    its own, computed by numpy from the order statistics."""
    if isinstance(x, np.ndarray):
        return np.percentile(x, [75, 25])
    return x.quartiles()


def _fd(x, _range):
    q75, q25 = _quartiles(x)
    return 2.0 * np.subtract(q75, q25) * x.size ** (-1.0 / 3.0)


def _auto(x, range_):
    # The smaller of Sturges' width and Freedman-Diaconis' kept at least half the square root
    # rule's (Python's max and min: the first argument wins ties and NaN).
    relaxed_fd = max(_fd(x, range_), _sqrt(x, range_) / 2)
    return min(relaxed_fd, _sturges(x, range_))


def _stone(x, range_, histogram):
    n = x.size
    ptp = _ptp(x)
    if n <= 1 or ptp == 0:
        return 0

    def risk(nbins):
        p = histogram(x, bins=nbins, range=range_)[0] / n
        return (2 - (n + 1) * p.dot(p)) / (ptp / nbins)

    most = max(100, int(np.sqrt(n)))
    best = min(range(1, most + 1), key=risk)
    if best == most:
        warnings.warn("The number of bins estimated may be suboptimal.", RuntimeWarning,
                      stacklevel=5)
    return ptp / best


_WIDTHS = {"auto": _auto, "fd": _fd, "doane": _doane, "scott": _scott, "rice": _rice,
           "sturges": _sturges, "sqrt": _sqrt}


def nbins(flat: np.ndarray, rule: str, outer, trim: bool, histogram) -> int:
    """numpy's number of equal bins for ``rule`` on the flat samples ``flat`` whose outer edges
    are ``outer`` (``(first, last)`` as numpy's outer-edge rule gives them); ``trim``: a range
    was given, so only the samples inside it count. ``histogram`` is numpy's signature, used by
    'stone'."""
    first, last = outer
    if trim:
        keep = (flat >= first) & (flat <= last)
        if not keep.all():
            flat = flat[keep]
    if flat.size == 0:
        return 1
    return bins_of_width(width(flat, rule, outer, histogram), flat.dtype, outer)


def width(x, rule: str, outer, histogram):
    """numpy's bin width for ``rule`` on the (trimmed, non-empty) samples ``x``: an array, or
    (for every rule but `scott` and `doane`) a summary with ``max()``, ``min()``, ``size`` and
    ``quartiles()`` (``_device_half``)."""
    if rule == "stone":
        return _stone(x, outer, histogram)
    return _WIDTHS[rule](x, outer)


def bins_of_width(w, dtype, outer) -> int:
    """numpy's number of equal bins of width ``w`` over ``outer`` for samples of ``dtype``."""
    first, last = outer
    if not w:
        return 1
    if np.issubdtype(dtype, np.integer) and w < 1:
        w = 1
    bins = int(np.ceil(span(last, first) / w))
    if bins == 0:
        # As the library: numpy's 0 bins of an infinite width cannot count.
        raise ValueError(
            "invalid argument: the estimator's bin width is infinite (its statistics overflowed "
            "the samples' type): numpy makes 0 bins of it, which cannot count; give a number of "
            "bins")
    return bins

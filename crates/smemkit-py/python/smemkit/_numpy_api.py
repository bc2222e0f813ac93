"""numpy's ``histogram``, ``histogram_bin_edges`` and ``bincount`` over the smemkit engines.

numpy's argument rules, result types and density are applied here, with numpy's own arithmetic
where numpy computes something from the counts (density), so that those parts match it by
construction; the counting and numpy's binning rule run in the library (``smemkit._native``)."""

from __future__ import annotations

import operator
import warnings

import numpy as np

from . import _native
from . import _device
from . import _fast
from ._inputs import as_array, flat_pair, native_order

_ESTIMATORS = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")


def _missing(feature: str) -> NotImplementedError:
    return NotImplementedError(
        f"{feature} is not supported yet: it needs the library's numpy-parity work (issue 23)"
    )


def _check_keywords(backend, strategy, out_of_range, optional_policy=False):
    if not isinstance(backend, str):
        raise TypeError(f"backend must be 'auto', 'cpu' or 'cuda', not {backend!r}")
    if strategy is not None and not isinstance(strategy, str):
        raise TypeError(f"strategy must be a string or None, not {strategy!r}")
    if not isinstance(out_of_range, str) and not (optional_policy and out_of_range is None):
        raise TypeError(f"out_of_range must be 'ignore', 'clamp' or 'error', not {out_of_range!r}")


def _device_kind(a, backend):
    """The kind of a GPU array (see ``_device.device_kind``), None for host data; refuses
    ``backend='cpu'`` for GPU arrays."""
    kind = _device.device_kind(a)
    if kind is not None and backend == "cpu":
        raise ValueError(
            "backend='cpu' with an array on a GPU: smemkit reads GPU arrays in place with its "
            "CUDA engine; copy the array to the host for the CPU engine"
        )
    if kind is not None and backend not in ("auto", "cuda"):
        raise ValueError(f"backend must be 'auto', 'cpu' or 'cuda', not {backend!r}")
    return kind


def _host_deterministic(deterministic, weights):
    if deterministic and weights is not None:
        raise NotImplementedError(
            "deterministic=True with weights is implemented for GPU arrays (the device engine's "
            "exact sums); the host engines' float64 sums depend on how the work was split"
        )


def _samples(a) -> np.ndarray:
    """The samples as numpy's ``_ravel_and_check_weights`` sees them (before the ravel)."""
    a = as_array(a, "a")
    if a.dtype == np.bool_:
        warnings.warn(
            f"Converting input from {a.dtype} to {np.uint8} for compatibility.",
            RuntimeWarning,
            stacklevel=4,
        )
        a = a.astype(np.uint8)
    kind, size = a.dtype.kind, a.dtype.itemsize
    if kind == "f" and size == 2:
        raise _missing("float16 samples (numpy bins them in float16 arithmetic)")
    if kind == "f" and size not in (4, 8):
        raise _missing(f"{a.dtype} samples")
    if kind not in "iuf":
        raise TypeError(
            f"cannot histogram samples of dtype {a.dtype}: smemkit reads integers, float32 and float64"
        )
    return native_order(a)


def _weights(weights, shape):
    """numpy's weights check, and the weights as the library takes them (float32, float64, or
    integers and bool, whose sums the library keeps in their dtype as numpy does, refusing what
    it cannot sum exactly), with the dtype numpy gives the result."""
    if weights is None:
        return None, None
    w = as_array(weights, "weights")
    if w.shape != shape:
        raise ValueError("weights should have the same shape as a.")
    result_type = w.dtype
    kind = w.dtype.kind
    if kind == "f" and w.dtype.itemsize in (4, 8):
        return native_order(w), result_type
    if kind == "f" and w.dtype.itemsize == 2:
        return w.astype(np.float32), result_type
    if kind in "biu":
        return native_order(w), result_type
    raise TypeError(f"weights of dtype {w.dtype} are not supported (expected a real number type)")


def _device_bins(a, kind, bins, range_, weights):
    """``_bins`` for GPU samples: an estimator's name is resolved on the device (numpy's bins
    from statistics computed where the samples are), ``(nbins, None)`` over a range or
    ``(None, edges)`` over the data's extremes; ``'stone'`` raises NotImplementedError."""
    if not isinstance(bins, str):
        return _bins(bins)
    if bins not in _ESTIMATORS:
        raise ValueError(f"{bins!r} is not a valid estimator for `bins`")
    if weights is not None:
        raise TypeError(
            "Automated estimation of the number of bins is not supported for weighted data")
    return _device.estimate(a, kind, bins, range_)


def _bins(bins):
    """``(nbins, None)`` for a count, ``(None, edges)`` for an array of edges (numpy's checks)."""
    if isinstance(bins, str):
        raise ValueError(f"{bins!r} is not a valid estimator for `bins`")
    if np.ndim(bins) == 0:
        try:
            n = operator.index(bins)
        except TypeError as e:
            raise TypeError("`bins` must be an integer, a string, or an array") from e
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        return n, None
    if np.ndim(bins) != 1:
        raise ValueError("`bins` must be 1d, when an array")
    edges = np.asarray(bins)
    if np.any(edges[:-1] > edges[1:]):
        raise ValueError("`bins` must increase monotonically, when an array")
    if edges.dtype.kind not in "biuf":
        raise TypeError(f"bin edges of dtype {edges.dtype} are not supported")
    as_f64 = edges.astype(np.float64)
    if edges.dtype.kind in "iu" and np.any(as_f64.astype(edges.dtype) != edges):
        raise _missing("integer edges not exactly representable in float64 (beyond 2**53)")
    if edges.size and np.isinf(as_f64).any():
        raise _missing("infinite bin edges")
    if edges.size > 1 and np.any(as_f64[:-1] == as_f64[1:]):
        raise _missing("zero-width bins (equal adjacent edges)")
    return None, as_f64


def _estimate(a, name, range_, weights):
    """numpy's number of equal bins for the estimator ``name`` (host samples)."""
    if name not in _ESTIMATORS:
        raise ValueError(f"{name!r} is not a valid estimator for `bins`")
    if weights is not None:
        raise TypeError(
            "Automated estimation of the number of bins is not supported for weighted data")
    rng = None
    if range_ is not None:
        first, last = range_
        rng = (float(first), float(last))
    flat, _ = flat_pair(a, None)
    return _native.estimate_bins(flat, name, rng)


def _range(range_, a):
    """The range as two floats, and the samples promoted as numpy promotes them with it."""
    if range_ is None:
        return None, a
    first, last = range_
    bin_type = np.result_type(first, last, a)
    if a.dtype == np.float32 and bin_type == np.float64:
        # A float64 range (numpy scalars or arrays) makes numpy bin float32 samples in float64.
        a = a.astype(np.float64)
    return (float(first), float(last)), a


def _edges_dtype(a):
    return np.float32 if a.dtype == np.float32 else np.float64


def histogram(a, bins=10, range=None, weights=None, density=False, *, backend="auto",
              strategy=None, out_of_range="ignore", deterministic=False):
    _check_keywords(backend, strategy, out_of_range)
    kind = _device_kind(a, backend)
    if kind is not None:
        nbins, edges = _device_bins(a, kind, bins, range, weights)
        given_edges = edges is not None and not isinstance(bins, str)
        result = _device.histogram(
            a, kind, nbins, edges, None if edges is not None else range, weights, density,
            out_of_range, strategy, bool(deterministic), bins if given_edges else None,
        )
        if kind == "torch" or kind == "cupy":
            _fast.learn_histogram(kind, a, bins, range, weights, density, backend, strategy,
                                  out_of_range, deterministic, result)
        return result
    _host_deterministic(deterministic, weights)
    given = a
    a = _samples(a)
    w, result_type = _weights(weights, a.shape)
    nbins, edges = _bins(_estimate(a, bins, range, weights) if isinstance(bins, str) else bins)
    if w is not None and w.dtype == np.bool_ and edges is not None:
        # numpy adds int64 cumulative sums into a bool result there, which its casting refuses.
        raise TypeError("Cannot cast ufunc 'add' output from dtype('int64') to dtype('bool') "
                        "with casting rule 'same_kind'")
    if edges is not None:
        user_edges = np.asarray(bins)
        if edges.size < 2:
            # numpy: no bins, no counts.
            empty = np.zeros(0, np.int64 if w is None else result_type)
            return (empty / 1.0 if density else empty), user_edges
        rng = None
    else:
        rng, a = _range(range, a)
    flat, flat_w = flat_pair(a, w)
    counts, lib_edges = _native.histogram(
        flat, flat_w, (nbins, rng, edges), (out_of_range, backend, strategy)
    )
    if w is None:
        n = counts.view(np.int64)
    else:
        n = counts.astype(result_type, copy=False)
    bin_edges = user_edges if edges is not None else lib_edges.astype(_edges_dtype(a), copy=False)
    if density:
        db = np.array(np.diff(bin_edges), float)
        return n / db / n.sum(), bin_edges
    if w is None:
        _fast.learn_host_histogram(given, bins, range, weights, density, backend, strategy,
                                   out_of_range, deterministic, bin_edges)
    return n, bin_edges


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    kind = _device.device_kind(a)
    if kind is not None:
        nbins, edges = _device_bins(a, kind, bins, range, weights)
        given_edges = edges is not None and not isinstance(bins, str)
        return _device.bin_edges(a, kind, nbins, edges, range, bins if given_edges else None)
    a = _samples(a)
    _weights(weights, a.shape)
    nbins, edges = _bins(_estimate(a, bins, range, weights) if isinstance(bins, str) else bins)
    if edges is not None:
        return np.asarray(bins)
    rng, a = _range(range, a)
    flat, _ = flat_pair(a, None)
    edges = _native.histogram_bin_edges(flat, nbins, rng)
    return edges.astype(_edges_dtype(a), copy=False)


def bincount(x, weights=None, minlength=0, *, backend="auto", strategy=None, out_of_range=None,
             deterministic=False):
    _check_keywords(backend, strategy, out_of_range, optional_policy=True)
    kind = _device_kind(x, backend)
    if kind is not None:
        given_minlength = minlength
        minlength = _minlength(minlength)
        result = _device.bincount(x, kind, weights, minlength, out_of_range, strategy,
                                  bool(deterministic))
        if kind == "torch" or kind == "cupy":
            _fast.learn_bincount(kind, x, weights, given_minlength, backend, strategy,
                                 out_of_range, deterministic)
        return result
    _host_deterministic(deterministic, weights)
    given, given_minlength = x, minlength
    x = as_array(x, "x")
    if x.ndim == 0:
        raise ValueError("object of too small depth for desired array")
    if x.ndim > 1:
        raise ValueError("object too deep for desired array")
    if x.dtype == np.bool_:
        x = x.view(np.uint8)
    elif x.size == 0 and x.dtype.kind == "f" and not isinstance(given, np.ndarray):
        x = x.astype(np.int64)  # numpy accepts an empty list (an empty float64 array it refuses)
    elif x.dtype.kind not in "iu":
        raise TypeError(
            f"Cannot cast array data from {x.dtype!r} to dtype('int64') according to the rule 'safe'"
        )
    minlength = _minlength(minlength)
    if out_of_range is not None and minlength < 1:
        raise ValueError(
            "bincount with out_of_range needs minlength >= 1: the result has exactly minlength bins"
        )
    if x.size == 0 and out_of_range is None:
        # numpy: zeros of minlength, int64 even with weights, which it does not look at.
        return np.zeros(minlength, np.int64)
    w = None
    if weights is not None:
        w = as_array(weights, "weights")
        if w.ndim != 1:
            raise ValueError(
                "object too deep for desired array" if w.ndim > 1 else
                "object of too small depth for desired array"
            )
        if w.dtype.kind not in "biuf":
            raise TypeError(
                f"Cannot cast array data from {w.dtype!r} to dtype('float64') according to the rule 'safe'"
            )
        if w.dtype not in (np.float32, np.float64) or not w.dtype.isnative:
            w = w.astype(np.float64)
        w = np.ascontiguousarray(native_order(w))
    x = np.ascontiguousarray(native_order(x))
    counts = _native.bincount(x, w, minlength, backend, strategy, out_of_range)
    if w is None:
        _fast.learn_host_bincount(given, weights, given_minlength, backend, strategy,
                                  out_of_range, deterministic)
    return counts if w is not None else counts.view(np.int64)


def _minlength(minlength):
    if minlength is None:
        raise TypeError("use 0 instead of None for minlength")
    try:
        minlength = operator.index(minlength)
    except TypeError as e:
        raise TypeError(f"'minlength' must be an integer, not {type(minlength).__name__}") from e
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    return minlength

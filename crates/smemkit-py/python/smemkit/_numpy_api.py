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
from . import _device_digitize
from . import _device_weights
from . import _fast
from . import _ranges
from . import _typed_bins
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


def _half_name(a: np.ndarray):
    """``'float16'`` or ``'bfloat16'`` (ml_dtypes' type) for 16-bit float samples, else None."""
    if a.dtype.kind == "f" and a.dtype.itemsize == 2:  # either byte order
        return "float16"
    if a.dtype.name == "bfloat16" and a.dtype.itemsize == 2:
        return "bfloat16"
    return None


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
    if _half_name(a) is not None:
        return native_order(a)
    kind, size = a.dtype.kind, a.dtype.itemsize
    if _typed_bins.is_long(a.dtype):
        return a  # binned in long double (_typed_bins)
    if kind == "f" and size not in (4, 8):
        raise _missing(f"{a.dtype} samples")
    if kind not in "iuf":
        raise TypeError(
            f"cannot histogram samples of dtype {a.dtype}: smemkit reads integers, float16, "
            "bfloat16 (ml_dtypes), float32 and float64"
        )
    return native_order(a)


def _native_samples(flat: np.ndarray):
    """``(array, half)`` as the native calls take samples: 16-bit floats as their bits."""
    half = _half_name(flat)
    return (flat.view(np.uint16), half) if half is not None else (flat, None)


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
    if kind == "O" or _typed_bins.is_long(w.dtype):
        return w, result_type  # summed in their own type, as numpy sums them (_typed_bins)
    raise TypeError(f"weights of dtype {w.dtype} are not supported (expected a real number type)")


def _device_bins(a, kind, bins, range_, weights):
    """``_bins`` for GPU samples: an estimator's name is resolved on the device (numpy's bins
    from statistics computed where the samples are), ``(nbins, None)`` over a range or
    ``(None, edges)`` over the data's extremes."""
    if not isinstance(bins, str):
        nbins, edges = _bins(bins)
        if edges is not None and edges.dtype.kind in "iu":
            as_f64 = edges.astype(np.float64)
            if np.any(as_f64.astype(edges.dtype) != edges):
                raise _missing("integer edges of GPU samples not exactly representable in "
                               "float64 (beyond 2**53; host arrays take them)")
            edges = as_f64
        return nbins, edges
    if bins not in _ESTIMATORS:
        raise ValueError(f"{bins!r} is not a valid estimator for `bins`")
    if weights is not None:
        raise TypeError(
            "Automated estimation of the number of bins is not supported for weighted data")
    return _device.estimate(a, kind, bins, range_)


def _bins(bins):
    """``(nbins, None)`` for a count, ``(None, edges)`` for an array of edges (numpy's checks):
    float64, or int64 / uint64 for integer edges."""
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
    if edges.dtype.kind in "iu":
        # Kept exact: numpy compares integer samples with integer edges in integers.
        return None, edges.astype(np.uint64 if edges.dtype == np.uint64 else np.int64)
    # Infinite edges and equal neighbours (bins of zero width) are numpy's too.
    return None, edges.astype(np.float64)


def _estimate(a, name, range_, weights, backend="auto", strategy=None):
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
    if _half_name(flat) == "bfloat16" and not (
            range_ is None or all(type(v) is float for v in range_)):
        # The library follows numpy with ml_dtypes beside Python floats; other scalars change
        # how numpy compares and divides (numpy's own arithmetic then).
        return _typed_bins.estimate(flat, name, range_, backend, strategy)
    flat, half = _native_samples(flat)
    return _native.estimate_bins(flat, name, rng, half)


def _range(range_, a):
    """``(range, a)``: the range as numpy computes with it, and the samples promoted as numpy
    promotes them with it. The range is ``(lo, hi)`` (floats, widened to float64 as numpy widens
    Python numbers), ``('sample', lo, hi)`` where numpy computes the edges and bins in the
    samples' own float type (float32 or float16 scalars, as ``range=(x.min(), x.max())`` gives),
    ``('int', lo, hi)`` (see ``_ranges.INT_RANGE``) or ``('narrow', lo, hi, type)`` (see
    ``_ranges.NARROW``)."""
    if range_ is None:
        return None, a
    first, last = range_
    bin_type = np.result_type(first, last, a)
    python_floats = type(first) is float and type(last) is float
    if _half_name(a) == "bfloat16" and python_floats:
        # Python floats beside bfloat16 samples: ml_dtypes bins them as float64 but compares
        # them with the range in float32 (keeping a value the upper bound rounds onto), as the
        # engines do given the samples' own type.
        pass
    elif (a.dtype.kind == "f" or _half_name(a)) and bin_type != a.dtype:
        # A wider range (numpy scalars or arrays of a wider type) makes numpy bin the samples in
        # that type; the widening is exact.
        a = a.astype(bin_type)
    arithmetic = _ranges.range_arithmetic(first, last, a.dtype, _half_name(a))
    range_type = np.result_type(first, last)
    if arithmetic == _ranges.IN_RANGE_TYPE:
        a = a.astype(range_type)  # exact: numpy promotes these samples to the range's type
        arithmetic = _ranges.SAMPLE_TYPE
    if arithmetic == _ranges.NARROW:
        lo, hi = float(range_type.type(first)), float(range_type.type(last))
        _ranges.check_range(lo, hi)
        return (_ranges.NARROW, lo, hi, range_type.name), a
    if arithmetic == _ranges.SAMPLE_TYPE:
        as_type = a.dtype.type
        lo, hi = float(as_type(first)), float(as_type(last))
        _ranges.check_range(lo, hi)
        return (_ranges.SAMPLE_TYPE, lo, hi), a
    if arithmetic == _ranges.INT_RANGE:
        _ranges.check_range(first, last)
        return (_ranges.INT_RANGE, first, last), a
    return (float(first), float(last)), a


def _edges_array(edges: np.ndarray, dtype: str) -> np.ndarray:
    """The library's float64 edges (exact) in numpy's dtype for them."""
    if dtype == "bfloat16":
        import ml_dtypes  # present: the samples were of its type

        return edges.astype(ml_dtypes.bfloat16)
    return edges.astype(dtype, copy=False)


def histogram(a, bins=10, range=None, weights=None, density=False, *, backend="auto",
              strategy=None, out_of_range="ignore", deterministic=False):
    _check_keywords(backend, strategy, out_of_range)
    kind = _device_kind(a, backend)
    if kind is not None and weights is not None:
        parts = _device_weights.complex_parts(weights)
        if parts is not None:
            return _device_complex_weighted(a, bins, range, parts, density, backend, strategy,
                                            out_of_range, deterministic)
    if kind is not None:
        if not isinstance(bins, str) and _device.device_kind(bins) is not None:
            bins = _device_digitize._host_bins(bins)  # edges on the GPU: read back (a sync)
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
    if weights is not None and as_array(weights, "weights").dtype.kind == "c":
        return _complex_weighted(a, bins, range, weights, density, backend, strategy,
                                 out_of_range)
    if as_array(a, "a").dtype.kind in "mM":
        return _time_histogram(a, bins, weights, density, backend, strategy, out_of_range)
    a = _samples(a)
    w, result_type = _weights(weights, a.shape)
    if _typed_bins.takes(a, bins, range, w, _half_name(a)):
        if not isinstance(bins, str):
            _bins(bins)  # numpy's checks of the bins
            _check_bool_weights(w, np.ndim(bins) == 1)
        return _typed_bins.histogram(a, bins, range, w, result_type, density, backend, strategy,
                                     out_of_range)
    nbins, edges = _bins(_estimate(a, bins, range, weights, backend, strategy)
                         if isinstance(bins, str) else bins)
    _check_bool_weights(w, edges is not None)
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
    flat, half = _native_samples(flat)
    counts, lib_edges, edges_dtype = _native.histogram(
        flat, flat_w, (nbins, rng, edges), (out_of_range, backend, strategy), half
    )
    if w is None:
        n = counts.view(np.int64)
    else:
        n = counts.astype(result_type, copy=False)
    bin_edges = user_edges if edges is not None else _edges_array(lib_edges, edges_dtype)
    if density:
        db = np.array(np.diff(bin_edges), float)
        return n / db / n.sum(), bin_edges
    if w is None:
        _fast.learn_host_histogram(given, bins, range, weights, density, backend, strategy,
                                   out_of_range, deterministic, bin_edges)
    return n, bin_edges


def _check_bool_weights(w, explicit_edges: bool):
    if w is not None and w.dtype == np.bool_ and explicit_edges:
        # numpy adds int64 cumulative sums into a bool result there, which its casting refuses.
        raise TypeError("Cannot cast ufunc 'add' output from dtype('int64') to dtype('bool') "
                        "with casting rule 'same_kind'")


def _complex_weighted(a, bins, range_, weights, density, backend, strategy, out_of_range):
    """numpy's histogram with complex weights: the sums of the real and of the imaginary parts,
    each as numpy sums real weights (its own code bins the two parts the same way)."""
    w = as_array(weights, "weights")
    real, edges = histogram(a, bins, range_, w.real, False, backend=backend, strategy=strategy,
                            out_of_range=out_of_range)
    imag, _ = histogram(a, bins, range_, w.imag, False, backend=backend, strategy=strategy,
                        out_of_range=out_of_range)
    n = np.empty(real.shape, w.dtype)
    n.real, n.imag = real, imag
    if density:
        db = np.array(np.diff(edges), float)
        return n / db / n.sum(), edges
    return n, edges


def _device_complex_weighted(a, bins, range_, parts, density, backend, strategy, out_of_range,
                             deterministic):
    """numpy's histogram with complex weights, of GPU arrays: the real and imaginary sums as two
    device histograms, combined on the device."""
    kw = dict(backend=backend, strategy=strategy, out_of_range=out_of_range,
              deterministic=deterministic)
    real, edges = histogram(a, bins, range_, parts[0], False, **kw)
    imag, _ = histogram(a, bins, range_, parts[1], False, **kw)
    n = _device_weights.combine_complex(real, imag)
    if density:
        db = edges[1:] - edges[:-1]
        db = db.double() if _device.device_kind(db) == "torch" else db.astype("float64")
        return n / db / n.sum(), edges
    return n, edges


def _time_edges(a: np.ndarray, bins):
    """``(edges, common)``: the given edges of datetime64 or timedelta64 samples ``a`` and the
    dtype numpy compares the two in. Explicit edges of the samples' kind only: numpy cannot
    space equal bins over them either."""
    if isinstance(bins, str) or np.ndim(bins) != 1:
        kind = "datetime64" if a.dtype.kind == "M" else "timedelta64"
        raise TypeError(
            f"{a.dtype} samples need their bin edges as an array of {kind} values: equal bins "
            "(a bin count, an estimator, a range) cannot be spaced over them")
    edges = np.asarray(bins)
    if edges.dtype.kind != a.dtype.kind:
        raise TypeError(f"bin edges of dtype {edges.dtype} do not compare with {a.dtype} samples")
    if np.any(np.isnat(edges)):
        raise ValueError("bin edges may not be NaT")
    return edges, np.result_type(a.dtype, edges.dtype)


def _time_histogram(a, bins, weights, density, backend, strategy, out_of_range):
    """numpy's histogram of datetime64 or timedelta64 samples, compared as int64 counts of the
    common unit; NaT samples are in no bin, as numpy sorts them after every edge."""
    a = as_array(a, "a")
    edges, common = _time_edges(a, bins)
    if out_of_range != "ignore" and np.any(np.isnat(a)):
        raise ValueError(f"NaT samples with out_of_range={out_of_range!r}: NaT lies below or "
                         "above no edge")
    # NaT is int64's minimum: below every edge, so in no bin, as in numpy.
    n, _ = histogram(np.asarray(a, common).view(np.int64), edges.astype(common).view(np.int64),
                     None, weights, False, backend=backend, strategy=strategy,
                     out_of_range=out_of_range)
    if density:
        db = np.array(np.diff(edges), float)
        return n / db / n.sum(), edges
    return n, edges


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    kind = _device.device_kind(a)
    if kind is not None:
        nbins, edges = _device_bins(a, kind, bins, range, weights)
        given_edges = edges is not None and not isinstance(bins, str)
        return _device.bin_edges(a, kind, nbins, edges, range, bins if given_edges else None)
    if as_array(a, "a").dtype.kind in "mM":
        return _time_edges(as_array(a, "a"), bins)[0]
    a = _samples(a)
    _weights(weights, a.shape)
    if _typed_bins.takes(a, bins, range, None, _half_name(a)):  # the edges take no weights
        if not isinstance(bins, str):
            _bins(bins)
        return _typed_bins.bin_edges(a, bins, range)
    nbins, edges = _bins(_estimate(a, bins, range, weights) if isinstance(bins, str) else bins)
    if edges is not None:
        return np.asarray(bins)
    rng, a = _range(range, a)
    flat, _ = flat_pair(a, None)
    flat, half = _native_samples(flat)
    edges, edges_dtype = _native.typed_bin_edges(flat, nbins, rng, half)
    return _edges_array(edges, edges_dtype)


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
    # numpy's TypeError, as operator.index words it ("'str' object cannot be interpreted as an
    # integer").
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    return minlength

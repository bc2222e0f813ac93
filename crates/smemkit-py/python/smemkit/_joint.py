"""numpy's ``histogramdd``, ``histogram2d`` and ``digitize`` over the library's CPU engine.

numpy's argument rules and result types are applied here (``histogram2d`` is ``histogramdd`` of
``[x, y]``, as in numpy; joint counts are float64, as numpy's are); the binning and counting run
in the library. GPU samples of ``histogramdd`` / ``histogram2d`` go to ``_device_joint`` (read in
place on the device), ``digitize`` of GPU arrays to ``_device_digitize``.
"""

from __future__ import annotations

import operator

import numpy as np

from . import _device, _device_digitize, _device_joint, _native
from ._inputs import as_array, native_order



def _no_gpu(obj, what: str):
    if _device.device_kind(obj) is not None:
        raise TypeError(
            f"{what}: the bins are on a GPU but x is not: pass x on the GPU too, or the bins on "
            "the host (e.g. bins.cpu().numpy() or bins.get())"
        )


def _readable(a: np.ndarray, what: str) -> np.ndarray:
    """``a`` as the library reads it: bool as uint8, native byte order (16-bit floats are
    widened by the caller, see ``_half_axes``)."""
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
    if _is_bfloat16(a.dtype):
        return a  # widened by the caller, as float16
    kind, size = a.dtype.kind, a.dtype.itemsize
    if kind == "c":
        raise TypeError(f"{what} may not be complex")
    if kind == "f" and size not in (2, 4, 8):
        raise NotImplementedError(f"{a.dtype} {what} are not supported")
    if kind not in "iuf":
        raise TypeError(f"cannot histogram {what} of dtype {a.dtype}")
    return native_order(a)


def _is_bfloat16(dtype: np.dtype) -> bool:
    return dtype.name == "bfloat16" and dtype.itemsize == 2  # ml_dtypes'


def _exact_edges(edges: np.ndarray, what: str) -> np.ndarray:
    """Edges as float64, refusing integers that float64 would change."""
    if _is_bfloat16(edges.dtype):
        return edges.astype(np.float64)  # exact
    if edges.dtype.kind not in "biuf":
        raise TypeError(f"{what} of dtype {edges.dtype} are not supported")
    as_f64 = edges.astype(np.float64)
    if edges.dtype.kind in "iu" and np.any(as_f64.astype(edges.dtype) != edges):
        raise NotImplementedError(
            f"integer {what} not exactly representable in float64 (beyond 2**53) are not supported yet")
    return as_f64


def _axes_of(bins, range, d, int_edges=False):
    """numpy's per-axis bins rules: ``(axes, given)``, one ``(nbins, range, edges)`` per axis (the
    form the native calls take) and the given edges as passed (None for a bin count). With
    ``int_edges`` integer edges stay int64 / uint64 (the CPU engine compares integer samples with
    them exactly, as numpy does); else they must be exact in float64."""
    try:
        m = len(bins)
        if m != d:
            raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    except TypeError:
        bins = d * [bins]
    if range is None:
        range = (None,) * d
    elif len(range) != d:
        raise ValueError("range argument must have one entry per dimension")
    axes, given = [], []
    for i in builtins_range(d):
        b = bins[i]
        if _device.device_kind(b) is not None:
            b = _device_digitize._host_bins(b)  # edges on the GPU: read back (a sync)
        if np.ndim(b) == 0:
            if b < 1:
                raise ValueError(f"`bins[{i}]` must be positive, when an integer")
            try:
                nb = operator.index(b)
            except TypeError as e:
                raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from e
            r = range[i]
            if r is not None:
                lo, hi = r
                for v in (lo, hi):
                    if isinstance(v, np.generic) and not isinstance(v, (np.float64, np.integer)):
                        raise NotImplementedError(
                            f"range[{i}] of {type(v).__name__} scalars (numpy would bin in that "
                            "type): pass Python numbers")
                if lo > hi:
                    raise ValueError(f"max must be larger than min in range parameter.")
                if not (np.isfinite(lo) and np.isfinite(hi)):
                    raise ValueError(f"supplied range of [{lo}, {hi}] is not finite")
                r = (float(lo), float(hi))
            axes.append((nb, r, None))
            given.append(None)
        elif np.ndim(b) == 1:
            e = np.asarray(b)
            if np.any(e[:-1] > e[1:]):
                raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an array")
            if int_edges and e.dtype.kind in "biu":
                exact = e.astype(np.uint64 if e.dtype == np.uint64 else np.int64)
                axes.append((None, None, np.ascontiguousarray(exact)))
            else:
                axes.append((None, None, _exact_edges(e, f"bins[{i}] edges")))
            given.append(e)
        else:
            raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
    return axes, given


def histogramdd(sample, bins=10, range=None, density=None, weights=None, *, backend="auto"):
    if _device_joint.is_device(sample, weights):
        return _device_joint.histogramdd(sample, bins, range, density, weights, backend, _axes_of)
    # numpy: anything with a 2-D shape as it is; the rest through atleast_2d(...).T
    try:
        _, _ = sample.shape
        data = as_array(sample, "sample")
    except (AttributeError, ValueError):
        data = np.atleast_2d(sample).T
    n, d = data.shape
    data = _readable(data, "samples")
    if weights is not None:
        weights = np.asarray(weights)
        if weights.shape != (n,):
            raise ValueError(
                f"weights must be 1-D with one weight per sample ({n}), not shape {weights.shape}")
        if weights.dtype.kind not in "biuf":
            raise TypeError(f"weights of dtype {weights.dtype} are not supported")
        if weights.dtype not in (np.float32, np.float64) or not weights.dtype.isnative:
            weights = weights.astype(np.float64)
        weights = np.ascontiguousarray(weights)
    axes, given = _axes_of(bins, range, d, int_edges=True)
    half_edges = None
    if (data.dtype.kind == "f" and data.dtype.itemsize == 2) or _is_bfloat16(data.dtype):
        data, axes, given, half_edges = _half_axes(data, axes, given)
    if data.flags.c_contiguous:
        arrays, layout = [data.reshape(-1)], "rows"
    elif data.flags.f_contiguous:
        arrays, layout = [data.reshape(-1, order="F")], "columns"
    else:
        arrays, layout = [np.ascontiguousarray(data).reshape(-1)], "rows"
    counts, dens, edges, shape = _native.histogramdd(arrays, layout, weights, axes, bool(density),
                                                     backend)
    f32_edges = data.dtype == np.float32 and n > 0
    out_edges = []
    for i, e in enumerate(edges):
        if given[i] is not None:
            out_edges.append(given[i])
        elif f32_edges and axes[i][1] is None:
            out_edges.append(e.astype(np.float32))  # numpy's linspace of float32 extremes
        else:
            out_edges.append(e)
    hist = counts.view(np.int64) if weights is None else counts
    hist = hist.astype(np.float64).reshape(shape)
    if density and half_edges is not None:
        # numpy divides by the widths of its edges computed in their type (float16, or float32
        # for one bfloat16 value widened by 0.5), one axis at a time.
        total = hist.sum()
        for i in builtins_range(d):
            if half_edges[i]:
                widths = np.diff(out_edges[i])
            else:
                widths = np.diff(np.asarray(out_edges[i]))
            widths_shape = np.ones(d, int)
            widths_shape[i] = widths.size
            hist = hist / widths.reshape(widths_shape)
        return hist / total, out_edges
    if density:
        return dens.reshape(shape), out_edges
    return hist, out_edges


builtins_range = range


def _half_axes(data, axes, given):
    """float16 and bfloat16 samples as numpy (with ml_dtypes) bins them, over the library's
    float64 engine: the samples widened (exactly; numpy compares them with the edges in the
    common type), and each axis binned over the data's range given numpy's own edges (its
    ``linspace`` of the 16-bit extremes: float16 edges for float16, float64 for bfloat16), passed
    on as explicit edges. Returns the widened data, the axes, the edges returned per axis and
    which axes have 16-bit edges (for the density)."""
    axes, given, half = list(axes), list(given), []
    for i, (nb, r, edges) in enumerate(axes):
        if edges is not None or r is not None or nb is None:
            half.append(False)
            continue
        column = data[:, i]
        if column.size == 0:
            lo, hi = 0, 1
        else:
            lo, hi = column.min(), column.max()
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        e = np.linspace(lo, hi, nb + 1)
        axes[i] = (None, None, e.astype(np.float64))
        given[i] = e
        half.append(e.dtype == np.float16)
    return data.astype(np.float64), axes, given, half


def histogram2d(x, y, bins=10, range=None, density=None, weights=None, *, backend="auto"):
    if len(x) != len(y):
        raise ValueError("x and y must have the same length.")
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        xedges = yedges = bins if _device.device_kind(bins) is not None else np.asarray(bins)
        bins = [xedges, yedges]
    hist, edges = histogramdd([x, y], bins, range, density, weights, backend=backend)
    return hist, edges[0], edges[1]


def digitize(x, bins, right=False):
    kind = _device.device_kind(x)
    if kind is not None:
        return _device_digitize.digitize(x, kind, bins, right, _exact_edges)
    _no_gpu(bins, "digitize")
    x = as_array(x, "x")
    b = np.asarray(bins)
    if b.ndim == 0:
        raise ValueError("object of too small depth for desired array")
    if b.ndim > 1:
        raise ValueError("object too deep for desired array")
    if x.dtype.kind == "c" or b.dtype.kind == "c":
        raise TypeError("x may not be complex")
    flat = np.ascontiguousarray(x).reshape(-1)
    if flat.dtype == np.bool_:
        flat = flat.view(np.uint8)
    elif flat.dtype == np.float16:
        flat = flat.astype(np.float32)  # exact; numpy compares in the common type
    if flat.dtype.kind not in "iuf":
        raise TypeError(f"cannot digitize x of dtype {x.dtype}")
    if b.dtype.kind in "biu":
        # Kept exact: numpy compares integer samples with integer bins in integers (the library
        # compares in float64, as numpy, where numpy's common type is float64).
        edges = b.astype(np.uint64 if b.dtype == np.uint64 else np.int64)
    elif b.dtype.kind == "f":
        edges = b.astype(np.float64)
    else:
        raise TypeError(f"bins of dtype {b.dtype} are not supported")
    out = _native.digitize(native_order(flat), np.ascontiguousarray(edges), bool(right))
    return out.reshape(x.shape)

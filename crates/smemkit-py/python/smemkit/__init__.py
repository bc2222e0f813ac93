"""smemkit: numpy's histogram functions over smemkit's GPU and CPU histogram engines.

``histogram``, ``histogram_bin_edges`` and ``bincount`` take numpy's arguments and return what
numpy returns (the same counts, bit for bit, the same dtypes), computed by smemkit's engines. GPU
arrays run on the GPU; for host arrays ``backend='auto'`` picks the engine estimated to finish
first counting the copy to the GPU and its setup (small arrays stay on the rayon CPU engine, large
ones go to the GPU when a CUDA driver and device are present). Beyond numpy's arguments they take ``backend`` (``'auto'``, ``'cpu'``, ``'cuda'``),
``strategy`` (force a GPU strategy; see :func:`plan`) and, for ``histogram``, ``out_of_range``
(``'ignore'`` as numpy, ``'clamp'`` into the end bins, ``'error'`` to fail on any sample outside
the bins or NaN).

Arguments whose type takes numpy's functions over through ``__array_function__`` (dask or xarray
arrays, arrays with units) get the call, with numpy's function, as numpy hands it to them.

Inputs: numpy arrays of any integer type, float32 or float64, any shape (flattened), memory order
or strides, read in place when their memory is one block (C or Fortran order); host tensors of
other libraries through DLPack, read in place; anything else through ``numpy.asarray``.

GPU arrays (torch CUDA tensors, CuPy and JAX arrays, anything with ``__dlpack__`` on a CUDA device
or ``__cuda_array_interface__``) are read in place by the device-resident CUDA engine, enqueued on
the producer's current stream (torch's and CuPy's current stream; DLPack's ``stream`` argument;
the interface's ``stream`` field) without waiting for the GPU, and the results are of the input's
kind on the same device: torch in, torch out (int64 counts; sums of the weights' dtype; edges
float32 for float32 samples, else float64, as numpy's), CuPy in, CuPy out, JAX in, JAX out
(allocated by torch or CuPy, whichever is installed, and handed to JAX through DLPack). Their
memory must be one block (a strided view is a ValueError naming ``.contiguous()``) starting
16-byte aligned. float16 and bfloat16 GPU samples are binned as numpy bins them (bfloat16 through
ml_dtypes) over ``range=`` of Python numbers or explicit edges (float16 edges float16, bfloat16's
float64), or over the data's range as numpy computes it in the 16-bit type (the minimum and
maximum reduced on the device and read back: a synchronisation; edges float16, bfloat16 in torch
or float32 where the framework has no bfloat16; ``__cuda_array_interface__`` objects without
torch, CuPy or JAX need ``range=``). The first call for given bins,
dtype, options and size class compiles and allocates (cached for the process: make it before
capturing a CUDA graph); later calls only enqueue, and can be captured.

The host waits for the GPU only where the result's shape or edges depend on the data:
``histogram`` without ``range`` (reads the minimum and maximum; pass ``range=``), ``bincount``
without ``out_of_range`` (numpy's length ``max(x) + 1`` and its check for negative values; pass
``minlength=n, out_of_range='ignore'`` for exactly ``n`` bins), and ``out_of_range='error'``
(reads the tallies to raise).
"""

from __future__ import annotations

import numpy as _np

from . import _fast, _native
from . import _joint
from ._dispatch import any_override as _any_override
from ._dispatch import dispatches_like as _dispatches_like
from ._dispatch import handled_by_override as _handled_by_override
from ._numpy_api import bincount as _bincount
from ._numpy_api import histogram as _histogram
from ._numpy_api import histogram_bin_edges as _histogram_bin_edges
from ._plan import Plan, plan

__version__ = _native.__version__

# Array type -> the fast path of repeated GPU calls (see _fast), filled as types are met.
_FAST_HIST = _fast.HIST
_FAST_BINCOUNT = _fast.BINCOUNT
_FAST_DIGITIZE = _fast.DIGITIZE
if _fast.TRACE:
    _histogram = _fast.traced("general histogram", _histogram)
    _bincount = _fast.traced("general bincount", _bincount)
__all__ = ["histogram", "histogram_bin_edges", "bincount", "histogram2d", "histogramdd",
           "digitize", "plan", "Plan", "__version__"]


def trace_summary() -> dict:
    """With ``SMEMKIT_PY_TRACE=1`` set before import: the median host time of each phase of the
    calls so far (us), per path; see ``smemkit._fast``."""
    return _fast.trace_summary()


def _device_cache_size() -> int:
    """How many device histograms (compiled, with scratch) this process holds (for tests)."""
    return _native.device_cache_size()


def histogram(a, bins=10, range=None, weights=None, density=False, *, backend="auto",
              strategy=None, out_of_range="ignore", deterministic=False):
    """Histogram of ``a``, as ``numpy.histogram``: returns ``(hist, bin_edges)``.

    a: array_like, flattened. Integer types, float16, float32, float64 and ml_dtypes' bfloat16
        (bool is converted to uint8 with numpy's RuntimeWarning); long double host
        samples are binned in long double. 16-bit floats are binned in numpy's arithmetic for them.
    bins: int (equal bins over ``range``, or over the data's minimum and maximum), a 1-D array
        of increasing edges (every bin ``[a, b)``, the last ``[a, b]``), or numpy's estimator
        names (``'auto'``, ``'fd'`` ...; on GPU arrays computed on the device, the bin count
        read back: a synchronisation; ``'stone'`` histograms the data at up to
        ``max(100, sqrt(n))`` bin counts there, as numpy does on the host; float16 and bfloat16
        GPU samples take them from the counts of each bit pattern and device histograms, and
        ``'scott'`` and ``'doane'`` from device sums in numpy's order, bfloat16 ones one value
        after another as ml_dtypes sums them). Edges may be infinite or repeat (a
        bin of zero width); integer edges compare exactly with integer samples (host arrays).
    range: ``(lower, upper)``; ignored with explicit edges. Without it, NaN or infinity in the
        data is a ValueError, as in numpy. Its type counts as in numpy: scalars of the samples'
        float32 or float16 type keep the edges and bins in that type.
    weights: same shape as ``a``; the result takes the weights' dtype, as numpy's does. Float
        weights over equal bins are summed in numpy's order, bit for bit numpy's sums: float64
        per block of 65536 samples, each block's sums cast to the weights' type and added in it
        (float32 weights round as numpy's do), on host and GPU arrays alike; with explicit edges
        (numpy sums those in sorted order) or a forced ``strategy`` they are summed in float64 and
        rounded once, and can differ from numpy's float32 sums in the last bits. Integer and bool
        weights, of host and GPU arrays, are summed
        exactly as 64-bit integers and returned in their dtype, wrapping around as numpy's do, at
        any magnitude (beyond 2**53 numpy's uniform-bins path rounds its float64 block sums;
        smemkit gives the exact sums its explicit-edges path gives); uint16/int32 weights of host arrays over
        uniform bins where numpy's per-block cast overflows raise NotImplementedError (GPU
        arrays, whose weights are not read back, give the wrapped sums there); bool
        weights with explicit edges are numpy's TypeError).
    density: counts divided by their sum and the bin widths, computed as numpy computes them.
    backend, strategy, out_of_range: smemkit's options (see the module documentation).
    deterministic: GPU arrays with weights: sums bit-identical on every run and strategy, the
        exact sums rounded once (rather than numpy's order). Counts are exact integers always.
        Host arrays with weights: NotImplementedError.

    Returns ``hist`` (int64, or the weights' dtype, or float64 with density) and ``bin_edges``
    (float32 for float32 samples, float64 otherwise, or the given edges as given).
    """
    fast = _FAST_HIST.get(a.__class__)
    if fast is not None:
        result = fast(a, bins, range, weights, density, backend, strategy, out_of_range,
                      deterministic)
        if result is not None:
            return result
    # Checked after the fast paths (numpy's and the GPU arrays' classes, which never override).
    if _any_override((a, bins, weights)):
        return _handled_by_override(
            _np.histogram, (a, bins, weights), (a,),
            dict(bins=bins, range=range, weights=weights, density=density))
    return _histogram(a, bins, range, weights, density, backend=backend, strategy=strategy,
                      out_of_range=out_of_range, deterministic=deterministic)


@_dispatches_like(_np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The edges ``histogram`` uses for these arguments, as ``numpy.histogram_bin_edges``."""
    return _histogram_bin_edges(a, bins, range, weights)


def bincount(x, weights=None, minlength=0, *, backend="auto", strategy=None, out_of_range=None,
             deterministic=False):
    """Occurrences of each value in ``x``, as ``numpy.bincount``.

    x: 1-D array of non-negative integers (bool accepted).
    weights: 1-D, same length; the result is then float64 sums.
    minlength: the least length of the result, which is otherwise ``max(x) + 1``.

    out_of_range: smemkit's option: None (numpy's rules) or ``'ignore'``, ``'clamp'``,
        ``'error'``: exactly ``minlength`` bins (at least 1), values outside ``[0, minlength)``
        ignored, clamped into the end bins, or a ValueError. On a GPU this avoids reading
        ``max(x)`` back (no host synchronisation, capturable in a CUDA graph).
    deterministic: as for :func:`histogram`.

    Without ``out_of_range``, finding ``max(x)`` takes one pass over ``x`` before counting (on a
    GPU, a synchronisation); the result is int64, or float64 with weights.
    """
    fast = _FAST_BINCOUNT.get(x.__class__)
    if fast is not None:
        result = fast(x, weights, minlength, backend, strategy, out_of_range, deterministic)
        if result is not None:
            return result
    if _any_override((x, weights)):
        return _handled_by_override(_np.bincount, (x, weights), (x,),
                                    dict(weights=weights, minlength=minlength))
    return _bincount(x, weights, minlength, backend=backend, strategy=strategy,
                     out_of_range=out_of_range, deterministic=deterministic)


@_dispatches_like(_np.histogramdd)
def histogramdd(sample, bins=10, range=None, density=None, weights=None, *, backend="auto"):
    """Joint histogram of D-dimensional samples, as ``numpy.histogramdd``: ``(hist, edges)``.

    sample: an (N, D) array (C or Fortran order read in place) or a sequence of D arrays of
        length N (stacked to their common dtype, as numpy does). Integers, float16, float32,
        float64; bool as uint8.
    bins: an int for every axis, D ints, or D arrays of increasing edges (mixed freely).
    range: D ``(lower, upper)`` pairs or None entries (that axis's minimum and maximum).
    density, weights: as numpy's (weights of any real type, summed in float64).
    backend: ``'auto'`` and ``'cpu'`` run the CPU engine; ``'cuda'`` copies host data to the GPU
        engine (counts only, no weights).

    Returns ``hist`` as float64 (numpy's type, counts or sums or density) of shape
    ``(nbins_0, ..., nbins_{D-1})`` and the D arrays of edges numpy returns.

    GPU samples (an (N, D) array of any strides, or a sequence of D 1-D arrays of one dtype, and
    GPU weights) are read in place on the producer's stream, results of the input's kind on its
    device (float64 counts, as numpy's). An axis without a range reads its data's minimum and
    maximum back to the host (a synchronisation): pass ``range=`` for every axis, or edges, to
    avoid it. float16 and bfloat16 samples (torch, CuPy, JAX) are widened to float32 on the
    device (a copy), binned as numpy (with ml_dtypes for bfloat16) bins them.
    """
    return _joint.histogramdd(sample, bins, range, density, weights, backend=backend)


@_dispatches_like(_np.histogram2d)
def histogram2d(x, y, bins=10, range=None, density=None, weights=None, *, backend="auto"):
    """Joint histogram of two arrays, as ``numpy.histogram2d``: ``(hist, xedges, yedges)``.

    bins: int, ``[int, int]``, an array of edges for both axes, or ``[xedges, yedges]``; the rest
    as :func:`histogramdd`.
    """
    return _joint.histogram2d(x, y, bins, range, density, weights, backend=backend)


@_dispatches_like(_np.digitize)
def digitize(x, bins, right=False):
    """The bin index of each element of ``x``, as ``numpy.digitize``: int64 of ``x``'s shape.

    bins: 1-D, increasing or decreasing (equal neighbours allowed). Increasing bins give ``i``
    with ``bins[i-1] <= x < bins[i]`` (``bins[i-1] < x <= bins[i]`` with ``right``), 0 below,
    ``len(bins)`` above and for NaN; decreasing bins the mirror image. Host ``x`` runs on the CPU
    engine; a GPU ``x`` (C-contiguous, 16-byte aligned) is read in place on the producer's
    stream, the indices of its kind on its device (GPU bins are copied to the host first: a
    synchronisation; torch and CuPy float16 and bfloat16 samples are widened to float32 on the
    device, a copy; JAX and other 16-bit GPU samples raise NotImplementedError).
    """
    fast = _FAST_DIGITIZE.get(x.__class__)
    if fast is not None:
        result = fast(x, bins, right)
        if result is not None:
            return result
    return _joint.digitize(x, bins, right)

"""smemkit: numpy's histogram functions over smemkit's GPU and CPU histogram engines.

``histogram``, ``histogram_bin_edges`` and ``bincount`` take numpy's arguments and return what
numpy returns (the same counts, bit for bit, the same dtypes), computed by smemkit's engines: the
GPU when a CUDA driver and device are present (``backend='auto'``), its rayon CPU engine
otherwise. Beyond numpy's arguments they take ``backend`` (``'auto'``, ``'cpu'``, ``'cuda'``),
``strategy`` (force a GPU strategy; see :func:`plan`) and, for ``histogram``, ``out_of_range``
(``'ignore'`` as numpy, ``'clamp'`` into the end bins, ``'error'`` to fail on any sample outside
the bins or NaN).

Inputs: numpy arrays of any integer type, float32 or float64, any shape (flattened), memory order
or strides, read in place when their memory is one block (C or Fortran order); host tensors of
other libraries through DLPack, read in place; anything else through ``numpy.asarray``. GPU arrays
(DLPack on a CUDA device, ``__cuda_array_interface__``) are recognised but not supported yet
(NotImplementedError).
"""

from __future__ import annotations

from . import _native
from ._numpy_api import bincount as _bincount
from ._numpy_api import histogram as _histogram
from ._numpy_api import histogram_bin_edges as _histogram_bin_edges
from ._plan import Plan, plan

__version__ = _native.__version__
__all__ = ["histogram", "histogram_bin_edges", "bincount", "plan", "Plan", "__version__"]


def histogram(a, bins=10, range=None, weights=None, density=False, *, backend="auto",
              strategy=None, out_of_range="ignore"):
    """Histogram of ``a``, as ``numpy.histogram``: returns ``(hist, bin_edges)``.

    a: array_like, flattened. Integer types, float32 and float64 (bool is converted to uint8 with
        numpy's RuntimeWarning); float16 and longdouble raise NotImplementedError.
    bins: int (equal bins over ``range``, or over the data's minimum and maximum) or a 1-D array
        of increasing edges (every bin ``[a, b)``, the last ``[a, b]``). Estimator names
        (``'auto'``, ``'fd'`` ...), infinite edges and equal adjacent edges raise
        NotImplementedError for now.
    range: ``(lower, upper)``; ignored with explicit edges. Without it, NaN or infinity in the
        data is a ValueError, as in numpy.
    weights: same shape as ``a``; the result takes the weights' dtype, as numpy's does (sums are
        formed in float64 and rounded once, so float32 sums can differ from numpy's float32
        accumulation in the last bits).
    density: counts divided by their sum and the bin widths, computed as numpy computes them.
    backend, strategy, out_of_range: smemkit's options (see the module documentation).

    Returns ``hist`` (int64, or the weights' dtype, or float64 with density) and ``bin_edges``
    (float32 for float32 samples, float64 otherwise, or the given edges as given).
    """
    return _histogram(a, bins, range, weights, density, backend=backend, strategy=strategy,
                      out_of_range=out_of_range)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The edges ``histogram`` uses for these arguments, as ``numpy.histogram_bin_edges``."""
    return _histogram_bin_edges(a, bins, range, weights)


def bincount(x, weights=None, minlength=0, *, backend="auto", strategy=None):
    """Occurrences of each value in ``x``, as ``numpy.bincount``.

    x: 1-D array of non-negative integers (bool accepted).
    weights: 1-D, same length; the result is then float64 sums.
    minlength: the least length of the result, which is otherwise ``max(x) + 1``.

    Finding ``max(x)`` takes one pass over ``x`` before counting; the result is int64, or
    float64 with weights.
    """
    return _bincount(x, weights, minlength, backend=backend, strategy=strategy)

"""numpy's ``__array_function__`` protocol (NEP 18) for smemkit's numpy functions.

numpy hands a call such as ``numpy.histogram2d(x, y)`` to an argument's type when that type
defines ``__array_function__`` (dask and xarray arrays, unit-carrying arrays, test doubles), so
that the library that owns the data computes the answer. A drop-in replacement must do the same,
or it silently turns such an argument into a plain array (losing its units, forcing a lazy array)
or fails on it. Each public function names the numpy function it mirrors and the arguments that
take part (as numpy's own dispatchers choose them); where one of them overrides, the call goes to
the override with numpy's function, exactly as numpy would route it.

Arrays smemkit reads itself are never handed over: numpy's ndarray (and subclasses keeping its
protocol), and GPU arrays of torch, CuPy and JAX, which it reads in place.
"""

from __future__ import annotations

import functools

import numpy as np

# Modules whose arrays smemkit takes directly, even where they define __array_function__.
_OWN_ROOTS = frozenset({"cupy", "cupyx", "torch", "jax", "jaxlib"})


def _overrides(value) -> bool:
    """Whether ``value``'s type takes numpy's functions over (and is not an array smemkit reads)."""
    kind = type(value)
    method = getattr(kind, "__array_function__", None)
    if method is None or method is np.ndarray.__array_function__:
        return False
    return kind.__module__.partition(".")[0] not in _OWN_ROOTS


def _per_axis(bins):
    """numpy's rule for ``bins`` of the joint histograms: the entries of a two-entry sequence
    (one per axis of histogram2d) take part one by one; anything else takes part whole."""
    try:
        return list(bins) if len(bins) == 2 else [bins]
    except TypeError:
        return [bins]


def any_override(values) -> bool:
    """Whether any of ``values`` takes numpy's functions over."""
    return any(_overrides(v) for v in values)


def handled_by_override(numpy_func, relevant, args, kwargs):
    """The result of the first override among ``relevant`` that accepts the call of
    ``numpy_func`` with ``args`` and ``kwargs``; a TypeError where every one declines (returns
    ``NotImplemented``), as numpy raises."""
    owners = []
    for value in relevant:
        if not _overrides(value) or any(type(value) is type(o) for o in owners):
            continue
        # A subclass answers before its bases, otherwise the arguments' order (numpy's rule).
        at = next((i for i, o in enumerate(owners) if issubclass(type(value), type(o))),
                  len(owners))
        owners.insert(at, value)
    types = tuple(type(o) for o in owners)
    for owner in owners:
        result = owner.__array_function__(numpy_func, types, args, kwargs)
        if result is not NotImplemented:
            return result
    raise TypeError(
        f"no implementation found for 'smemkit.{numpy_func.__name__}' on types that implement "
        f"__array_function__: {list(types)}")


def _relevant_histogram(a, bins=None, range=None, weights=None, *_, **__):
    return [a, bins, weights]


def _relevant_bincount(x, weights=None, *_, **__):
    return [x, weights]


def _relevant_digitize(x, bins=None, *_, **__):
    return [x, bins]


def _relevant_histogramdd(sample, bins=None, range=None, density=None, weights=None, *_, **__):
    out = [weights]
    try:
        out.extend(sample)  # a sequence of D arrays takes part array by array
    except TypeError:
        pass
    out.append(sample)
    out.extend(_per_axis(bins) if isinstance(bins, (list, tuple)) else [bins])
    return out


def _relevant_histogram2d(x, y, bins=None, range=None, density=None, weights=None, *_, **__):
    return [x, y, *_per_axis(bins), weights]


_RELEVANT = {
    "histogram": _relevant_histogram,
    "histogram_bin_edges": _relevant_histogram,
    "bincount": _relevant_bincount,
    "digitize": _relevant_digitize,
    "histogramdd": _relevant_histogramdd,
    "histogram2d": _relevant_histogram2d,
}


def dispatches_like(numpy_func):
    """Decorates smemkit's version of ``numpy_func``: a call with an overriding argument goes to
    the override, with ``numpy_func`` and the call's own arguments."""
    relevant_of = _RELEVANT[numpy_func.__name__]

    def wrap(impl):
        @functools.wraps(impl)
        def call(*args, **kwargs):
            try:
                relevant = relevant_of(*args, **kwargs)
            except TypeError:
                relevant = ()  # a bad call: the function itself says what is wrong
            if any(_overrides(v) for v in relevant):
                return handled_by_override(numpy_func, relevant, args, kwargs)
            return impl(*args, **kwargs)

        return call

    return wrap

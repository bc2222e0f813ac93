"""``digitize`` of GPU arrays (torch, CuPy, JAX, DLPack, the CUDA array interface) read in place by
the library's device digitize, enqueued on the producer's current stream like
``_device.histogram``: int64 indices of ``x``'s shape, of the input's kind on its device.

The bins are read on the host (a GPU array of bins is copied back: a synchronisation); numpy's
argument rules are ``_joint.digitize``'s. 64-bit integer samples against integer bins read their
extremes back (a synchronisation) to refuse values beyond 2**53, which float64 bins would change.
"""

from __future__ import annotations

import numpy as np

from . import _device, _fast, _native

_EXACT_F64 = 2**53
# (device, dtype, bins bytes, right) -> _native.DeviceDigitizeCall
_CALLS: dict = {}


def _host_bins(bins):
    kind = _device.device_kind(bins)
    if kind is None:
        return np.asarray(bins)
    if kind == "torch":
        return bins.cpu().numpy()
    if kind == "cupy":
        return bins.get()
    return np.asarray(bins)


def digitize(x_obj, kind, bins, right, exact_edges):
    x = _device.Input(x_obj, kind, "x")
    b = _host_bins(bins)
    if b.ndim == 0:
        raise ValueError("object of too small depth for desired array")
    if b.ndim > 1:
        raise ValueError("object too deep for desired array")
    if "complex" in x.dtype or b.dtype.kind == "c":
        raise TypeError("x may not be complex")
    dtype = "uint8" if x.dtype == "bool" else x.dtype
    if dtype in ("float16", "bfloat16") and kind in ("torch", "cupy"):
        # Widened exactly to float32 on the current stream: numpy compares in the common type,
        # float64 or float32 beside float16 bins, where the float32 values compare the same.
        wide = x_obj.float() if kind == "torch" else x_obj.astype("float32")
        return digitize(wide, kind, bins, right, exact_edges)
    if dtype in ("float16", "bfloat16"):
        raise NotImplementedError(
            f"digitize of {dtype} GPU samples is not supported yet: convert them to float32 "
            "(exact, and numpy compares in the common type), e.g. x.float()")
    if dtype not in _device._SUPPORTED:
        raise TypeError(f"cannot digitize GPU x of dtype {x.dtype}")
    if x.layout() != "C":
        hint = {"torch": ".contiguous()", "cupy": "cupy.ascontiguousarray(...)"}.get(kind, "a copy")
        raise ValueError(
            f"x is not one block in C order (shape {x.shape}, strides {x.strides} elements): "
            f"smemkit reads device arrays in place; pass {hint}")
    x.check_aligned()
    edges = exact_edges(b, "bins")
    if np.isnan(edges).any():
        return _nan_bins(x_obj, kind, edges, right, exact_edges)
    if dtype in ("int64", "uint64") and b.dtype.kind in "biu" and x.size:
        lo, hi = x.minmax()
        if max(abs(int(lo)), abs(int(hi))) > _EXACT_F64:
            raise NotImplementedError(
                "digitize of integers beyond 2**53 against integer bins is not supported yet "
                "(compared in float64)")
    edges = np.ascontiguousarray(edges, np.float64)
    key = (x.device, dtype, edges.tobytes(), bool(right))
    call = _CALLS.get(key)
    if call is None:
        call = _native.device_digitize(x.device, dtype, edges, bool(right))
        if len(_CALLS) > 64:
            _CALLS.clear()
        _CALLS[key] = call
    frame = x.frame
    stream = x.run_stream()
    if x.kind == "cai" and x.stream_kind == "handle":
        with frame.use_stream(stream):
            out = frame.empty(x.size, "int64")
    else:
        out = frame.empty(x.size, "int64")
    call.run(stream, x.ptr, x.size, frame.ptr(out))
    if x.size and not (dtype in ("int64", "uint64") and b.dtype.kind in "biu"):
        # Repeats of this call (same bins, dtype, device) take the fast path.
        _fast.learn_digitize(kind, x_obj, bins, right, dtype, call, x.device)
    if x.keep:
        frame.keep_until_done(x.keep)
    return _device._finish(frame, kind, out.reshape(x.shape))


def _nan_bins(x_obj, kind, edges, right, exact_edges):
    """numpy's digitize with NaN bins, which it orders after every number (the kernel searches
    numbers only): the numbers are searched on the device, in increasing order, and NaN samples
    are placed where numpy's order puts them (torch and CuPy samples)."""
    n = edges.size
    first = edges[0]
    change = next((i for i in range(1, n) if not edges[i] == first), None)
    increasing = change is None or first < edges[change]  # numpy's _monotonicity, as it compares
    nan = np.isnan(edges)
    k = int(nan.sum())
    ok = nan[n - k:].all() if increasing else nan[:k].all()
    if not ok:
        order, place = ("increasing", "after") if increasing else ("decreasing", "before")
        raise ValueError(
            f"NaN bins where numpy's search is not defined: numpy takes these bins as {order}, "
            f"so their NaN must come {place} every number (numpy's answers for them depend on "
            "the order of the samples)")
    if kind not in ("torch", "cupy"):
        raise NotImplementedError(
            "these NaN bins are not supported on the GPU (NaN after the numbers of increasing "
            "bins or before those of decreasing ones, from torch or CuPy, are)")
    if increasing:
        out = digitize(x_obj, kind, edges[:n - k], right, exact_edges)
        nan_at = n if not right else None  # right=True: the kernel's n - k already
    else:
        # len(bins) - searchsorted(bins[::-1], x): the numbers reversed are increasing.
        out = n - digitize(x_obj, kind, edges[k:][::-1].copy(), right, exact_edges)
        nan_at = 0 if not right else None  # right=True: n - (n - k) = k already
    if nan_at is None or "float" not in str(x_obj.dtype):
        return out
    if kind == "torch":
        import torch

        return torch.where(torch.isnan(x_obj), torch.full_like(out, nan_at), out)
    import cupy

    return cupy.where(cupy.isnan(x_obj), nan_at, out)

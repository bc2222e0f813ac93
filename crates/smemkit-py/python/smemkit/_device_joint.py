"""``histogramdd`` / ``histogram2d`` of GPU arrays (torch, CuPy, JAX, DLPack, the CUDA array
interface) read in place by the library's device joint histogram, enqueued on the producer's
current stream like ``_device.histogram``, results of the input's kind on its device: float64
counts (numpy's dtype; the device counts u64 and the framework converts), float64 density, and
edges as numpy returns them (float64 from a range, float32 for float32 samples binned over their
data's range, given edges as given). float16 and bfloat16 samples are widened to float32 on the
device first (a copy: the engine reads 4- and 8-byte and integer samples).

Bins over the data's range (an axis without ``range=``) read each axis's minimum and maximum back
to the host: a synchronisation, which ``range=`` (or explicit edges) avoids. numpy's argument rules
are ``_joint``'s.
"""

from __future__ import annotations

import numpy as np

from . import _device, _native

# (device, dtype, weights dtype, bins key, strategy) -> _native.DeviceJointCall
_CALLS: dict = {}


def is_device(sample, weights) -> bool:
    """Whether this histogramdd call has GPU samples (refusing a mix of host and GPU arrays)."""
    parts = list(sample) if isinstance(sample, (list, tuple)) else [sample]
    kinds = [_device.device_kind(p) is not None for p in parts]
    if not any(kinds):
        if weights is not None and _device.device_kind(weights) is not None:
            raise TypeError("the weights are on a GPU but the samples are not: pass both on one device")
        return False
    if not all(kinds):
        raise TypeError("some sample arrays are on a GPU and some are not: pass all on one device")
    return True


def _columns(sample, backend):
    """``(first Input, [(address, stride)] per axis, n, dtype)`` of the samples, in place."""
    if backend not in ("auto", "cuda"):
        if backend == "cpu":
            raise ValueError(
                "backend='cpu' with arrays on a GPU: smemkit reads GPU arrays in place with its "
                "CUDA engine; copy the arrays to the host for the CPU engine")
        raise ValueError(f"backend must be 'auto', 'cpu' or 'cuda', not {backend!r}")
    if isinstance(sample, (list, tuple)):
        inputs = []
        for i, s in enumerate(sample):
            kind = _device.device_kind(s)
            inp = _device.Input(s, kind, f"sample[{i}]",
                                inputs[0].frame if inputs and kind not in ("torch", "cupy") else None)
            if len(inp.shape) != 1:
                raise ValueError(
                    f"sample[{i}] has shape {inp.shape}: a sequence of GPU arrays must hold one "
                    "1-D array per axis")
            inputs.append(inp)
        if not inputs:
            raise ValueError("histogramdd needs at least one axis")
        first = inputs[0]
        for i, inp in enumerate(inputs[1:], 1):
            if inp.dtype != first.dtype:
                raise TypeError(
                    f"sample[{i}] is {inp.dtype} but sample[0] is {first.dtype}: smemkit's GPU "
                    "joint histogram reads one dtype; convert them to one")
            if inp.size != first.size:
                raise ValueError(f"sample[{i}] has {inp.size} values but sample[0] {first.size}")
            if inp.device != first.device:
                raise ValueError(f"sample[{i}] is on CUDA device {inp.device}, sample[0] on {first.device}")
        item = np.dtype(_host_dtype(first.dtype)).itemsize
        axes = [(inp.ptr, _stride(inp, 0, inp.name)) for inp in inputs]
        return first, inputs, axes, first.size, item
    kind = _device.device_kind(sample)
    inp = _device.Input(sample, kind, "sample")
    if len(inp.shape) == 1:  # numpy: atleast_2d(sample).T, one axis
        item = np.dtype(_host_dtype(inp.dtype)).itemsize
        return inp, [inp], [(inp.ptr, _stride(inp, 0, "sample"))], inp.size, item
    if len(inp.shape) != 2:
        raise ValueError(
            f"sample has shape {inp.shape}: a GPU sample is an (N, D) array or a sequence of D "
            "1-D arrays")
    n, d = inp.shape
    item = np.dtype(_host_dtype(inp.dtype)).itemsize
    row = _stride(inp, 0, "sample")
    col = _stride(inp, 1, "sample")
    axes = [(inp.ptr + j * col * item, row) for j in range(d)]
    return inp, [inp], axes, n, item


def _host_dtype(d):
    return "uint8" if d == "bool" else d


def _stride(inp, axis, name):
    """The elements between neighbours along ``axis`` (C order when the producer gave none)."""
    if inp.strides is None:
        st = int(np.prod(inp.shape[axis + 1:], dtype=np.int64))
    else:
        st = inp.strides[axis]
    if st < 0:
        raise ValueError(f"{name} has a negative stride: pass a copy")
    return int(st)


def _dtype(inp):
    d = inp.dtype
    if d == "bool":
        return "uint8"  # the same bytes, read in place
    if d not in _device._SUPPORTED:
        raise TypeError(f"cannot histogram GPU samples of dtype {d}")
    return d


def _extremes(inputs, separate, n, j):
    """The minimum and maximum of axis ``j`` read back to the host (a synchronisation)."""
    if n == 0:
        return None
    inp = inputs[j] if separate else inputs[0]
    col = inp.obj if separate else inp.obj[:, j]
    if inp.kind == "torch":
        t = _device._torch()
        if col.dtype == t.bool:
            col = col.to(t.uint8)
        lo, hi = t.aminmax(col)
        lo, hi = lo.item(), hi.item()
    elif inp.kind in ("cupy", "jax"):
        lo, hi = col.min().item(), col.max().item()
    else:
        raise NotImplementedError(
            f"axis {j} has no range and finding it in a {_device._module_of(inp.obj)} GPU array "
            "needs its framework: pass range= for every axis")
    equal = lo == hi
    return (float(lo), float(hi), bool(equal))


def _widened(sample, inputs):
    """16-bit float samples widened to float32 on the device (exact; a copy of the samples), in
    the sample's own form (one array, or a sequence of 1-D arrays)."""
    def widen(inp):
        if inp.kind == "torch":
            return inp.obj.float()
        if inp.kind in ("cupy", "jax"):
            return inp.obj.astype("float32")
        raise NotImplementedError(
            f"joint histograms of {inp.dtype} {_device._module_of(inp.obj)} GPU arrays are not "
            "supported (they are widened to float32 on the device, which needs torch, CuPy or "
            "JAX arrays): pass float32")
    if isinstance(sample, (list, tuple)):
        return [widen(inp) for inp in inputs]
    return widen(inputs[0])


def _half_edges(inputs, separate, n, nb, j, dtype):
    """numpy's edges of a 16-bit float axis over its data's range: ``linspace`` of the extremes
    (read back: a synchronisation) as scalars of the samples' type, so that numpy's promotions
    give the edges' type (float16 for float16; float64 for ml_dtypes' bfloat16, float32 where
    one value is widened by 0.5, bfloat16 scalars then meeting a Python float); float64 over
    ``[0, 1]`` for no data."""
    extremes = _extremes(inputs, separate, n, j)
    if extremes is None:
        lo, hi = 0, 1
    else:
        lo, hi = _scalar(dtype, extremes[0]), _scalar(dtype, extremes[1])
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, nb + 1)


def _scalar(dtype, value):
    """``value`` (a float the extremes came back as, exact) as a numpy scalar of ``dtype``."""
    if dtype == "float16":
        return np.float16(value)
    try:
        import ml_dtypes
    except ImportError:
        raise NotImplementedError(
            "joint histograms of bfloat16 GPU samples over their data's range follow numpy with "
            "ml_dtypes' bfloat16, which is not installed: install ml_dtypes or pass range=")
    return ml_dtypes.bfloat16(value)


def histogramdd(sample, bins, range_, density, weights, backend, axes_of):
    first, inputs, addrs, n, item = _columns(sample, backend)
    dtype = _dtype(first)
    d = len(addrs)
    axes, given = axes_of(bins, range_, d)
    if dtype in ("float16", "bfloat16"):
        # numpy compares 16-bit float samples with the edges in their common type: the samples
        # widen exactly to float32, and an axis over its data's range takes numpy's edges over
        # the 16-bit extremes as explicit edges (returned in numpy's type for them).
        separate = isinstance(sample, (list, tuple)) or len(first.shape) == 1
        axes, given = list(axes), list(given)
        for j, (nb, r, e) in enumerate(axes):
            if e is None and r is None:
                given[j] = _half_edges(inputs, separate, n, nb, j, dtype)
                axes[j] = (None, None, given[j].astype(np.float64))
        first, inputs, addrs, n, item = _columns(_widened(sample, inputs), backend)
        dtype = "float32"
    frame = first.frame
    resolved = []
    for j, (nb, r, e) in enumerate(axes):
        if e is None and r is None:
            # numpy's range from this axis's data: its extremes read back (a synchronisation).
            separate = isinstance(sample, (list, tuple)) or len(first.shape) == 1
            extremes = _extremes(inputs, separate, n, j)
            edges = _native.device_joint_data_edges(dtype, nb, extremes)
            resolved.append((None, None, edges))
        else:
            resolved.append((nb, r, e))
    w = None
    if weights is not None:
        w = _device._weights(weights, first, first.kind, frame, float_ints=True)
        if w.shape != (n,):
            raise ValueError(
                f"weights must be 1-D with one weight per sample ({n}), not shape {w.shape}")
        w.check_layout()
    if n and any(a % item for a, _ in addrs):
        raise ValueError("the samples' addresses are not aligned to their element size")
    key = (first.device, dtype, None if w is None else w.dtype,
           tuple((nb, r, None if e is None else e.tobytes()) for nb, r, e in resolved), None)
    call = _CALLS.get(key)
    if call is None:
        call = _native.device_joint(first.device, dtype, None if w is None else w.dtype,
                                    resolved, None)
        if len(_CALLS) > 64:
            _CALLS.clear()
        _CALLS[key] = call
    stream = first.run_stream()
    if first.kind == "cai" and first.stream_kind == "handle":
        with frame.use_stream(stream):
            out = frame.empty(call.nbins + 3, "int64" if w is None else "float64")
    else:
        out = frame.empty(call.nbins + 3, "int64" if w is None else "float64")
    base = frame.ptr(out)
    if n == 0:
        out.zero_() if frame.name == "torch" else out.fill(0)
    else:
        call.run(stream, addrs, n, 0 if w is None else w.ptr, base, base + 8 * call.nbins)
    keep = [k for inp in inputs for k in inp.keep] + (w.keep if w is not None else [])
    if keep:
        frame.keep_until_done(keep)
    shape = tuple(call.shape)
    if first.kind == "cai" and first.stream_kind == "handle":
        with frame.use_stream(stream):
            hist, edges = _results(frame, call, out, shape, resolved, given, dtype, n, density)
    else:
        hist, edges = _results(frame, call, out, shape, resolved, given, dtype, n, density)
    kind = first.kind
    return _device._finish(frame, kind, hist), [_device._finish(frame, kind, e) for e in edges]


def _results(frame, call, out, shape, resolved, given, dtype, n, density):
    hist = _device._cast(frame, out[:call.nbins], "float64").reshape(shape)
    edges, host = [], []
    for j, e in enumerate(call.edges()):
        if given[j] is not None:
            e = given[j]
        elif resolved[j][1] is None and resolved[j][2] is not None and dtype == "float32" and n:
            e = e.astype(np.float32)  # numpy's linspace of float32 extremes is float32
        host.append(e)
        edges.append(frame.edges(("joint", e.tobytes(), str(e.dtype)), lambda e=e: e))
    if density:
        # numpy's order: divide by each axis's widths (the edges' differences in their dtype)
        # in turn, then by the total.
        s = hist.sum()
        for j, e in enumerate(host):
            widths = np.diff(e).astype(np.float64)
            wshape = [1] * len(shape)
            wshape[j] = shape[j]
            dev_w = frame.edges(("widths", widths.tobytes()), lambda w=widths: w)
            hist = hist / dev_w.reshape(tuple(wshape))
        hist = hist / s
    return hist, edges

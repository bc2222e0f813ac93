"""The per-call fast path for torch and CuPy GPU arrays.

A GPU call's own work is a memset and a kernel or two, a few microseconds of the host's time; the
general path (``_device``) spent ten times that in Python: parsing numpy's arguments, reading the
array's attributes into an object, building cache keys, allocating through slow framework paths,
copying the edges with a framework kernel. Here a call whose arguments were seen before (same
type, dtype, device, bins, range, options) finds a ``_native.FastCall`` under a key of those
arguments and does only what differs from call to call: the address, size and stream of the
input, and two allocations of exactly the result's size, made by the framework on its current
stream (its stream-ordered allocator keeps them valid, as for its own kernels). Small inputs (up
to 2^14 samples) are then one kernel launch that writes every count and the edges (see
``crates/smemkit-py/src/fast.rs``).

The first call of each key takes the general path, which checks everything and computes the
result; if the call is one the fast path can repeat, a ``FastCall`` is built then, its edges taken
from that result. Anything unusual (weights, density, no range, a strided or misaligned array,
``out_of_range='error'``, a bool array, an array on another device than CuPy's current one) takes
the general path every time, so the two paths agree by construction.

``digitize`` has the same two paths: a repeat of a call with the same numpy bins (their dtype,
shape and bytes are the key), sample dtype and device reuses the general path's
``DeviceDigitizeCall`` and allocates only the indices.

``SMEMKIT_PY_TRACE=1`` in the environment when smemkit is imported times each phase of every fast
call (and the general path's calls as a whole) and prints a summary at exit; ``trace_summary()``
returns it.
"""

from __future__ import annotations

import operator
import os
import sys
import time

import numpy as _np

from . import _native

# key -> (FastCall, counts dtype, edges dtype or None, number of edges); see the module docs.
_PLANS: dict = {}
_MAX_PLANS = 1024

# Array type -> fast function, for the types met so far (filled by learn_*).
HIST: dict = {}
BINCOUNT: dict = {}
DIGITIZE: dict = {}

# digitize: key -> (DeviceDigitizeCall, device); the key holds the bins' dtype, shape and bytes.
_DIGITIZE_PLANS: dict = {}
# Sample dtypes whose digitize depends on nothing but the bins (64-bit integers against integer
# bins read their extremes back; 16-bit floats are widened first).
_DIGITIZE_TYPES = ("float32", "float64", "int8", "int16", "int32", "uint8", "uint16", "uint32")


class _Torch:
    """What a fast torch call needs of torch, looked up once."""

    def __init__(self, torch):
        self.empty = torch.empty
        self.int64 = torch.int64
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is None:
            def raw(device, _cs=torch.cuda.current_stream):
                return _cs(device).cuda_stream
        self.stream = raw
        self.devices = {}

    def device(self, index):
        d = self.devices.get(index)
        if d is None:
            import torch

            d = self.devices[index] = torch.device("cuda", index)
        return d


_T: _Torch | None = None


def _torch_ready():
    """torch, with what the fast torch calls need of it looked up once (into ``_T``)."""
    global _T
    import torch

    if _T is None:
        _T = _Torch(torch)
    return torch


def torch_histogram(a, bins, range, weights, density, backend, strategy, out_of_range,
                    deterministic):
    """``(hist, bin_edges)`` for a torch CUDA tensor, or None when the call takes the general
    path."""
    if weights is not None or density or range is None:
        return None
    lo_hi = range if range.__class__ is tuple else None
    if lo_hi is None or len(lo_hi) != 2:
        return None
    lo, hi = lo_hi
    dev = a.get_device()
    key = ("torch-hist", a.dtype, dev, bins, bins.__class__, lo, hi, lo.__class__, hi.__class__,
           backend, strategy, out_of_range, deterministic)
    try:
        plan = _PLANS.get(key)
    except TypeError:  # unhashable bins or range values
        return None
    if plan is None or not a.is_contiguous():
        return None
    ptr = a.data_ptr()
    if ptr & 15:
        return None
    call, counts_dtype, edges_dtype, nedges, device = plan
    t = _T
    counts = t.empty(call.nbins, dtype=counts_dtype, device=device)
    stream = t.stream(dev)
    call.run(stream, ptr, a.numel(), 0, counts.data_ptr(), 0)
    # The edges after the launch: their allocation and copy do not delay the kernel.
    edges = t.empty(nedges, dtype=edges_dtype, device=device)
    call.copy_edges(stream, edges.data_ptr())
    return counts, edges


def torch_bincount(x, weights, minlength, backend, strategy, out_of_range, deterministic):
    """bincount's counts for a torch CUDA tensor, or None when the call takes the general path."""
    if weights is not None or out_of_range is None:
        return None
    dev = x.get_device()
    key = ("torch-bincount", x.dtype, dev, minlength, minlength.__class__, backend, strategy,
           out_of_range, deterministic)
    try:
        plan = _PLANS.get(key)
    except TypeError:
        return None
    if plan is None or x.dim() != 1 or not x.is_contiguous():
        return None
    ptr = x.data_ptr()
    if ptr & 15:
        return None
    call, counts_dtype, _, _, device = plan
    t = _T
    counts = t.empty(call.nbins, dtype=counts_dtype, device=device)
    call.run(t.stream(dev), ptr, x.numel(), 0, counts.data_ptr(), 0)
    return counts


def _cupy_current():
    return sys.modules["cupy"].cuda.runtime.getDevice()


def cupy_histogram(a, bins, range, weights, density, backend, strategy, out_of_range,
                   deterministic):
    """``(hist, bin_edges)`` for a CuPy array on the current device, or None (general path)."""
    if weights is not None or density or range is None:
        return None
    lo_hi = range if range.__class__ is tuple else None
    if lo_hi is None or len(lo_hi) != 2:
        return None
    lo, hi = lo_hi
    key = ("cupy-hist", a.dtype, bins, bins.__class__, lo, hi, lo.__class__, hi.__class__,
           backend, strategy, out_of_range, deterministic)
    try:
        plan = _PLANS.get(key)
    except TypeError:
        return None
    if plan is None or not a.flags.c_contiguous:
        return None
    call, counts_dtype, edges_dtype, nedges, device = plan
    if a.device.id != device or _cupy_current() != device:
        return None
    ptr = a.data.ptr
    if ptr & 15:
        return None
    cp = sys.modules["cupy"]
    counts = cp.empty(call.nbins, counts_dtype)
    stream = cp.cuda.get_current_stream().ptr
    call.run(stream, ptr, a.size, 0, counts.data.ptr, 0)
    edges = cp.empty(nedges, edges_dtype)
    call.copy_edges(stream, edges.data.ptr)
    return counts, edges


def cupy_bincount(x, weights, minlength, backend, strategy, out_of_range, deterministic):
    """bincount's counts for a CuPy array on the current device, or None (general path)."""
    if weights is not None or out_of_range is None:
        return None
    key = ("cupy-bincount", x.dtype, minlength, minlength.__class__, backend, strategy,
           out_of_range, deterministic)
    try:
        plan = _PLANS.get(key)
    except TypeError:
        return None
    if plan is None or x.ndim != 1 or not x.flags.c_contiguous:
        return None
    call, counts_dtype, _, _, device = plan
    if x.device.id != device or _cupy_current() != device:
        return None
    ptr = x.data.ptr
    if ptr & 15:
        return None
    cp = sys.modules["cupy"]
    counts = cp.empty(call.nbins, counts_dtype)
    call.run(cp.cuda.get_current_stream().ptr, ptr, x.size, 0, counts.data.ptr, 0)
    return counts


def _digitize_key(kind, x, bins, right):
    """The key of a digitize call the fast path can repeat, or None: numpy bins (a list would
    have to be converted to be compared) and a bool ``right``."""
    if bins.__class__ is not _np.ndarray or right.__class__ is not bool:
        return None
    return (kind, x.dtype, bins.dtype, bins.shape, bins.tobytes(), right)


def torch_digitize(x, bins, right):
    """numpy.digitize's indices for a torch CUDA tensor, or None (general path)."""
    key = _digitize_key("torch", x, bins, right)
    plan = _DIGITIZE_PLANS.get(key) if key is not None else None
    if plan is None or not x.is_contiguous():
        return None
    call, dev = plan
    ptr = x.data_ptr()
    if ptr & 15 or x.get_device() != dev:
        return None
    t = _T
    out = t.empty(x.shape, dtype=t.int64, device=t.device(dev))
    call.run(t.stream(dev), ptr, x.numel(), out.data_ptr())
    return out


def cupy_digitize(x, bins, right):
    """numpy.digitize's indices for a CuPy array on the current device, or None (general path)."""
    key = _digitize_key("cupy", x, bins, right)
    plan = _DIGITIZE_PLANS.get(key) if key is not None else None
    if plan is None or not x.flags.c_contiguous:
        return None
    call, dev = plan
    if x.device.id != dev or _cupy_current() != dev:
        return None
    ptr = x.data.ptr
    if ptr & 15:
        return None
    cp = sys.modules["cupy"]
    out = cp.empty(x.shape, _np.int64)
    call.run(cp.cuda.get_current_stream().ptr, ptr, x.size, out.data.ptr)
    return out


def learn_digitize(kind, x, bins, right, dtype, call, dev):
    """After the general path digitized a torch or CuPy array with ``call`` (its cached
    ``DeviceDigitizeCall``): the fast path repeats the call where nothing but the bins decides
    it (no NaN bins, a dtype of ``_DIGITIZE_TYPES``, a non-empty array)."""
    if dtype not in _DIGITIZE_TYPES or kind not in ("torch", "cupy") or _capturing(kind):
        return
    key = _digitize_key(kind, x, bins, right)
    if key is None or bins.ndim != 1 or bins.dtype.kind not in "biuf":
        return
    if kind == "torch":
        torch = _torch_ready()
        DIGITIZE[torch.Tensor] = torch_digitize
    else:
        DIGITIZE[type(x)] = cupy_digitize
    if len(_DIGITIZE_PLANS) >= _MAX_PLANS:
        _DIGITIZE_PLANS.clear()
    _DIGITIZE_PLANS[key] = (call, dev)


def _build(dev, dtype, nbins, rng, integer, out_of_range, strategy, deterministic, edges):
    """A FastCall, or None where one cannot be made: the general path, which just computed the
    same call, then keeps serving it (the result never depends on which path runs)."""
    try:
        return _native.fast_call(dev, dtype, None, (nbins, rng, integer),
                                 (out_of_range, strategy, bool(deterministic)), edges)
    except Exception:  # noqa: BLE001 (an optimisation only; see the docstring)
        return None


def _store(key, plan):
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    _PLANS[key] = plan


def _capturing(kind):
    """Whether the current stream is being captured into a CUDA graph: learning then waits for a
    later call (reading the edges back would break the capture)."""
    try:
        if kind == "torch":
            return sys.modules["torch"].cuda.is_current_stream_capturing()
        return sys.modules["cupy"].cuda.get_current_stream().is_capturing()
    except Exception:  # noqa: BLE001 (no way to ask: do not learn)
        return True


def _dtype_name(kind, a):
    return str(a.dtype).removeprefix("torch.") if kind == "torch" else str(a.dtype)


def learn_histogram(kind, a, bins, range, weights, density, backend, strategy, out_of_range,
                    deterministic, result):
    """After the general path computed ``result`` for a torch or CuPy array: a FastCall for this
    call's key when the fast path can repeat it."""
    dtype = _dtype_name(kind, a)
    if (weights is not None or density or range is None or out_of_range == "error"
            or dtype not in _HIST_TYPES):
        return
    if range.__class__ is not tuple or len(range) != 2 or _capturing(kind):
        return
    lo, hi = range
    if not isinstance(lo, (int, float, _np.generic)) or not isinstance(hi, (int, float, _np.generic)):
        return  # e.g. 0-d tensors: hashed by identity, a new key every call
    range_type = _np.result_type(lo, hi)
    if range_type.kind not in "biu" and range_type != _np.float64:
        return  # float32 / float16 scalars: numpy bins in their type, which the call below does not
    if not isinstance(bins, (int, _np.integer)):
        return
    try:
        nbins = operator.index(bins)
    except TypeError:
        return
    edges = result[1]
    if kind == "torch":
        torch = _torch_ready()
        HIST[torch.Tensor] = torch_histogram
        dev = a.get_device()
        key = ("torch-hist", a.dtype, dev, bins, bins.__class__, lo, hi, lo.__class__,
               hi.__class__, backend, strategy, out_of_range, deterministic)
        host_edges = edges.cpu().numpy()
        plan_tail = (_T.int64, edges.dtype, int(edges.numel()), _T.device(dev))
    elif kind == "cupy":
        HIST[type(a)] = cupy_histogram
        dev = a.device.id
        key = ("cupy-hist", a.dtype, bins, bins.__class__, lo, hi, lo.__class__, hi.__class__,
               backend, strategy, out_of_range, deterministic)
        host_edges = edges.get()
        plan_tail = (_np.dtype(_np.int64), edges.dtype, int(edges.size), dev)
    else:
        return
    try:
        hash(key)
    except TypeError:
        return
    call = _build(dev, dtype, nbins, (float(lo), float(hi)), False, out_of_range, strategy,
                  deterministic, host_edges.tobytes())
    if call is not None:
        _store(key, (call, *plan_tail))


def learn_bincount(kind, x, weights, minlength, backend, strategy, out_of_range, deterministic):
    """As :func:`learn_histogram`, for bincount with ``out_of_range``."""
    dtype = _dtype_name(kind, x)
    if not isinstance(minlength, (int, _np.integer)):
        return
    if (weights is not None or out_of_range not in ("ignore", "clamp") or dtype not in _NUMERIC
            or _capturing(kind)):
        return
    if kind == "torch":
        torch = _torch_ready()
        BINCOUNT[torch.Tensor] = torch_bincount
        dev = x.get_device()
        key = ("torch-bincount", x.dtype, dev, minlength, minlength.__class__, backend, strategy,
               out_of_range, deterministic)
        plan_tail = (_T.int64, None, 0, _T.device(dev))
    elif kind == "cupy":
        BINCOUNT[type(x)] = cupy_bincount
        dev = x.device.id
        key = ("cupy-bincount", x.dtype, minlength, minlength.__class__, backend, strategy,
               out_of_range, deterministic)
        plan_tail = (_np.dtype(_np.int64), None, 0, dev)
    else:
        return
    try:
        hash(key)
    except TypeError:
        return
    call = _build(dev, dtype, operator.index(minlength), None, True, out_of_range, strategy,
                  deterministic, b"")
    if call is not None:
        _store(key, (call, *plan_tail))


# ---- numpy arrays on the host engines: the same idea, for the Python layer's own cost ----


def numpy_histogram(a, bins, range, weights, density, backend, strategy, out_of_range,
                    deterministic):
    """``(hist, bin_edges)`` for a numpy array whose call was seen before, or None."""
    if weights is not None or density or range.__class__ is not tuple or len(range) != 2:
        return None
    lo, hi = range
    key = ("np-hist", a.dtype, bins, bins.__class__, lo, hi, lo.__class__, hi.__class__,
           backend, strategy, out_of_range, deterministic)
    try:
        plan = _PLANS.get(key)
    except TypeError:
        return None
    if plan is None:
        return None
    flags = a.flags
    if not flags.aligned:
        return None
    if flags.c_contiguous:
        flat = a if a.ndim == 1 else a.reshape(-1)
    elif flags.f_contiguous:
        flat = a.ravel(order="K")
    else:
        flat = a.ravel()
    edges, rng = plan
    counts = _native.histogram(flat, None, (bins, rng, None), (out_of_range, backend, strategy))[0]
    return counts.view(_np.int64), edges.copy()


def numpy_bincount(x, weights, minlength, backend, strategy, out_of_range, deterministic):
    """bincount's counts for a numpy array whose call was seen before, or None."""
    if weights is not None:
        return None
    key = ("np-bincount", x.dtype, minlength, minlength.__class__, backend, strategy,
           out_of_range, deterministic)
    try:
        plan = _PLANS.get(key)
    except TypeError:
        return None
    if plan is None or x.ndim != 1:
        return None
    flags = x.flags
    if not (flags.c_contiguous and flags.aligned):
        return None
    counts = _native.bincount(x, None, minlength, backend, strategy, out_of_range)
    return counts.view(_np.int64)


def _host_sample_dtype(dtype) -> bool:
    return (dtype.isnative and (dtype.kind in "iu" or (dtype.kind == "f" and dtype.itemsize in (4, 8)))
            and dtype.kind != "b")


def learn_host_histogram(a, bins, range, weights, density, backend, strategy, out_of_range,
                         deterministic, bin_edges):
    """After the general path served a numpy array (returning ``bin_edges``): remember the call
    and its edges when the fast path can repeat it (Python numbers for the range, an int bin
    count, no weights or density)."""
    if (a.__class__ is not _np.ndarray or weights is not None or density
            or bins.__class__ is not int or range.__class__ is not tuple or len(range) != 2
            or not _host_sample_dtype(a.dtype)):
        return
    lo, hi = range
    if lo.__class__ not in (int, float) or hi.__class__ not in (int, float):
        return  # numpy scalars can change the type numpy bins in
    key = ("np-hist", a.dtype, bins, bins.__class__, lo, hi, lo.__class__, hi.__class__,
           backend, strategy, out_of_range, deterministic)
    _store(key, (bin_edges.copy(), (float(lo), float(hi))))


def learn_host_bincount(x, weights, minlength, backend, strategy, out_of_range, deterministic):
    """As :func:`learn_host_histogram`, for bincount."""
    if (x.__class__ is not _np.ndarray or weights is not None or x.ndim != 1
            or minlength.__class__ is not int or minlength < 0 or x.dtype.kind not in "iu"
            or not x.dtype.isnative or (out_of_range is not None and minlength < 1)):
        return
    key = ("np-bincount", x.dtype, minlength, minlength.__class__, backend, strategy,
           out_of_range, deterministic)
    _store(key, (None,))


HIST[_np.ndarray] = numpy_histogram
BINCOUNT[_np.ndarray] = numpy_bincount

_NUMERIC = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
            "float64")
# Histograms also of 16-bit floats: over a range of Python numbers (the only range their general
# path takes) their bins depend on the range alone, as the other types' do.
_HIST_TYPES = _NUMERIC + ("float16", "bfloat16")

# ---- tracing (SMEMKIT_PY_TRACE=1) ----

TRACE = os.environ.get("SMEMKIT_PY_TRACE") == "1"
_TRACE_LOG: dict = {}  # label -> list of tuples of ns


def traced(label, fn):
    """``fn`` with each call's total time recorded under ``label``."""

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter_ns()
        out = fn(*args, **kwargs)
        _TRACE_LOG.setdefault(label, []).append((time.perf_counter_ns() - t0,))
        return out

    return wrapper


def record(label, times):
    """Appends one call's phase boundaries (perf_counter_ns values) under ``label``."""
    _TRACE_LOG.setdefault(label, []).append(
        tuple(b - a for a, b in zip(times, times[1:])))


def trace_summary():
    """``{label: {"calls": n, "median_us": [...per phase...]}}`` of the traced calls so far,
    with the native phases of the fast calls under ``"native"`` (lookup, clear, edges, enqueue)."""
    out = {}
    native = _native.trace_native()
    if native:
        _TRACE_LOG.setdefault("native", []).extend(tuple(p) for p in native)
    for label, rows in _TRACE_LOG.items():
        cols = list(zip(*rows))
        med = [sorted(c)[len(c) // 2] / 1000 for c in cols]
        out[label] = {"calls": len(rows), "median_us": [round(m, 2) for m in med]}
    return out


_PHASE_NAMES = {
    "fast torch histogram": "key+lookup, checks, alloc counts, stream, native run, then alloc "
                            "and copy edges",
    "fast torch bincount": "key+lookup, checks, alloc counts, stream, native run",
    "native": "lookup, clear counts, copy edges, enqueue (order+launches+event; small inputs: "
              "0, 0, the one launch)",
}


def _print_trace():
    summary = trace_summary()
    if not summary:
        return
    print("smemkit trace (median us per call and phase):", file=sys.stderr)
    for label, s in summary.items():
        names = _PHASE_NAMES.get(label, "total")
        print(f"  {label}: {s['calls']} calls; {names}: {s['median_us']} "
              f"(sum {round(sum(s['median_us']), 2)})", file=sys.stderr)


def torch_histogram_traced(a, bins, range, weights, density, backend, strategy, out_of_range,
                           deterministic):
    """:func:`torch_histogram` with each phase timed (SMEMKIT_PY_TRACE=1)."""
    c = time.perf_counter_ns
    t0 = c()
    if weights is not None or density or range is None:
        return None
    lo_hi = range if range.__class__ is tuple else None
    if lo_hi is None or len(lo_hi) != 2:
        return None
    lo, hi = lo_hi
    dev = a.get_device()
    key = ("torch-hist", a.dtype, dev, bins, bins.__class__, lo, hi, lo.__class__, hi.__class__,
           backend, strategy, out_of_range, deterministic)
    try:
        plan = _PLANS.get(key)
    except TypeError:
        return None
    t1 = c()
    if plan is None or not a.is_contiguous():
        return None
    ptr = a.data_ptr()
    if ptr & 15:
        return None
    call, counts_dtype, edges_dtype, nedges, device = plan
    t = _T
    t2 = c()
    counts = t.empty(call.nbins, dtype=counts_dtype, device=device)
    t3 = c()
    stream = t.stream(dev)
    t4 = c()
    call.run(stream, ptr, a.numel(), 0, counts.data_ptr(), 0)
    t5 = c()
    edges = t.empty(nedges, dtype=edges_dtype, device=device)
    call.copy_edges(stream, edges.data_ptr())
    t6 = c()
    record("fast torch histogram", (t0, t1, t2, t3, t4, t5, t6))
    return counts, edges


def torch_bincount_traced(x, weights, minlength, backend, strategy, out_of_range, deterministic):
    """:func:`torch_bincount` with each phase timed (SMEMKIT_PY_TRACE=1)."""
    c = time.perf_counter_ns
    t0 = c()
    if weights is not None or out_of_range is None:
        return None
    dev = x.get_device()
    key = ("torch-bincount", x.dtype, dev, minlength, minlength.__class__, backend, strategy,
           out_of_range, deterministic)
    try:
        plan = _PLANS.get(key)
    except TypeError:
        return None
    t1 = c()
    if plan is None or x.dim() != 1 or not x.is_contiguous():
        return None
    ptr = x.data_ptr()
    if ptr & 15:
        return None
    call, counts_dtype, _, _, device = plan
    t = _T
    t2 = c()
    counts = t.empty(call.nbins, dtype=counts_dtype, device=device)
    t3 = c()
    stream = t.stream(dev)
    t4 = c()
    call.run(stream, ptr, x.numel(), 0, counts.data_ptr(), 0)
    t5 = c()
    record("fast torch bincount", (t0, t1, t2, t3, t4, t5))
    return counts


if TRACE:
    import atexit

    atexit.register(_print_trace)
    torch_histogram = torch_histogram_traced  # noqa: F811
    torch_bincount = torch_bincount_traced  # noqa: F811

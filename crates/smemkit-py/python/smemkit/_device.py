"""GPU arrays histogrammed in place, with numpy's semantics and results of the input's kind.

torch tensors and CuPy arrays are read through their own attributes (pointer, dtype, strides,
device) and the work is enqueued on the framework's current stream, where the framework orders
its own kernels; the outputs are allocated by the same framework on that stream, so its
stream-ordered allocator keeps them (and the inputs, as for any of its kernels) valid. JAX arrays
and other DLPack producers are read through ``__dlpack__(stream=...)``, which makes our stream
wait for the data; ``__cuda_array_interface__`` arrays are read on the stream they name. JAX
cannot allocate writable buffers, so those outputs are allocated by torch (or CuPy) and handed to
JAX through DLPack, zero-copy.

Host synchronisation happens only where the result's shape or edges depend on the data:
``histogram`` without ``range`` (one min/max read back; pass ``range=`` to avoid it), ``bincount``
without ``out_of_range`` (numpy's length ``max(x) + 1`` and its check for negative values; pass
``minlength=`` with ``out_of_range='ignore'`` to avoid it), and ``out_of_range='error'`` (the
tallies are read back to raise).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections import deque

import numpy as np

from . import _native
from . import _device_half
from . import _ranges

_DL_CUDA = 2
_SUPPORTED = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "bfloat16", "float32", "float64")
# Samples numpy bins in their own 16-bit arithmetic (edges of their dtype).
_HALF = ("float16", "bfloat16")

# (events, objects) of DLPack inputs that must outlive the kernels reading them.
_PENDING: deque = deque()
# Device copies of edges, per (framework, device, edges key): reused, cloned for each result.
_EDGES: dict = {}


def _module_of(obj) -> str:
    return type(obj).__module__.split(".")[0]


def _torch():
    return sys.modules.get("torch")


def _cupy():
    return sys.modules.get("cupy")


def device_kind(obj):
    """``'torch'``, ``'cupy'``, ``'jax'``, ``'dlpack'`` or ``'cai'`` for an array on a CUDA device,
    None for anything else (host arrays, lists)."""
    mod = _module_of(obj)
    if mod == "torch" and _torch() is not None and isinstance(obj, _torch().Tensor):
        return "torch" if obj.is_cuda else None
    if mod == "cupy" and _cupy() is not None and isinstance(obj, _cupy().ndarray):
        return "cupy"
    dl = getattr(type(obj), "__dlpack_device__", None)
    if dl is not None and hasattr(obj, "__dlpack__"):
        device_type, _ = obj.__dlpack_device__()
        if int(device_type) == _DL_CUDA:
            return "jax" if mod in ("jax", "jaxlib") else "dlpack"
        if int(device_type) in (1, 3):
            return None
        raise NotImplementedError(
            f"arrays on DLPack device {_native.dlpack_device_name(int(device_type))} are not "
            "supported (smemkit reads host memory and CUDA device memory)"
        )
    try:
        if getattr(obj, "__cuda_array_interface__", None) is not None:
            return "cai"
    except Exception:
        return None
    return None


def _event_done(event) -> bool:
    """Whether a recorded event has completed: torch's events answer ``query()``, CuPy's ``done``."""
    query = getattr(event, "query", None)
    return bool(query()) if query is not None else bool(event.done)


class _Frame:
    """The framework that allocates the outputs and whose current stream runs the work."""

    def __init__(self, name: str, device: int):
        self.name = name
        self.device = device
        if name == "torch":
            self.lib = _torch()
        elif name == "cupy":
            self.lib = _cupy()
        else:
            raise AssertionError(name)

    @staticmethod
    def for_output(kind: str, device: int, producer=None) -> "_Frame":
        if kind in ("torch", "cupy"):
            return _Frame(kind, device)
        # JAX and generic producers: a framework that can allocate device memory.
        preferred = ("cupy", "torch") if kind == "cai" else ("torch", "cupy")
        for name in preferred:
            try:
                __import__(name)
            except ImportError:
                continue
            return _Frame(name, device)
        raise NotImplementedError(
            f"GPU arrays of {_module_of(producer)} need torch or CuPy installed: smemkit allocates "
            "its outputs with one of them (and hands them over through DLPack)"
        )

    def stream(self) -> int:
        if self.name == "torch":
            raw = getattr(self.lib._C, "_cuda_getCurrentRawStream", None)
            if raw is not None:  # the handle without building a Stream object (per-call cost)
                return raw(self.device)
            return self.lib.cuda.current_stream(self.device).cuda_stream
        with self.lib.cuda.Device(self.device):
            return self.lib.cuda.get_current_stream().ptr

    def use_stream(self, handle: int):
        """A context making ``handle`` the current stream (allocations ordered on it)."""
        if self.name == "torch":
            return self.lib.cuda.stream(self.lib.cuda.ExternalStream(handle, device=self.device))
        return self.lib.cuda.ExternalStream(handle)

    def empty(self, n: int, dtype: str):
        if self.name == "torch":
            return self.lib.empty(n, dtype=getattr(self.lib, dtype), device=f"cuda:{self.device}")
        with self.lib.cuda.Device(self.device):
            return self.lib.empty(n, dtype=dtype)

    def ptr(self, a) -> int:
        return a.data_ptr() if self.name == "torch" else a.data.ptr

    def edges(self, key, make):
        """The edges on the device, of the dtype of ``make()``'s host array (cached; a fresh copy
        for every result)."""
        k = (self.name, self.device, key)
        cached = _EDGES.get(k)
        if cached is None:
            host = make()
            if self.name == "torch":
                cached = self.lib.from_numpy(np.ascontiguousarray(host)).to(f"cuda:{self.device}")
            else:
                with self.lib.cuda.Device(self.device):
                    cached = self.lib.asarray(host)
            if len(_EDGES) > 256:
                _EDGES.clear()
            _EDGES[k] = cached
        return cached.clone() if self.name == "torch" else cached.copy()

    def capturing(self) -> bool:
        try:
            if self.name == "torch":
                return self.lib.cuda.is_current_stream_capturing()
            return self.lib.cuda.get_current_stream().is_capturing()
        except Exception:
            return False

    def keep_until_done(self, objects):
        """Keeps ``objects`` alive until the current stream has run what is enqueued so far."""
        while _PENDING and _event_done(_PENDING[0][0]):
            _PENDING.popleft()
        if self.capturing():
            return
        if self.name == "torch":
            with self.lib.cuda.device(self.device):
                event = self.lib.cuda.Event()
                event.record()
        else:
            with self.lib.cuda.Device(self.device):
                event = self.lib.cuda.Event()
                event.record()
        _PENDING.append((event, objects))


class Input:
    """One device array: address, element count, dtype name, device, layout, framework."""

    def __init__(self, obj, kind: str, name: str, frame: _Frame | None = None):
        self.obj = obj
        self.kind = kind
        self.name = name
        self.keep = []
        if kind == "torch":
            self.dtype = str(obj.dtype).removeprefix("torch.")
            self.device = obj.device.index
            self.ptr = obj.data_ptr()
            self.shape = tuple(obj.shape)
            self.strides = tuple(obj.stride())
            self.frame = frame or _Frame("torch", self.device)
        elif kind == "cupy":
            self.dtype = str(obj.dtype)
            self.device = obj.device.id
            self.ptr = obj.data.ptr
            self.shape = tuple(obj.shape)
            self.strides = tuple(s // obj.itemsize for s in obj.strides) if obj.itemsize else ()
            self.frame = frame or _Frame("cupy", self.device)
        elif kind in ("jax", "dlpack"):
            _, device = obj.__dlpack_device__()
            self.device = int(device)
            self.frame = frame or _Frame.for_output(kind, self.device, obj)
            handle = self.frame.stream()
            try:
                capsule = obj.__dlpack__(stream=handle or 1, max_version=(1, 0))
            except TypeError:
                capsule = obj.__dlpack__(stream=handle or 1)
            info = _native.dlpack_capsule_info(capsule)
            self.dtype = info["dtype"]
            self.ptr = info["data"] + info["byte_offset"]
            self.shape = tuple(info["shape"])
            self.strides = info["strides"]
            self.keep = [capsule, obj]
        elif kind == "cai":
            info = _native.cuda_array_interface(obj)
            self.frame = frame
            typestr = info["typestr"]
            dt = np.dtype(typestr)
            if not dt.isnative:
                raise TypeError(f"{name}: CUDA arrays of non-native byte order ({typestr}) are not supported")
            self.dtype = str(dt)
            self.ptr = info["data"]
            self.shape = tuple(info["shape"])
            self.strides = (
                None if info["strides"] is None
                else tuple(s // dt.itemsize for s in info["strides"])
            )
            self.stream_kind, self.stream_handle = info["stream"]
            self.device = _cai_device(self.ptr)
            if self.frame is None:
                self.frame = _Frame.for_output("cai", self.device, obj)
        else:
            raise AssertionError(kind)
        self.size = math.prod(self.shape)

    def run_stream(self) -> int:
        if self.kind == "cai" and self.stream_kind == "handle":
            return self.stream_handle
        if self.kind == "cai" and self.stream_kind == "per-thread":
            return 2
        return self.frame.stream()

    def layout(self):
        """``'C'`` when the elements are one block in logical (row-major) order, ``'dense'`` when
        one block in another order, None otherwise."""
        if self.strides is None or self.size <= 1:
            return "C"
        dims = [(st, sh) for st, sh in zip(self.strides, self.shape) if sh != 1]
        expected = 1
        for st, sh in reversed(dims):
            if st != expected:
                break
            expected *= sh
        else:
            return "C"
        expected = 1
        for st, sh in sorted(dims, key=lambda d: abs(d[0])):
            if st != expected:
                return None
            expected *= sh
        return "dense"

    def check_layout(self, paired: "Input | None" = None):
        lay = self.layout()
        if paired is None and lay is not None:
            return
        if paired is not None and lay == "C" and paired.layout() == "C":
            return
        if (paired is not None and lay == "dense" and paired.layout() == "dense"
                and self.strides == paired.strides and self.shape == paired.shape):
            return
        hint = {"torch": ".contiguous()", "cupy": "cupy.ascontiguousarray(...)",
                "jax": "a fresh array"}.get(self.kind, "a contiguous copy")
        raise ValueError(
            f"{self.name} is a strided view of GPU memory (shape {self.shape}, strides "
            f"{self.strides} elements){' laid out unlike the weights' if paired is not None else ''}: "
            f"smemkit reads device arrays in place and does not copy them; pass {hint}"
        )

    def minmax(self):
        """The smallest and largest element, read back to the host (a synchronisation)."""
        o = self.obj
        if self.kind == "torch":
            o = o.reshape(-1)
            if o.dtype == _torch().bool:
                o = o.view(_torch().uint8)
            lo, hi = _torch().aminmax(o)
            return lo.item(), hi.item()
        if self.kind in ("cupy", "jax"):
            return o.min().item(), o.max().item()
        raise NotImplementedError(
            f"{self.name}: finding the range of a {_module_of(o)} GPU array needs its framework; "
            "pass range= (or minlength= with out_of_range=) instead"
        )

    def check_aligned(self):
        if self.size and self.ptr % 16:
            hint = ".clone()" if self.kind == "torch" else "a copy"
            raise ValueError(
                f"{self.name} starts at {self.ptr:#x}, which is not 16-byte aligned (a view at an "
                f"offset into its buffer); smemkit's kernels read 16 bytes at a time: pass {hint}"
            )


def _cai_device(ptr: int) -> int:
    """The CUDA device holding ``ptr`` (through CuPy or torch, whichever is loaded)."""
    cp = _cupy()
    if cp is not None:
        try:
            return cp.cuda.runtime.pointerGetAttributes(ptr).device
        except Exception:
            pass
    torch = _torch()
    if torch is None and cp is None:
        raise NotImplementedError(
            "GPU arrays given by __cuda_array_interface__ need torch or CuPy installed"
        )
    if torch is not None and torch.cuda.device_count() > 1:
        raise NotImplementedError(
            "__cuda_array_interface__ does not say which GPU holds the array: on a machine with "
            "several GPUs, smemkit needs CuPy installed to ask the driver"
        )
    return 0


def _finish(frame: _Frame, kind: str, arr):
    """An output of ``frame`` as an array of the input's kind."""
    if kind == "jax":
        import jax.dlpack

        return jax.dlpack.from_dlpack(arr)
    return arr


def _cast(frame: _Frame, arr, dtype: str):
    if frame.name == "torch":
        return arr.to(getattr(frame.lib, dtype))
    return arr.astype(dtype)


def _sample_dtype(inp: Input, for_bincount: bool) -> str:
    d = inp.dtype
    if d == "bool":
        if not for_bincount:
            warnings.warn(
                f"Converting input from bool to {np.uint8} for compatibility.",
                RuntimeWarning,
                stacklevel=4,
            )
        return "uint8"  # the same bytes, read in place
    if d not in _SUPPORTED:
        raise TypeError(
            f"cannot histogram GPU samples of dtype {d}: smemkit reads integers, float16, "
            "bfloat16, float32 and float64"
        )
    if for_bincount and (d.startswith("float") or d == "bfloat16"):
        raise TypeError(
            f"Cannot cast array data from dtype('{d}') to dtype('int64') according to the rule 'safe'"
        )
    return d


def _weights(weights, a: Input, kind: str, frame: _Frame, float_ints: bool = False):
    """The weights as the native call reads them (see ``_device_weights``)."""
    from ._device_weights import weights_of

    return weights_of(weights, a, kind, frame, float_ints)


_INT_WEIGHTS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _run(a: Input, dtype: str, w: Input | None, nbins: int, rng, edges, integer, policy,
         strategy, deterministic):
    frame = a.frame
    stream = a.run_stream()
    words = "int64" if w is None or w.result_dtype in _INT_WEIGHTS else "float64"
    if a.kind == "cai" and a.stream_kind == "handle":
        with frame.use_stream(stream):
            out = frame.empty(nbins + 3, words)
    else:
        out = frame.empty(nbins + 3, words)
    _native.device_histogram(
        a.device, stream,
        (a.ptr, a.size, dtype, 0 if w is None else w.ptr, None if w is None else w.native_dtype),
        frame.ptr(out),
        (None if edges is not None else nbins, None if isinstance(rng, _Extremes) else rng, edges,
         integer, list(rng) if isinstance(rng, _Extremes) else None),
        (policy, strategy, deterministic),
    )
    keep = a.keep + (w.keep if w is not None else [])
    if keep:
        frame.keep_until_done(keep)
    if policy == "error":
        tallies = out[nbins:]
        if a.kind == "cai" and a.stream_kind == "handle":
            with frame.use_stream(stream):
                t = tallies.cpu().numpy() if frame.name == "torch" else tallies.get()
        else:
            t = tallies.cpu().numpy() if frame.name == "torch" else tallies.get()
        t = t.view(np.uint64)
        if t.any():
            raise ValueError(
                f"out-of-range policy `error`: {t[0]} samples below the range, {t[1]} above it "
                f"and {t[2]} NaN"
            )
    return out[:nbins]


def _given_edges(frame: _Frame, bins_arg):
    given = np.asarray(bins_arg)
    return frame.edges(("given", given.tobytes(), str(given.dtype)), lambda: given)


def _resolve(a: Input, dtype, nbins, edges, range_, bins_arg):
    """``(range, edges, nbins, (key, host edges thunk))``: uniform bins over a given range, or the
    edges (given, or numpy's from the data's minimum and maximum: a synchronisation)."""
    if edges is None and range_ is not None and not isinstance(range_, _Extremes):
        range_ = _typed_range(range_, dtype)
    if dtype in _HALF:
        return _resolve_half(a, dtype, nbins, edges, range_, bins_arg)
    edges_dtype = "float32" if dtype == "float32" else "float64"
    rng = None
    if edges is None and dtype in _DATA_RANGE_UNIFORM and (
            range_ is None or isinstance(range_, _Extremes)):
        # numpy's range from the data: uniform bins over the data's minimum and maximum (read on
        # the device, or given by an estimator's pass), resolved by the library from the two
        # values exactly as from the whole data, so the kernels count uniform bins rather than
        # searching edges.
        extremes = range_ if isinstance(range_, _Extremes) else _Extremes(
            () if a.size == 0 else a.minmax())
        wide, edges_dtype = _native.data_bin_edges(dtype, nbins, list(extremes))
        key = ("data", dtype, nbins, tuple(extremes), edges_dtype)
        return extremes, None, nbins, (key, lambda: wide.astype(edges_dtype))
    if edges is None and range_ is not None:
        first, last = range_
        weak = type(first) in (int, float) and type(last) in (int, float)  # Python numbers
        if (dtype == "float32" and not weak
                and np.result_type(first, last, np.empty(0, dtype)) != np.float32):
            raise NotImplementedError(
                "a float64 range (numpy scalars) makes numpy bin float32 samples in float64: "
                "pass the range as Python floats, or float64 samples"
            )
        rng = (float(first), float(last))
    elif edges is None:
        # numpy's range from the data: its edges depend only on the minimum, maximum, bins and
        # dtype, so numpy's (the library's) rule on the two values gives the same edges.
        if a.size == 0:
            lo_hi = np.array([0, 1], dtype)
        else:
            lo, hi = a.minmax()
            lo_hi = np.array([lo, hi], dtype)
        edges = _native.histogram_bin_edges(lo_hi, nbins, None)
    # The host edges are made only when their device copy is not cached yet.
    if edges is not None:
        nb = edges.size - 1
        if bins_arg is not None:
            given = np.asarray(bins_arg)
            key = ("given", edges.tobytes(), str(given.dtype))
            return rng, edges, nb, (key, lambda: given)
        key = ("data", edges.tobytes(), edges_dtype)
        return rng, edges, nb, (key, lambda: edges.astype(edges_dtype))
    key = ("uniform", nbins, rng, dtype)
    return rng, None, nbins, (key, lambda: _native.histogram_bin_edges(
        np.empty(0, dtype), nbins, rng).astype(edges_dtype, copy=False))


# Sample types whose bins over the data's range are resolved from its extremes (the floats; an
# integer's extremes beyond 2**53 would not pass through float64 exactly).
_DATA_RANGE_UNIFORM = ("float32", "float64")


def _typed_range(range_, dtype):
    """The range as given, or, where numpy bins in the samples' own type over it (float32 or
    float16 scalars, see ``_ranges``), as ``_Extremes``: numpy's bins over a data range of those
    two values."""
    first, last = range_
    weak = type(first) in (int, float) and type(last) in (int, float)  # Python numbers
    if weak:
        if (dtype == "bfloat16" and _ranges.range_arithmetic(
                first, last, np.dtype(np.float64), "bfloat16") == _ranges.INT_RANGE):
            raise NotImplementedError(
                "a range of integers for bfloat16 GPU samples is not supported yet (numpy with "
                "ml_dtypes then bins in bfloat16 arithmetic; host arrays take it): give the "
                "range as floats")
        return range_
    if dtype == "bfloat16":
        return _bfloat16_range(range_)
    if dtype not in _np_dtypes:
        return range_
    sample_dtype = _np_dtypes[dtype]
    bin_type = np.result_type(first, last, np.empty(0, sample_dtype))
    half = "bfloat16" if dtype == "bfloat16" else None
    arithmetic = _ranges.range_arithmetic(first, last, bin_type, half)
    if arithmetic == _ranges.WIDE:
        return range_
    if bin_type != sample_dtype:
        raise NotImplementedError(
            f"a range of {bin_type} values for {dtype} GPU samples is not supported yet (numpy "
            f"bins the samples widened to {bin_type}): give the range as Python floats")
    if arithmetic != _ranges.SAMPLE_TYPE:
        range_type = np.result_type(first, last)
        raise NotImplementedError(
            f"a range of {range_type} values for {dtype} GPU samples is not supported yet (numpy "
            f"computes the edges in {range_type} and the bins in {bin_type}; host arrays take "
            "it): give the range as Python floats")
    lo, hi = float(sample_dtype.type(first)), float(sample_dtype.type(last))
    _ranges.check_range(lo, hi)
    return _Extremes((lo, hi))


def _bfloat16_range(range_):
    """A range of numpy scalars for bfloat16 GPU samples: numpy with ml_dtypes widens the samples
    to float64 beside float64 scalars (as beside Python floats), refuses integer scalars
    (DTypePromotionError, raised here as numpy raises it) and bins in float32 beside float32 or
    float16 scalars, which the GPU path does not follow yet."""
    first, last = range_
    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
    if ml_dtypes is not None:
        bin_type = np.result_type(first, last, np.empty(0, ml_dtypes.bfloat16))
    elif all(isinstance(v, (int, float, np.float64)) and not isinstance(v, bool)
             and not isinstance(v, np.integer) for v in (first, last)):
        bin_type = np.dtype(np.float64)
    else:
        bin_type = None
    if bin_type == np.float64:
        _ranges.check_bfloat16_bounds(first, last)
        return range_
    raise NotImplementedError(
        f"a range of {type(first).__name__} and {type(last).__name__} values for bfloat16 GPU "
        f"samples is not supported yet (numpy with ml_dtypes bins in {bin_type or 'their type'} "
        "there): give the range as Python floats")


# numpy's dtypes of the GPU sample types numpy has (bfloat16 is ml_dtypes').
_np_dtypes = {name: np.dtype(name) for name in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "float32", "float64")}


class _Extremes(tuple):
    """The data's ``(min, max)`` read on the device (``()``: no samples), standing for the range
    of uniform bins over the data's range."""


def _resolve_half(a: Input, dtype, nbins, edges, range_, bins_arg):
    """``_resolve`` for float16 and bfloat16 samples, as numpy (with ml_dtypes for bfloat16) bins
    them over a range of Python numbers, which the library's engines follow: float16 edges are the
    float64 linspace rounded once to float16 (and the estimate partly in float16); bfloat16 does
    not promote weakly, so its histogram is float64's (float64 edges). Without a range the bins
    are numpy's over the data's extremes in 16-bit arithmetic: the extremes are reduced on the
    device and the two values read back (a synchronisation of the producer's stream; the samples
    never leave the device); the library makes the bins from them as from the whole data."""
    if edges is not None and bins_arg is not None:
        given = np.asarray(bins_arg)
        key = ("given", edges.tobytes(), str(given.dtype))
        return None, edges, edges.size - 1, (key, lambda: given)
    if edges is not None:
        raise NotImplementedError(
            f"{dtype} GPU samples with edges from an estimator: not implemented for 16-bit floats"
        )
    if range_ is None or isinstance(range_, _Extremes):
        extremes = range_ if isinstance(range_, _Extremes) else _Extremes(
            () if a.size == 0 else a.minmax())
        wide, edges_dtype = _native.data_bin_edges(dtype, nbins, list(extremes))
        key = ("data16", dtype, nbins, extremes, edges_dtype)
        # bfloat16 edges are made on the host as float32 (which holds them exactly) and cast on
        # the device where the framework has bfloat16 (_half_edges).
        host = "float32" if edges_dtype == "bfloat16" else edges_dtype
        return extremes, None, nbins, (key, lambda: wide.astype(host))
    first, last = range_
    if not (type(first) in (int, float) and type(last) in (int, float)):
        raise NotImplementedError(
            f"{dtype} GPU samples need the range as Python numbers: numpy bins them in {dtype} "
            "only then (numpy scalars of a wider type widen the binning)"
        )
    rng = (float(first), float(last))
    wide = _native.histogram_bin_edges(np.empty(0, np.float64), nbins, rng)
    key = ("uniform", nbins, rng, dtype)
    if dtype == "float16":
        return rng, None, nbins, (key, lambda: wide.astype(np.float16))
    return rng, None, nbins, (key, lambda: wide)


def estimate(a_obj, kind, rule, range_):
    """numpy's bins for the estimator ``rule`` on GPU samples, computed on the device where they
    are (the samples never come back; the bin count does: a synchronisation of the producer's
    stream). ``(nbins, None)`` with a range (uniform bins over it), ``(None, edges)`` without
    (numpy's float64 edges over the data's extremes)."""
    a = Input(a_obj, kind, "a")
    dtype = _sample_dtype(a, False)
    if dtype in _HALF:
        return _half_estimate(a_obj, kind, dtype, rule, range_)
    nbins, edges, extremes = _device_estimate(a, kind, dtype, rule, range_)
    if range_ is not None:
        return nbins, None
    if extremes is not None and dtype in _DATA_RANGE_UNIFORM:
        # Uniform bins over the extremes the estimator's first pass found (numpy's bins: the
        # same as its edges), without reading the samples again.
        return nbins, _Extremes(extremes)
    return None, edges


def _device_estimate(a: Input, kind, dtype, rule, range_):
    """The library's device estimate of ``a`` (read in place, C order): ``(nbins, edges,
    extremes)``."""
    if a.size and a.layout() != "C":
        hint = {"torch": ".contiguous()", "cupy": "cupy.ascontiguousarray(...)"}.get(kind, "a copy")
        raise ValueError(
            f"a is not one block in C order (shape {a.shape}, strides {a.strides} elements): the "
            f"bin estimators read device arrays in place; pass {hint}")
    rng = None
    if range_ is not None:
        first, last = range_
        rng = (float(first), float(last))
    stream = a.run_stream()
    if a.kind == "cai" and a.stream_kind == "handle":
        with a.frame.use_stream(stream):
            nbins, edges, extremes = _native.device_estimate(
                (a.device, stream, a.ptr, a.size, dtype), rule, rng)
    else:
        nbins, edges, extremes = _native.device_estimate(
            (a.device, stream, a.ptr, a.size, dtype), rule, rng)
    return nbins, edges, extremes


def _half_estimate(a_obj, kind, dtype, rule, range_):
    """``estimate`` for float16 and bfloat16 samples (``_device_half``)."""
    def counts(nbins, rng):
        hist, _ = histogram(a_obj, kind, nbins, None, rng, None, False, "ignore", None, False,
                            None)
        if kind == "torch":
            return hist.cpu().numpy()
        if kind == "cupy":
            return _cupy().asnumpy(hist)
        return np.asarray(hist)

    def sums():
        # scott and doane: the library's device estimate sums the samples as numpy does.
        nbins, _, extremes = _device_estimate(Input(a_obj, kind, "a"), kind, dtype, rule, range_)
        return nbins, None if range_ is not None else extremes

    nbins, extremes = _device_half.estimate(
        a_obj, kind, dtype, rule, range_, counts, lambda: _bit_pattern_counts(a_obj, kind), sums)
    return nbins, (None if extremes is None else _Extremes(extremes))


def _bit_pattern_counts(a_obj, kind) -> np.ndarray:
    """How many of the 16-bit samples ``a_obj`` hold each bit pattern, counted on the device by
    the library's bincount of the samples read as uint16 (65536 integer bins); int64 on the
    host, indexed by the pattern. A torch without uint16 reads them as int16, in 65536 bins over
    [-32768, 32767] (one value a bin, numpy's bins: slower), then rotated to the same order."""
    shifted = False
    if kind == "torch":
        torch = _torch()
        if hasattr(torch, "uint16"):
            bits = a_obj.reshape(-1).view(torch.uint16)
        else:
            bits, shifted = a_obj.reshape(-1).view(torch.int16), True
    elif kind == "jax":
        import jax
        import jax.numpy as jnp

        bits = jax.lax.bitcast_convert_type(a_obj.reshape(-1), jnp.uint16)
    else:
        bits = a_obj.reshape(-1).view("uint16")
    inp = Input(bits, kind, "a")
    if shifted:
        counts = _run(inp, "int16", None, 65536, (-32768.0, 32767.0), None, False, "ignore",
                      None, False)
    else:
        counts = _run(inp, "uint16", None, 65536, None, None, True, "ignore", None, False)
    counts = counts.cpu().numpy() if inp.frame.name == "torch" else counts.get()
    # int16 -32768 (bin 0) is the pattern 0x8000.
    return np.roll(counts, 32768) if shifted else counts


def bin_edges(a_obj, kind, nbins, edges, range_, bins_arg):
    if isinstance(edges, _Extremes):
        edges, range_ = None, edges
    a = Input(a_obj, kind, "a")
    dtype = _sample_dtype(a, False)
    frame = a.frame
    if edges is not None and edges.size < 2:
        return _finish(frame, kind, _given_edges(frame, bins_arg))
    _, _, _, (key, make) = _resolve(a, dtype, nbins, edges, range_, bins_arg)
    return _finish(frame, kind, _half_edges(frame, key, frame.edges(key, make)))


def _half_edges(frame: _Frame, key, edges):
    """bfloat16 edges from the data's range (held as float32) cast to bfloat16 on the device,
    as numpy with ml_dtypes returns them; float32 where the framework has no bfloat16."""
    if key[0] != "data16" or key[-1] != "bfloat16":
        return edges
    try:
        return _cast(frame, edges, "bfloat16")
    except (AttributeError, TypeError, ValueError):
        return edges


def histogram(a_obj, kind, nbins, edges, range_, weights, density, out_of_range, strategy,
              deterministic, bins_arg):
    if isinstance(edges, _Extremes):
        edges, range_ = None, edges
    a = Input(a_obj, kind, "a")
    dtype = _sample_dtype(a, False)
    a.check_aligned()
    w = _weights(weights, a, kind, a.frame)
    if w is not None:
        if w.shape != a.shape:
            raise ValueError("weights should have the same shape as a.")
        if w.result_dtype == "bool" and bins_arg is not None:
            # numpy adds int64 cumulative sums into a bool result there, which its casting refuses.
            raise TypeError("Cannot cast ufunc 'add' output from dtype('int64') to dtype('bool') "
                            "with casting rule 'same_kind'")
        a.check_layout(w)
    else:
        a.check_layout()
    frame = a.frame
    if edges is not None and edges.size < 2:
        # numpy: no bins, no counts.
        empty = frame.empty(0, "int64" if w is None else w.result_dtype)
        if density:
            empty = _cast(frame, empty, "float64")
        return (_finish(frame, kind, empty),
                _finish(frame, kind, _given_edges(frame, bins_arg)))
    rng, edges, nb, (key, make) = _resolve(a, dtype, nbins, edges, range_, bins_arg)
    counts = _run(a, dtype, w, nb, rng, edges, False, out_of_range, strategy, deterministic)
    if w is not None and w.result_dtype not in ("float64", "int64"):
        counts = _cast(frame, counts, w.result_dtype)
    bin_edges = _half_edges(frame, key, frame.edges(key, make))
    if density:
        db = bin_edges[1:] - bin_edges[:-1]
        db = _cast(frame, db, "float64")
        counts = counts / db / counts.sum()
    return _finish(frame, kind, counts), _finish(frame, kind, bin_edges)


def bincount(x_obj, kind, weights, minlength, out_of_range, strategy, deterministic):
    x = Input(x_obj, kind, "x")
    if len(x.shape) == 0:
        raise ValueError("object of too small depth for desired array")
    if len(x.shape) > 1:
        raise ValueError("object too deep for desired array")
    dtype = _sample_dtype(x, True)
    x.check_aligned()
    x.check_layout()
    # numpy's bincount sums integer weights as float64 (no wrapping): so does this one.
    w = _weights(weights, x, kind, x.frame, float_ints=True)
    if w is not None:
        if len(w.shape) != 1:
            raise ValueError("object too deep for desired array")
        if w.size != x.size:
            raise ValueError("The weights and list don't have the same length.")
        w.check_layout()
    frame = x.frame
    policy = out_of_range or "ignore"
    if out_of_range is None:
        if x.size == 0:
            return _finish(frame, kind, _zeros(frame, minlength))
        lo, hi = x.minmax()
        if lo < 0:
            raise ValueError("'list' argument must have no negative elements")
        nbins = max(int(hi) + 1, minlength)
    else:
        if minlength < 1:
            raise ValueError(
                "bincount with out_of_range needs minlength >= 1: the result has exactly "
                "minlength bins"
            )
        nbins = minlength
    counts = _run(x, dtype, w, nbins, None, None, True, policy, strategy, deterministic)
    return _finish(frame, kind, counts)


def _zeros(frame: _Frame, n: int):
    z = frame.empty(n, "int64")
    z.zero_() if frame.name == "torch" else z.fill(0)
    return z

"""Weights of GPU arrays as the native call reads them: float32 and float64 in place (float16
from torch or CuPy widened to float32); integer
and bool weights summed by the kernels as exact 64-bit integers (int64 and uint64 in place,
narrower types widened to int64 by their framework on the current stream, never to float64); or,
for bincount and histogramdd, whose numpy sums are float64, a float64 copy."""

from __future__ import annotations

from ._device import _INT_WEIGHTS, Input, _Frame, _torch, device_kind


def weights_of(weights, a: Input, kind: str, frame: _Frame, float_ints: bool = False):
    """The weights as the native call reads them; integer weights summed exactly as int64, or
    with ``float_ints`` (bincount and histogramdd, whose numpy sums are float64) as a float64
    copy."""
    if weights is None:
        return None
    wkind = device_kind(weights)
    if wkind is None:
        raise TypeError(
            f"the samples are on a GPU ({kind}) but the weights are not: pass both on the same device"
        )
    w = Input(weights, wkind, "weights", frame if wkind not in ("torch", "cupy") else None)
    if w.device != a.device:
        raise ValueError(f"the samples are on CUDA device {a.device}, the weights on {w.device}")
    if float_ints and w.dtype in _INT_WEIGHTS and wkind in ("torch", "cupy"):
        return _float_weights(w, weights, wkind)
    if (not float_ints and w.dtype in _INT_WEIGHTS
            and (wkind in ("torch", "cupy") or w.dtype in _WORD_INTS)):
        return _integer_weights(w, weights, wkind)
    if w.dtype == "float16" and wkind in ("torch", "cupy"):
        # Widened exactly to float32 on the current stream; the sums come back as float16, the
        # dtype numpy gives them.
        wide = weights.float() if wkind == "torch" else weights.astype("float32")
        out = Input(wide, wkind, "weights", None)
        out.keep = out.keep + [wide]
        out.result_dtype = "float16"
        out.native_dtype = "float32"
        return out
    if w.dtype not in ("float32", "float64"):
        raise NotImplementedError(
            f"GPU weights of dtype {w.dtype} are not supported (float32, float64, int64, uint64 "
            "and, from torch or CuPy, every integer type and bool are): convert them first, "
            "e.g. w.double()"
        )
    w.result_dtype = w.dtype
    w.native_dtype = w.dtype
    return w


# Read in place: the kernels sum int64 (uint64 as its two's-complement bits, the same sums modulo
# 2**64).
_WORD_INTS = ("int64", "uint64")


def _integer_weights(w: Input, weights, wkind):
    """Integer and bool weights summed as exact 64-bit integers on the device, modulo 2**64
    (numpy's int64 sums wrap the same way), the sums cast to the weights' type as numpy's
    histogram returns them (its wrapped sums at any magnitude; beyond 2**53 numpy's uniform-bins
    path rounds its float64 block sums, smemkit does not). int64 and uint64 weights are read in
    place; narrower types are widened to int64 by their framework on the current stream (the
    kernels have one integer weight type). Nothing is read back to the host."""
    if w.dtype in _WORD_INTS:
        w.result_dtype = w.dtype
        w.native_dtype = "int64"
        return w
    wide = weights.to(_torch().int64) if wkind == "torch" else weights.astype("int64")
    out = Input(wide, wkind, "weights", None)
    out.keep = out.keep + [wide]
    out.result_dtype = w.dtype
    out.native_dtype = "int64"
    return out


def _float_weights(w: Input, weights, wkind):
    """Integer weights summed as float64 on the device (a float64 copy made on the current
    stream), for bincount and histogramdd, whose numpy results are float64. The sums are exact while they stay
    below 2**53: the weights' extremes are read back (a synchronisation) to refuse larger ones."""
    if w.size:
        lo, hi = w.minmax()
        if max(abs(int(lo)), abs(int(hi))) * w.size > 2**53:
            raise NotImplementedError(
                "integer weights whose float64 sums may exceed 2**53 are not supported by "
                "bincount and histogramdd (numpy sums them in float64; exact integer sums are "
                "histogram's)")
    wide = weights.double() if wkind == "torch" else weights.astype("float64")
    out = Input(wide, wkind, "weights", None)
    out.keep = out.keep + [wide]
    out.result_dtype = "float64"
    out.native_dtype = "float64"
    return out


def complex_parts(weights):
    """``(real, imag)``: contiguous float copies of complex torch or CuPy weights, which numpy's
    histogram sums part by part (its complex result is the two real sums); None for other
    weights."""
    if "complex" not in str(getattr(weights, "dtype", "")):
        return None
    kind = device_kind(weights)
    if kind == "torch":
        return weights.real.contiguous(), weights.imag.contiguous()
    if kind == "cupy":
        import cupy

        return cupy.ascontiguousarray(weights.real), cupy.ascontiguousarray(weights.imag)
    if kind is not None:
        raise TypeError(f"complex GPU weights from {kind} are not supported (torch and CuPy's are)")
    return None


def combine_complex(real, imag):
    """The complex array of two float arrays of one device framework (torch or CuPy)."""
    if device_kind(real) == "torch":
        return _torch().complex(real, imag)
    return real + 1j * imag

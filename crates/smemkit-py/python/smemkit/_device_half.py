"""numpy's bin estimators for float16 and bfloat16 GPU samples (torch, CuPy, JAX).

The library's device estimate reads 4- and 8-byte and integer samples; numpy computes a 16-bit
sample's statistics in float16 (or, with ml_dtypes, bfloat16) arithmetic. The rules whose
statistics are order statistics - the extremes (`sqrt`, `sturges`, `rice`), the quartiles (`fd`,
`auto`) and histograms (`stone`) - are computed here on the device by the array's framework (a
reduction, or one sort of a float32 copy of the samples, which the samples widen to exactly), and
only those few values come back; numpy's own arithmetic then makes the width from them as numpy
makes it from the whole array: the extremes as scalars of the samples' type, the quartiles by
``np.percentile`` over a short array holding the same neighbours at the same fractional
position. `scott` and `doane` need numpy's float16 sums (pairwise, each term rounded to float16),
which these operations do not reproduce: they say so."""

from __future__ import annotations

import numpy as np

from . import _typed_estimators

RULES = ("auto", "fd", "stone", "rice", "sturges", "sqrt")


def scalar_type(dtype: str):
    if dtype == "float16":
        return np.float16
    try:
        import ml_dtypes
    except ImportError:
        raise NotImplementedError(
            "numpy's estimators on bfloat16 GPU samples follow numpy with ml_dtypes' bfloat16, "
            "which is not installed: install ml_dtypes or give a number of bins") from None
    return ml_dtypes.bfloat16


class _Summary:
    """The trimmed samples as numpy's estimators read them: extremes, size and quartiles."""

    def __init__(self, lo, hi, size, dtype, order_statistics):
        self._lo, self._hi, self.size, self.dtype = lo, hi, size, dtype
        self._order_statistics = order_statistics

    def max(self):
        return self._hi

    def min(self):
        return self._lo

    def quartiles(self):
        return _percentiles(self.size, self._order_statistics, self.dtype)


def ranks(n: int):
    """The order statistics numpy's linear percentiles 75 and 25 of ``n`` samples read: the
    neighbours below and above each one's virtual index ``n * q - q``."""
    out = []
    for q in (0.75, 0.25):
        below = int(np.floor(n * q - q))
        out += [below, min(below + 1, n - 1)]
    return out


# Below this many samples their sorted values themselves come back.
_FEW = 12


def _percentiles(n: int, order_statistics, dtype):
    """``np.percentile(x, [75, 25])`` of ``n`` samples, from ``order_statistics(ranks)``: numpy's
    own percentile of a short sorted array holding the same values at the ranks it reads there,
    whose length has the same remainder modulo 4 as ``n`` (so the same fraction between the
    neighbours: numpy's virtual index is ``(n - 1) * q``)."""
    if n < _FEW:
        return np.percentile(np.array(order_statistics(list(range(n))), dtype), [75, 25])
    a75, b75, a25, b25 = order_statistics(ranks(n))
    m = _FEW + (n - _FEW) % 4
    r = ranks(m)
    y = np.empty(m, dtype)
    # Sorted: the 25th percentile's neighbours, then the 75th's, each value repeated up to the
    # next one's rank.
    y[: r[2] + 1] = a25
    y[r[2] + 1: r[0]] = b25
    y[r[0]] = a75
    y[r[0] + 1:] = b75
    return np.percentile(y, [75, 25])


def estimate(x, kind: str, dtype: str, rule: str, range_, histogram):
    """numpy's number of bins for ``rule`` on the 16-bit GPU samples ``x`` (the framework's
    array, any shape), over ``range_`` (Python floats) or the data's extremes.
    ``histogram(nbins, range)`` counts ``x`` on the device into a host array (for 'stone').
    Returns ``(nbins, extremes)``: the data's (min, max) as floats when no range was given, ()
    for no samples, None with a range."""
    if rule in ("scott", "doane"):
        raise NotImplementedError(
            f"numpy's `{rule}` estimator on {dtype} GPU samples is not supported yet (numpy sums "
            f"their deviations in {dtype} arithmetic, which the device does not reproduce): give "
            "a number of bins, or use 'auto', 'fd', 'stone', 'rice', 'sturges' or 'sqrt'")
    st = scalar_type(dtype)
    ops = _Ops(kind)
    flat = ops.flat(x)
    n = ops.size(flat)
    extremes = None
    if range_ is not None:
        first, last = range_
        if not all(type(v) is float or (type(v) is int and dtype == "float16")
                   for v in (first, last)):
            raise NotImplementedError(
                f"an estimator on {dtype} GPU samples takes the range as Python floats (numpy "
                "computes in other types beside other ranges)")
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif n == 0:
        first, last = 0, 1
        extremes = ()
    else:
        lo, hi = ops.minmax(flat)
        first, last = st(lo), st(hi)
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
        extremes = (float(lo), float(hi))
    if first == last:
        first, last = first - 0.5, last + 0.5
    outer = (first, last)
    if range_ is None:
        kept, kept_n = flat, n
        lo_k, hi_k = (st(extremes[0]), st(extremes[1])) if n else (None, None)
    else:
        # numpy keeps the samples inside the outer edges (a range widened when empty).
        kept = ops.select(ops.widen(flat), *_cuts(float(first), float(last), dtype))
        kept_n = ops.size(kept)
        if kept_n:
            lo_v, hi_v = ops.minmax(kept)
            lo_k, hi_k = st(lo_v), st(hi_v)
    if kept_n == 0:
        return 1, extremes
    held = {}

    def order_statistics(at):
        if "sorted" not in held:
            held["sorted"] = ops.sort(ops.widen(kept) if range_ is None else kept)
        return [st(v) for v in ops.at(held["sorted"], at)]

    summary = _Summary(lo_k, hi_k, kept_n, np.dtype(st), order_statistics)

    def counts(_x, bins, range):
        # numpy histograms the trimmed samples over the outer edges: the whole array over them
        # counts the same; over the data's own range, as numpy's bins from the data.
        return (histogram(bins, None if range_ is None else (float(first), float(last))),)

    w = _typed_estimators.width(summary, rule, outer, counts)
    return _typed_estimators.bins_of_width(w, np.dtype(st), outer), extremes


def _cuts(first: float, last: float, dtype: str):
    """float32 bounds that select, among float32 values widened from ``dtype``, exactly the
    samples numpy keeps inside ``[first, last]``: numpy compares float16 samples with a Python
    float in float16 (the float rounded to it), and ml_dtypes' bfloat16 ones in float32 (as
    measured with ml_dtypes 0.6: ``bfloat16(1.296875) >= 1.2968751`` is False)."""
    if dtype == "float16":
        return float(np.float16(first)), float(np.float16(last))
    return float(np.float32(first)), float(np.float32(last))


class _Ops:
    """The few device operations the estimate needs, in the array's framework."""

    def __init__(self, kind: str):
        if kind not in ("torch", "cupy", "jax"):
            raise NotImplementedError(
                "numpy's estimators on 16-bit GPU samples need torch, CuPy or JAX arrays: give a "
                "number of bins")
        self.kind = kind

    def flat(self, x):
        return x.reshape(-1)

    def size(self, x) -> int:
        return int(x.numel()) if self.kind == "torch" else int(x.size)

    def widen(self, x):
        return x.float() if self.kind == "torch" else x.astype("float32")

    def select(self, x, lo: float, hi: float):
        return x[(x >= lo) & (x <= hi)]

    def minmax(self, x):
        if self.kind == "torch":
            import torch

            lo, hi = torch.aminmax(x)
            return lo.item(), hi.item()
        return x.min().item(), x.max().item()

    def sort(self, x):
        if self.kind == "torch":
            return x.sort().values
        if self.kind == "cupy":
            import cupy

            return cupy.sort(x)
        import jax.numpy as jnp

        return jnp.sort(x)

    def at(self, x, ranks):
        if self.kind == "torch":
            import torch

            picked = x[torch.tensor(ranks, device=x.device)]
            return [float(v) for v in picked.cpu().tolist()]
        return [float(x[r].item()) for r in ranks]

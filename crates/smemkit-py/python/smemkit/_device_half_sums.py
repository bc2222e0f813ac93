"""numpy's float16 sums, reproduced on the device, for the `scott` and `doane` estimators.

numpy rounds a float16 array's statistics in its own order, and the estimators' bins depend on
that rounding. ``np.std`` of float16 samples adds them with numpy's pairwise summation over the
whole array in float32 (blocks of up to 128 elements summed in 8 lanes, halves split at a
multiple of 8), rounds the sum to float16, divides by the count in float64 and rounds again;
then the same for the squared deviations, each deviation and square rounded to float16.
``np.mean`` of float16 accumulates in float32, pairwise within each 8192-element buffer and one
buffer after another. Here the O(n) part - every block's 8 lanes - runs on the device by the
framework's own operations (float32 arithmetic is IEEE in all of them); the block sums (one per
64 to 128 samples) come back and numpy combines them in numpy's order, so every rounding is
numpy's. bfloat16 (ml_dtypes) sums one element after another, rounded to bfloat16 at each step:
a sequential chain this does not reproduce."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

# numpy's pairwise summation: blocks of at most this many elements are summed in 8 lanes.
_BLOCK = 128
# numpy's buffer (np.getbufsize()): a float16 mean in float32 adds this many at a time.
_BUFFER = 8192


@lru_cache(maxsize=4)
def _tree(n: int):
    """numpy's pairwise summation tree of ``n`` (>= 8) elements: per level the nodes' sizes and
    which are blocks (leaves), the blocks' positions among all blocks (by offset) per level,
    and every block's offset and size, ascending."""
    levels, blocks = [], []
    off = np.zeros(1, np.int64)
    size = np.array([n], np.int64)
    while off.size:
        leaf = size <= _BLOCK
        levels.append(leaf)
        o, s = off[~leaf], size[~leaf]
        half = s // 2
        half -= half % 8
        blocks.append((off[leaf], size[leaf]))
        off = np.stack([o, o + half], 1).ravel()
        size = np.stack([half, s - half], 1).ravel()
    offsets = np.concatenate([b[0] for b in blocks])
    sizes = np.concatenate([b[1] for b in blocks])
    order = np.argsort(offsets, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    per_level, k = [], 0
    for leaf in levels:
        c = int(leaf.sum())
        per_level.append(rank[k:k + c])
        k += c
    return levels, per_level, offsets[order], sizes[order]


def _perfect(n: int):
    """``(depth, block)`` when numpy's tree of ``n`` (>= 8) elements is perfect - every split
    an exact half, down to ``2**depth`` blocks of ``block`` elements (a multiple of 8) - else
    None. Powers of two from 8 on are, and so is every full buffer."""
    depth = 0
    while n > _BLOCK:
        if n % 16:
            return None
        n //= 2
        depth += 1
    return (depth, n) if n % 8 == 0 else None


def _combine(levels, per_level, block_sums: np.ndarray) -> np.float32:
    """The tree's sum from its blocks' sums, in numpy's order (float32)."""
    below = None
    for leaf, ranks in zip(reversed(levels), reversed(per_level)):
        v = np.empty(leaf.size, np.float32)
        v[leaf] = block_sums[ranks]
        if below is not None:
            v[~leaf] = below[0::2] + below[1::2]
        below = v
    return below[0]


class Sums:
    """numpy's float16 ``std`` and ``doane``'s standardised third moment of the samples ``x``
    (the framework's float16 array, flat), or of those of its values within ``[lo, hi]``."""

    def __init__(self, x, kind: str, kept=None):
        self._ops = _Ops(kind)
        x32 = self._ops.widen(x)
        if kept is not None:
            lo, hi = kept
            x32 = x32[(x32 >= lo) & (x32 <= hi)]
        self._x = x32
        self.size = self._ops.size(x32)

    @staticmethod
    def _lanes_total(lanes):
        """numpy's join of each block's 8 lanes (``lanes``: blocks x 8)."""
        lane = [lanes[:, j] for j in range(8)]
        return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5])
                                                             + (lane[6] + lane[7]))

    def _block_sums(self, x32, n: int, offsets, sizes) -> np.ndarray:
        """Each block's 8-lane sum, numpy's, for blocks of at least 8 of the first ``n``
        elements of ``x32`` (starting at multiples of 8), with the last block's tail (its
        elements beyond a multiple of 8) added one at a time. The blocks' rows are gathered on
        the device, the k-th row of every block at once."""
        ops = self._ops
        rows = x32[: n - n % 8].reshape(-1, 8)
        starts = ops.index(offsets // 8, x32)
        counts = ops.index(sizes // 8, x32)
        last_row = rows.shape[0] - 1
        lanes = rows[starts]
        for k in range(1, int(sizes.max()) // 8):
            step = rows[ops.minimum(starts + k, last_row)]
            lanes = ops.where((counts > k)[:, None], lanes + step, lanes)
        sums = ops.host(self._lanes_total(lanes)).astype(np.float32)
        tail = int(sizes[-1]) % 8
        if tail:
            last = sums[-1]
            for v in ops.host(x32[n - tail: n]).astype(np.float32):
                last = np.float32(last + v)
            sums[-1] = last
        return sums

    def _perfect_sums(self, x32, trees: int, depth: int, block: int):
        """The sums of ``trees`` consecutive perfect trees of ``2**depth`` blocks of ``block``
        elements each (a multiple of 8) at the start of ``x32``, on the device: every block's
        lanes by reshaping, then adjacent pairs joined ``depth`` times."""
        rows = x32[: trees * (block << depth)].reshape(trees << depth, block // 8, 8)
        lanes = rows[:, 0]
        for k in range(1, block // 8):
            lanes = lanes + rows[:, k]
        v = self._lanes_total(lanes).reshape(trees, 1 << depth)
        for _ in range(depth):
            v = v[:, 0::2] + v[:, 1::2]
        return v[:, 0]

    def _pairwise(self, x32, n: int) -> np.float32:
        """numpy's pairwise float32 sum of the first ``n`` elements of ``x32``."""
        if n < 8:
            total = np.float32(0)
            for v in self._ops.host(x32[:n]).astype(np.float32):
                total = np.float32(total + v)
            return total
        perfect = _perfect(n)
        if perfect is not None:
            return self._ops.host(self._perfect_sums(x32, 1, *perfect)).astype(np.float32)[0]
        levels, per_level, offsets, sizes = _tree(n)
        return _combine(levels, per_level, self._block_sums(x32, n, offsets, sizes))

    def _buffered(self, x32) -> np.float32:
        """numpy's float32 sum of float16 samples (``np.mean``'s): pairwise within each buffer,
        the buffers' sums added in turn from 0."""
        n = self.size
        full = n // _BUFFER
        parts = []
        if full:
            sums = self._perfect_sums(x32, full, *_perfect(_BUFFER))
            parts.append(self._ops.host(sums).astype(np.float32))
        rest = n - full * _BUFFER
        if rest:
            parts.append(np.array([self._pairwise(x32[full * _BUFFER:], rest)], np.float32))
        sums = np.concatenate([np.zeros(1, np.float32)] + parts)
        return np.cumsum(sums, dtype=np.float32)[-1]

    def _mean16(self, x32) -> np.float16:
        return np.float16(np.float64(self._buffered(x32)) / np.intp(self.size))

    def _sum16(self, x32) -> np.float16:
        """numpy's float16 sum: the pairwise float32 sum added to 0, rounded to float16."""
        return np.float16(np.float32(0) + self._pairwise(x32, self.size))

    def std(self) -> np.float16:
        """``np.std`` of the samples, as numpy computes it for float16."""
        n = np.intp(self.size)
        mean = np.float16(np.float64(self._sum16(self._x)) / n)
        dev = self._ops.half(self._x - float(mean))
        var = np.float16(np.float64(self._sum16(self._ops.half(dev * dev))) / n)
        return np.float16(np.sqrt(var))

    def standardized_cube_mean(self, sigma) -> np.float16:
        """numpy's ``z = x - mean(x); z /= sigma; z **= 3; mean(z)`` in float16 (the cube of a
        float16 is exact in float32 as two products, then rounded: numpy's ``powf``)."""
        z = self._ops.half(self._x - float(self._mean16(self._x)))
        z = self._ops.half(z / float(np.float32(sigma)))
        z = self._ops.half(z * z * z)
        return self._mean16(z)


class _Ops:
    """The array operations the sums need, in the samples' framework."""

    def __init__(self, kind: str):
        self.kind = kind

    def widen(self, x):
        x = x.reshape(-1)
        return x.float() if self.kind == "torch" else x.astype("float32")

    def half(self, y):
        """float32 values rounded to float16 (to nearest, ties to even), back as float32."""
        if self.kind == "torch":
            return y.half().float()
        return y.astype("float16").astype("float32")

    def size(self, y) -> int:
        return int(y.numel()) if self.kind == "torch" else int(y.size)

    def index(self, host: np.ndarray, like):
        if self.kind == "torch":
            import torch

            return torch.as_tensor(host, device=like.device)
        if self.kind == "cupy":
            import cupy

            return cupy.asarray(host)
        import jax.numpy as jnp

        return jnp.asarray(host)

    def minimum(self, a, b):
        if self.kind == "torch":
            return a.clamp(max=b)
        if self.kind == "cupy":
            import cupy

            return cupy.minimum(a, b)
        import jax.numpy as jnp

        return jnp.minimum(a, b)

    def where(self, c, a, b):
        if self.kind == "torch":
            import torch

            return torch.where(c, a, b)
        if self.kind == "cupy":
            import cupy

            return cupy.where(c, a, b)
        import jax.numpy as jnp

        return jnp.where(c, a, b)

    def host(self, y) -> np.ndarray:
        if self.kind == "torch":
            return y.cpu().numpy()
        if self.kind == "cupy":
            return y.get()
        return np.asarray(y)

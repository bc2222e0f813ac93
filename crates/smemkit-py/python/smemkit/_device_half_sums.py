"""numpy's float16 sums, reproduced on the device, for the `scott` and `doane` estimators.

numpy rounds a float16 array's statistics in its own order, and the estimators' bins depend on
that rounding. ``np.std`` of float16 samples adds them with numpy's pairwise summation over the
whole array in float32 (blocks of up to 128 elements summed in 8 lanes, halves split at a
multiple of 8), rounds the sum to float16, divides by the count in float64 and rounds again;
then the same for the squared deviations, each deviation and square rounded to float16.
``np.mean`` of float16 accumulates in float32, pairwise within each 8192-element buffer and one
buffer after another. Here all of it runs on the device by the framework's own operations
(float32 arithmetic is IEEE in all of them), in numpy's order, so every rounding is numpy's:
the blocks' lanes and numpy's tree over them, level by level, nodes of one size at a time; only
the sums themselves come back. bfloat16 (ml_dtypes) sums one element after another, rounded to
bfloat16 at each step: a sequential chain this does not reproduce."""

from __future__ import annotations

import numpy as np

# numpy's pairwise summation: blocks of at most this many elements are summed in 8 lanes.
_BLOCK = 128
# numpy's buffer (np.getbufsize()): a float16 mean in float32 adds this many at a time.
_BUFFER = 8192
# Blocks gathered at once (their copy: at most 64 MiB of float32).
_GATHER_BLOCKS = 1 << 17


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
        a = [lanes[:, j] for j in range(8)]
        return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))

    def _block_sum(self, rows, x32, offsets, count: int, size: int):
        """numpy's sums of the ``count`` blocks of ``size`` (8 to 128) elements of ``x32`` at
        ``offsets`` (on the device, multiples of 8): 8 lanes down the block's rows, joined in
        numpy's order, then the elements beyond its last whole row one at a time. The blocks'
        rows come by one gather of whole blocks from a view of every run of that many rows
        (torch, CuPy; JAX, which has no strided views, gathers a row at a time)."""
        ops = self._ops
        first = offsets // 8
        depth = size // 8
        windows = ops.windows(rows, depth)
        if windows is None:
            lanes = rows[first]
            for k in range(1, depth):
                lanes = lanes + rows[first + k]
            total = self._lanes_total(lanes)
        else:
            parts = []
            for lo in range(0, count, _GATHER_BLOCKS):
                block = windows[first[lo:lo + _GATHER_BLOCKS]]
                lanes = block[:, 0]
                for k in range(1, depth):
                    lanes = lanes + block[:, k]
                parts.append(self._lanes_total(lanes))
            total = ops.cat(parts)
        for t in range(size - size % 8, size):
            total = total + x32[offsets + t]
        return total

    def _tree_sum(self, x32, n: int):
        """numpy's pairwise sum of the first ``n`` (>= 8) elements of ``x32``, for any ``n``.
        numpy's tree splits a node at a multiple of 8 near its half, so the nodes of one level
        take few sizes, and nodes of one size have the same subtree: each level is kept as
        groups of equal size (their offsets on the device), split top-down and summed
        bottom-up, a group at a time - a few dozen device operations for any ``n``."""
        ops = self._ops
        rows = x32[: n - n % 8].reshape(-1, 8)
        level = [(n, ops.index(np.zeros(1, np.int64), x32), 1)]  # (size, offsets, count)
        levels = []
        while level:
            children = {}  # size -> [offsets, count]
            links = []  # per group: None (a block), or where its halves' sums will be
            for size, offsets, count in level:
                if size <= _BLOCK:
                    links.append(None)
                    continue
                half = size // 2
                half -= half % 8
                link = []
                for part, at in ((half, offsets), (size - half, offsets + half)):
                    entry = children.setdefault(part, [[], 0])
                    link.append((part, entry[1]))
                    entry[0].append(at)
                    entry[1] += count
                links.append(link)
            levels.append((level, links))
            level = [(part, ops.cat(offs), count) for part, (offs, count) in children.items()]
        below = {}
        for level, links in reversed(levels):
            sums = {}
            for (size, offsets, count), link in zip(level, links):
                if link is None:
                    sums[size] = self._block_sum(rows, x32, offsets, count, size)
                else:
                    (left, i), (right, j) = link
                    sums[size] = below[left][i:i + count] + below[right][j:j + count]
            below = sums
        return below[n]

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
        sums = (self._perfect_sums(x32, 1, *perfect) if perfect is not None
                else self._tree_sum(x32, n))
        return self._ops.host(sums).astype(np.float32).reshape(-1)[0]

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

    def windows(self, rows, depth: int):
        """Every run of ``depth`` consecutive rows of ``rows`` (n x 8, C order) as a view
        (runs x depth x 8), or None where the framework has no strided views (JAX)."""
        runs = rows.shape[0] - depth + 1
        if self.kind == "torch":
            return rows.as_strided((runs, depth, 8), (8, 8, 1))
        if self.kind == "cupy":
            import cupy

            step = rows.strides[0]
            return cupy.lib.stride_tricks.as_strided(rows, (runs, depth, 8),
                                                     (step, step, rows.strides[1]))
        return None

    def cat(self, arrays):
        if len(arrays) == 1:
            return arrays[0]
        if self.kind == "torch":
            import torch

            return torch.cat(arrays)
        if self.kind == "cupy":
            import cupy

            return cupy.concatenate(arrays)
        import jax.numpy as jnp

        return jnp.concatenate(arrays)

    def host(self, y) -> np.ndarray:
        if self.kind == "torch":
            return y.cpu().numpy()
        if self.kind == "cupy":
            return y.get()
        return np.asarray(y)

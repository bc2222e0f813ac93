"""Integer and bool weights of torch and CuPy arrays on a CUDA device, summed by the kernels as
exact 64-bit integers (int64 and uint64 read in place, narrower types widened to int64 on the
device, never to float64): results of the weights' dtype, on the input's device, equal to numpy's
on the host copy, including int64 weights near ±2**62 whose sums float64 cannot hold (compared
with numpy's explicit-edges path, which sums in int64; its uniform path rounds there), under every
strategy that takes weights. Skipped without a GPU or the framework."""

import numpy as np
import pytest

import smemkit

try:
    import torch
except ImportError:
    torch = None
try:
    import cupy
except ImportError:
    cupy = None


def _cuda():
    if torch is not None:
        return torch.cuda.is_available()
    if cupy is not None:
        try:
            return cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:
            return False
    return False


needs_torch = pytest.mark.skipif(torch is None or not _cuda(), reason="needs torch and a CUDA GPU")
needs_cupy = pytest.mark.skipif(cupy is None or not _cuda(), reason="needs CuPy and a CUDA GPU")

# Narrow and 64-bit types both frameworks have (torch's uint16/32/64 lack some kernels).
TORCH_TYPES = (np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_)
CUPY_TYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
              np.bool_)


def to_torch(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def host(t):
    return t.cpu().numpy() if torch is not None and isinstance(t, torch.Tensor) else t.get()


def big_weights(rng, n):
    small = rng.integers(-(2**20), 2**20, n)
    return (small + np.where(rng.random(n) < 0.5, 2**62, -(2**62))).astype(np.int64)


def weights_of(rng, wtype, n):
    if wtype is np.bool_:
        return rng.random(n) < 0.3
    info = np.iinfo(wtype)
    # Magnitudes that keep numpy's uniform path (float64 block sums cast to the type) a wrapped
    # sum: int32 and uint16 block sums within int32.
    hi = min(info.max, 2**15 - 1)
    return rng.integers(max(info.min, -hi), hi, n, endpoint=True).astype(wtype)


def check(put, rng, wtype, kind):
    x = rng.standard_normal(1 << 20).astype(np.float32)
    w = weights_of(rng, wtype, x.size)
    edges = np.array([-3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 4.0])
    for bins, rng_ in ((1000, (-4, 4)), (100_000, (-4, 4)), (edges, None)):
        if wtype is np.bool_ and rng_ is None:
            with pytest.raises(TypeError):
                smemkit.histogram(put(x), bins, weights=put(w))
            continue
        h, _ = smemkit.histogram(put(x), bins, range=rng_, weights=put(w))
        want, _ = np.histogram(x, bins, range=rng_, weights=w)
        assert isinstance(h, kind)
        got = host(h)
        assert got.dtype == want.dtype == np.dtype(wtype), (got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want)


@needs_torch
@pytest.mark.parametrize("wtype", TORCH_TYPES)
def test_torch_integer_weights_are_numpys(rng, wtype):
    check(to_torch, rng, wtype, torch.Tensor)


@needs_cupy
@pytest.mark.parametrize("wtype", CUPY_TYPES)
def test_cupy_integer_weights_are_numpys(rng, wtype):
    check(cupy.asarray, rng, wtype, cupy.ndarray)


def exact_sums(put, rng, strategy):
    x = rng.random(1 << 21).astype(np.float32)
    w = big_weights(rng, x.size)
    for nbins in (64, 20_000, 300_000):
        edges = np.linspace(0.0, 1.0, nbins + 1)
        want, _ = np.histogram(x, edges, weights=w)  # int64 cumulative sums: exact, wrapping
        for bins, rng_ in ((edges, None), (nbins, (0.0, 1.0))):
            try:
                h, _ = smemkit.histogram(put(x), bins, range=rng_, weights=put(w),
                                         strategy=strategy)
            except ValueError as e:  # a forced strategy that does not fit these bins
                assert strategy is not None, e
                continue
            got = host(h)
            assert got.dtype == np.int64
            if rng_ is not None:
                # numpy's uniform bins of float32 samples over a Python range equal these edges
                # except where a sample lies on an edge: compare with numpy's own bin edges.
                want_u, _ = np.histogram(x, np.histogram_bin_edges(x, nbins, rng_), weights=w)
                np.testing.assert_array_equal(got, want_u)
            else:
                np.testing.assert_array_equal(got, want)


@needs_torch
@pytest.mark.parametrize("strategy", [None, "shared", "cluster", "global"])
def test_torch_int64_weights_near_2_62_are_exact(rng, strategy):
    exact_sums(to_torch, rng, strategy)


@needs_cupy
@pytest.mark.parametrize("strategy", [None, "shared", "cluster", "global"])
def test_cupy_int64_weights_near_2_62_are_exact(rng, strategy):
    exact_sums(cupy.asarray, rng, strategy)


@needs_torch
def test_torch_int64_weights_on_a_side_stream(rng):
    x = rng.integers(0, 5000, 1 << 20).astype(np.int32)
    w = big_weights(rng, x.size)
    small = rng.integers(-1000, 1000, x.size)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        tx, tw = to_torch(x), to_torch(w)
        h, _ = smemkit.histogram(tx, [0, 10, 100, 4999], weights=tw)
        # numpy's bincount sums integer weights as float64 (exact here).
        c = smemkit.bincount(tx, weights=to_torch(small))
    s.synchronize()
    np.testing.assert_array_equal(h.cpu().numpy(), np.histogram(x, [0, 10, 100, 4999], weights=w)[0])
    assert c.dtype == torch.float64
    np.testing.assert_array_equal(c.cpu().numpy(), np.bincount(x, weights=small))

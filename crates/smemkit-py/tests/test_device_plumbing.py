"""The Python side of the GPU path, run without a GPU: a stand-in "cupy" whose arrays are numpy
arrays in host memory, and a stand-in for the native device call that counts that memory with the
CPU engine. What this checks is the plumbing (which array is read where, numpy's dtypes, edges,
density, layouts, bincount's lengths, errors, results of the input's kind), not the CUDA engine,
which test_gpu_arrays.py checks on a GPU against numpy."""

import ctypes
import sys
import types

import numpy as np
import pytest

import smemkit
from smemkit import _device, _native


class FakeDevice:
    def __init__(self, id):
        self.id = id


class FakeData:
    def __init__(self, ptr):
        self.ptr = ptr


class FakeArray(np.ndarray):
    """A "device" array: numpy memory with cupy's attributes."""

    @property
    def data(self):
        return FakeData(self.__array_interface__["data"][0])

    @property
    def device(self):
        return FakeDevice(0)

    def get(self):
        return np.asarray(self).copy()


FakeArray.__module__ = "cupy"


class _Ctx:
    def __init__(self, *a, **k):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _fake_cupy():
    m = types.ModuleType("cupy")
    m.ndarray = FakeArray
    m.empty = lambda n, dtype: np.full(n, 0x5A5A, dtype).view(FakeArray)  # garbage, as empty is
    m.asarray = lambda a: np.array(a).view(FakeArray)
    m.ascontiguousarray = lambda a: dev(np.ascontiguousarray(a))
    m.isnan = np.isnan
    m.where = lambda c, a, b: np.where(c, a, b).view(FakeArray)
    m.concatenate = lambda arrays: np.concatenate(arrays).view(FakeArray)
    m.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(
        as_strided=lambda a, shape, strides: np.lib.stride_tricks.as_strided(
            a, shape, strides).view(FakeArray)))
    cuda = types.SimpleNamespace()
    cuda.Device = _Ctx
    cuda.ExternalStream = _Ctx
    cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=0, is_capturing=lambda: False)
    cuda.Event = lambda: types.SimpleNamespace(record=lambda: None, query=lambda: True)
    cuda.runtime = types.SimpleNamespace(getDevice=lambda: 0)
    m.cuda = cuda
    return m


def _read(ptr, n, dtype):
    dtype = np.dtype(dtype)
    if n == 0:
        return np.zeros(0, dtype)
    buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(buf, dtype).copy()


calls = []


def _fake_device_histogram(device, stream, samples, out, bins, run):
    input, n, dtype, weights, weights_dtype = samples
    nbins, range, edges, integer_bins, extremes = bins
    out_of_range, strategy, deterministic = run
    calls.append(dict(n=n, dtype=dtype, nbins=nbins, range=range, integer=integer_bins,
                      edges=None if edges is None else edges.size, policy=out_of_range,
                      extremes=extremes))
    x = _read(input, n, dtype)
    w = None if weights == 0 else _read(weights, n, weights_dtype)
    if w is not None and w.dtype.kind in "iu":
        # The kernels' int64 weights: exact sums modulo 2**64 (numpy's int64 add.at wraps too).
        assert weights_dtype == "int64", weights_dtype
        return _fake_int_sums(x, w, out, nbins, range, edges, integer_bins, out_of_range)
    if integer_bins:
        counts = smemkit.bincount(x, w, minlength=nbins, out_of_range=out_of_range)
        lo_t, hi_t, nan_t = int((x < 0).sum()), int((x >= nbins).sum()), 0
        k = nbins
    else:
        bins = edges if edges is not None else nbins
        if extremes:
            # Uniform bins over two values of the samples' type: numpy's, as over such a range.
            range = tuple(x.dtype.type(v) for v in extremes)
        counts, e = smemkit.histogram(x, bins, range=range, weights=w, out_of_range="ignore")
        lo, hi = e[0], e[-1]
        lo_t, hi_t, nan_t = int((x < lo).sum()), int((x > hi).sum()), int(np.isnan(x).sum()) if x.dtype.kind == "f" else 0
        k = counts.size
    words = np.empty(k + 3, np.uint64)
    words[:k] = np.asarray(counts, np.float64 if w is not None else np.int64).view(np.uint64)
    words[k:] = (lo_t, hi_t, nan_t)
    ctypes.memmove(out, words.ctypes.data, words.nbytes)


def _fake_int_sums(x, w, out, nbins, range, edges, integer_bins, out_of_range):
    if integer_bins:
        k = nbins
        slots = x.astype(np.int64)
        lo_t, hi_t, nan_t = int((slots < 0).sum()), int((slots >= k).sum()), 0
    else:
        e = np.asarray(edges, np.float64) if edges is not None else np.linspace(*range, nbins + 1)
        k = e.size - 1
        xf = x.astype(np.float64)
        slots = np.searchsorted(e, xf, side="right") - 1
        slots[xf == e[-1]] = k - 1
        lo_t, hi_t = int((xf < e[0]).sum()), int((xf > e[-1]).sum())
        nan_t = int(np.isnan(xf).sum())
        slots[np.isnan(xf)] = -(2**40)
    if out_of_range == "clamp":
        keep = slots > -(2**40)
        slots = np.clip(slots, 0, k - 1)
    else:
        keep = (slots >= 0) & (slots < k)
    sums = np.zeros(k, np.int64)
    np.add.at(sums, slots[keep], w[keep])
    words = np.empty(k + 3, np.uint64)
    words[:k] = sums.view(np.uint64)
    words[k:] = (lo_t, hi_t, nan_t)
    ctypes.memmove(out, words.ctypes.data, words.nbytes)


def _no_fast_call(*args):
    raise RuntimeError("no native fast path over stand-in host arrays")


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(_native, "device_histogram", _fake_device_histogram)
    # The stand-in arrays live in host memory: the native fast path (real device memsets and
    # launches, where a GPU is present) must not learn them; tests that want it patch it in.
    monkeypatch.setattr(_native, "fast_call", _no_fast_call)
    _device._EDGES.clear()
    calls.clear()
    return sys.modules["cupy"]


def dev(a):
    # 64-byte aligned copies, as device allocations are.
    a = np.asarray(a)
    raw = np.empty(a.nbytes + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    out = raw[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out.view(FakeArray)


def test_histogram_over_a_range(fake, rng):
    x = rng.standard_normal(10_000).astype(np.float32)
    h, e = smemkit.histogram(dev(x), 100, range=(-4, 4))
    assert isinstance(h, FakeArray) and isinstance(e, FakeArray)
    H, E = np.histogram(x, 100, range=(-4, 4))
    assert h.dtype == np.int64 and e.dtype == np.float32
    np.testing.assert_array_equal(h, H)
    np.testing.assert_array_equal(e, E)
    assert calls[-1]["range"] == (-4.0, 4.0) and calls[-1]["edges"] is None
    # the edges come from the cache the second time, as a fresh copy
    e2 = smemkit.histogram(dev(x), 100, range=(-4, 4))[1]
    assert e2 is not e and np.array_equal(e2, E)
    d, _ = smemkit.histogram(dev(x), 100, range=(-4, 4), density=True)
    np.testing.assert_array_equal(d, np.histogram(x, 100, range=(-4, 4), density=True)[0])


def test_range_from_the_data_goes_through_the_extremes(fake, rng):
    # Float samples: uniform bins over the data's extremes (the kernels count uniform bins);
    # integer samples: numpy's edges over them.
    x = rng.standard_normal(10_000).astype(np.float32)
    h, e = smemkit.histogram(dev(x), 37)
    H, E = np.histogram(x, 37)
    np.testing.assert_array_equal(h, H)
    np.testing.assert_array_equal(e, E)
    assert e.dtype == np.float32 and calls[-1]["edges"] is None
    assert calls[-1]["extremes"] == [float(x.min()), float(x.max())]
    xi = rng.integers(-50, 50, 1000).astype(np.int32)
    h, e = smemkit.histogram(dev(xi), 7)
    np.testing.assert_array_equal(h, np.histogram(xi, 7)[0])
    assert calls[-1]["edges"] == 8
    np.testing.assert_array_equal(smemkit.histogram_bin_edges(dev(x), 37), E)
    with pytest.raises(ValueError, match="not finite"):
        smemkit.histogram(dev(np.array([1.0, np.nan])), 3)
    h, e = smemkit.histogram(dev(np.zeros(0, np.int32)), 4)
    np.testing.assert_array_equal(e, np.histogram(np.zeros(0, np.int32), 4)[1])


def test_explicit_edges_weights_and_dtypes(fake, rng):
    x = rng.integers(-20, 120, 5000).astype(np.int16)
    edges = np.array([0, 10, 50, 100])
    h, e = smemkit.histogram(dev(x), edges)
    np.testing.assert_array_equal(h, np.histogram(x, edges)[0])
    assert e.dtype == edges.dtype and np.array_equal(e, edges)
    w = rng.random(5000).astype(np.float32)
    h, _ = smemkit.histogram(dev(x), 10, range=(0, 100), weights=dev(w))
    H = np.histogram(x, 10, range=(0, 100), weights=w)[0]
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, H, rtol=1e-6)
    with pytest.raises(TypeError, match="weights are not"):
        smemkit.histogram(dev(x), 10, range=(0, 100), weights=w)
    # Integer weights keep their type, as numpy's (test_gpu_estimators.py covers more types).
    wi = (w * 100).astype(np.int32)
    h, _ = smemkit.histogram(dev(x), 10, range=(0, 100), weights=dev(wi))
    assert h.dtype == np.int32
    np.testing.assert_array_equal(h, np.histogram(x, 10, range=(0, 100), weights=wi)[0])
    # Complex weights: the real and the imaginary sums, as numpy's.
    wc = (w + 1j * w[::-1]).astype(np.complex64)
    for density in (False, True):
        h, _ = smemkit.histogram(dev(x), 10, range=(0, 100), weights=dev(wc), density=density)
        H, _ = np.histogram(x, 10, range=(0, 100), weights=wc, density=density)
        assert h.dtype == H.dtype
        np.testing.assert_allclose(h, H, rtol=1e-5)
    with pytest.raises(ValueError, match="same shape"):
        smemkit.histogram(dev(x), 10, range=(0, 100), weights=dev(w[:10]))
    h, e = smemkit.histogram(dev(x.astype(np.float16)), 10, range=(0, 100))
    H, E = np.histogram(x.astype(np.float16), 10, range=(0, 100))
    np.testing.assert_array_equal(h, H)
    assert e.dtype == E.dtype == np.float16
    np.testing.assert_array_equal(e, E)
    with pytest.raises(NotImplementedError, match="Python floats"):
        smemkit.histogram(dev(x.astype(np.float32)), 10, range=(np.float64(0), np.float64(1)))
    with pytest.warns(RuntimeWarning, match="bool"):
        h, _ = smemkit.histogram(dev(x > 50), 2, range=(0, 1))
    np.testing.assert_array_equal(h, np.histogram((x > 50).astype(np.uint8), 2, range=(0, 1))[0])


def test_layouts(fake, rng):
    x = rng.standard_normal((40, 30))
    d = dev(x)
    h, _ = smemkit.histogram(d.T, 10, range=(-4, 4))  # Fortran order: one block, read as it lies
    np.testing.assert_array_equal(h, np.histogram(x, 10, range=(-4, 4))[0])
    with pytest.raises(ValueError, match=r"strided view of GPU memory.*ascontiguousarray"):
        smemkit.histogram(d[:, ::2], 10, range=(-4, 4))
    with pytest.raises(ValueError, match="16-byte aligned"):
        smemkit.histogram(d.reshape(-1)[1:], 10, range=(-4, 4))


def test_bincount(fake, rng):
    x = rng.integers(0, 300, 5000).astype(np.int32)
    c = smemkit.bincount(dev(x))
    assert isinstance(c, FakeArray) and c.dtype == np.int64
    np.testing.assert_array_equal(c, np.bincount(x))
    assert calls[-1]["integer"] and calls[-1]["nbins"] == 300
    np.testing.assert_array_equal(smemkit.bincount(dev(x), minlength=500), np.bincount(x, minlength=500))
    c = smemkit.bincount(dev(x), minlength=100, out_of_range="ignore")
    np.testing.assert_array_equal(c, np.bincount(x[x < 100], minlength=100))
    assert calls[-1]["policy"] == "ignore" and calls[-1]["nbins"] == 100
    with pytest.raises(ValueError, match="out-of-range policy `error`: 0 samples below the range, "):
        smemkit.bincount(dev(x), minlength=100, out_of_range="error")
    w = rng.random(5000)
    np.testing.assert_allclose(smemkit.bincount(dev(x), dev(w)), np.bincount(x, w), rtol=1e-12)
    with pytest.raises(ValueError, match="negative"):
        smemkit.bincount(dev(np.array([3, -1], np.int64)))
    with pytest.raises(TypeError, match="safe"):
        smemkit.bincount(dev(np.ones(3)))
    with pytest.raises(ValueError, match="too deep"):
        smemkit.bincount(dev(np.ones((2, 2), np.int32)))
    z = smemkit.bincount(dev(np.zeros(0, np.int32)), minlength=3)
    np.testing.assert_array_equal(z, np.zeros(3, np.int64))
    np.testing.assert_array_equal(smemkit.bincount(dev(np.array([True, False, True]))), [1, 2])


def test_out_of_range_error_reads_the_tallies(fake, rng):
    x = np.array([0.5, 2.0, np.nan, -1.0], np.float64)
    with pytest.raises(ValueError, match="1 samples below the range, 1 above it and 1 NaN"):
        smemkit.histogram(dev(x), 4, range=(0, 1), out_of_range="error")
    h, _ = smemkit.histogram(dev(x[:1]), 4, range=(0, 1), out_of_range="error")
    np.testing.assert_array_equal(h, [0, 0, 1, 0])

"""The torch side of the fast path, run without a GPU or torch: a stand-in "torch" whose CUDA
tensors are numpy arrays in host memory (torch's attribute names, torch dtypes), the general
path's native call counting that memory on the CPU (test_device_plumbing), and a stand-in
FastCall (test_fast_path). Checks that repeated torch calls take the fast path with torch's
outputs (int64 counts, edges of numpy's dtype as torch dtypes) and give numpy's results, and which
calls keep the general path. test_gpu_fast.py checks the real thing on a GPU."""

import sys
import types

import numpy as np
import pytest

import smemkit
from smemkit import _device, _fast, _native
from test_device_plumbing import _fake_device_histogram, calls
from test_fast_path import FakeFastCall, fast_runs


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"

    __str__ = __repr__


_DTYPES = {n: FakeDtype(n) for n in ("int8", "int16", "int32", "int64", "uint8", "float16",
                                     "float32", "float64", "bool")}


class FakeTensor(np.ndarray):
    """A "CUDA tensor": numpy memory with torch's attributes."""

    @property
    def dtype(self):
        return _DTYPES[np.asarray(self).dtype.name]

    is_cuda = True

    @property
    def device(self):
        return types.SimpleNamespace(index=0)

    def get_device(self):
        return 0

    def is_contiguous(self):
        return bool(np.asarray(self).flags.c_contiguous)

    def data_ptr(self):
        return np.asarray(self).__array_interface__["data"][0]

    def numel(self):
        return int(np.asarray(self).size)

    def dim(self):
        return np.asarray(self).ndim

    def stride(self):
        a = np.asarray(self)
        return tuple(s // a.itemsize for s in a.strides)

    def cpu(self):
        return self

    def numpy(self):
        return np.asarray(self).copy()

    def clone(self):
        return np.asarray(self).copy().view(FakeTensor)

    def to(self, dtype):
        return np.asarray(self).astype(dtype.name).view(FakeTensor)


FakeTensor.__module__ = "torch"


def _fake_torch():
    m = types.ModuleType("torch")
    m.Tensor = FakeTensor
    for name, dt in _DTYPES.items():
        setattr(m, name, dt)

    def empty(n, dtype, device):
        assert str(device).startswith("cuda")
        return np.full(n, 0x5A, np.dtype(dtype.name)).view(FakeTensor)

    m.empty = empty
    m.from_numpy = lambda a: np.asarray(a).copy().view(FakeTensor)
    FakeTensor.to = lambda self, what: (self if isinstance(what, str)
                                        else np.asarray(self).astype(what.name).view(FakeTensor))
    m.device = lambda kind, index: f"{kind}:{index}"
    m._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0)
    m.cuda = types.SimpleNamespace(is_current_stream_capturing=lambda: False)
    return m


@pytest.fixture
def torch(monkeypatch):
    t = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", t)
    monkeypatch.setattr(_native, "device_histogram", _fake_device_histogram)
    monkeypatch.setattr(_native, "fast_call", FakeFastCall)
    monkeypatch.setattr(_fast, "_PLANS", {})
    monkeypatch.setattr(_fast, "_T", None)
    monkeypatch.setattr(_fast, "HIST", {})
    monkeypatch.setattr(_fast, "BINCOUNT", {})
    monkeypatch.setattr(smemkit, "_FAST_HIST", _fast.HIST)
    monkeypatch.setattr(smemkit, "_FAST_BINCOUNT", _fast.BINCOUNT)
    _device._EDGES.clear()
    calls.clear()
    fast_runs.clear()
    return t


def dev(a):
    a = np.asarray(a)
    raw = np.empty(a.nbytes + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    out = raw[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out.view(FakeTensor)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_torch_repeated_histogram_takes_the_fast_path(torch, rng, dtype):
    x = (rng.standard_normal(10_000) * 3).astype(dtype)
    H, E = np.histogram(x, 100, range=(-4, 4))
    for i in range(4):
        h, e = smemkit.histogram(dev(x), 100, range=(-4, 4))
        assert isinstance(h, FakeTensor) and isinstance(e, FakeTensor)
        assert str(h.dtype) == "torch.int64" and np.asarray(e).dtype == E.dtype
        np.testing.assert_array_equal(np.asarray(h), H)
        np.testing.assert_array_equal(np.asarray(e), E)
    assert len(calls) == 1 and len(fast_runs) == 3
    assert fast_runs[-1]["dtype"] == np.dtype(dtype).name and fast_runs[-1]["rng"] == (-4.0, 4.0)


def test_torch_calls_the_fast_path_leaves_to_the_general_path(torch, rng):
    x = rng.standard_normal((40, 30)).astype(np.float32)
    d = dev(x)
    for _ in range(2):
        smemkit.histogram(d, 10, range=(-4, 4))
    assert len(fast_runs) == 1
    with pytest.raises(ValueError, match="16-byte aligned"):
        smemkit.histogram(d.reshape(-1)[1:], 10, range=(-4, 4))
    with pytest.raises(ValueError, match="strided view.*contiguous"):
        smemkit.histogram(d[:, ::2], 10, range=(-4, 4))
    w = dev(rng.random((40, 30)).astype(np.float32))
    for _ in range(2):
        h, _ = smemkit.histogram(d, 10, range=(-4, 4), weights=w)
        assert np.asarray(h).dtype == np.float32
    with pytest.warns(RuntimeWarning, match="bool"):
        for _ in range(2):
            smemkit.histogram(dev(x > 0), 2, range=(0, 1))
    assert len(fast_runs) == 1


def test_torch_repeated_bincount_takes_the_fast_path(torch, rng):
    x = rng.integers(0, 300, 5000).astype(np.int32)
    want = np.bincount(x[x < 200], minlength=200)
    for _ in range(3):
        c = smemkit.bincount(dev(x), minlength=200, out_of_range="ignore")
        assert str(c.dtype) == "torch.int64"
        np.testing.assert_array_equal(np.asarray(c), want)
    assert len(fast_runs) == 2 and fast_runs[-1]["integer"]
    with pytest.raises(ValueError, match="too deep"):
        smemkit.bincount(dev(x.reshape(50, 100)), minlength=200, out_of_range="ignore")

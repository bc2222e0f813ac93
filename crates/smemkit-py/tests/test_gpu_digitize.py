"""digitize of GPU arrays (torch, CuPy, JAX) read in place: numpy.digitize's indices on the host
copy, int64 of x's shape and of the input's kind. The GPU tests are skipped without a GPU or the
framework; the first tests run everywhere, with a stand-in CuPy (see test_device_plumbing.py) and
a stand-in native call that reads the host memory at the address the Python layer passes."""

import ctypes
import os
import sys

import numpy as np
import pytest

import smemkit
from smemkit import _device, _device_digitize, _native

from test_device_plumbing import _fake_cupy, _read, dev

try:
    import torch
except ImportError:
    torch = None
try:
    import cupy
except ImportError:
    cupy = None
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
try:
    import jax
    import jax.numpy as jnp
except ImportError:
    jax = None


# ---- the Python layer, without a GPU -------------------------------------------------------

runs = []


class FakeDigitize:
    def __init__(self, device, dtype, bins, right):
        self.dtype, self.bins, self.right = dtype, np.array(bins), right

    def run(self, stream, input, n, out):
        runs.append(dict(n=n, dtype=self.dtype))
        x = _read(input, n, self.dtype)
        idx = np.digitize(x, self.bins, self.right).astype(np.int64)
        ctypes.memmove(out, idx.ctypes.data, idx.nbytes)


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(_native, "device_digitize", FakeDigitize)
    _device._EDGES.clear()
    _device_digitize._CALLS.clear()
    runs.clear()


@pytest.mark.parametrize("right", [False, True])
def test_shape_dtype_and_values(fake, rng, right):
    x = rng.standard_normal((40, 25)).astype(np.float32)
    bins = np.array([-1.0, -0.5, 0.0, 0.5, 2.0])
    i = smemkit.digitize(dev(x), bins, right)
    assert i.dtype == np.int64 and i.shape == x.shape
    np.testing.assert_array_equal(i, np.digitize(x, bins, right))
    assert runs[-1] == dict(n=1000, dtype="float32")


def test_float16_is_widened_on_the_device(fake, rng):
    x = (rng.standard_normal(300) * 3).astype(np.float16)
    for bins in (np.array([-1.0, 0.5, 2.0]), np.array([2.0, 0.0, -1.5], np.float16)):
        np.testing.assert_array_equal(smemkit.digitize(dev(x), bins), np.digitize(x, bins))
    assert runs[-1] == dict(n=300, dtype="float32")


def test_nan_bins_as_numpy(fake, rng):
    # numpy orders NaN after every number: the device searches the numbers, NaN samples are
    # placed as numpy places them.
    x = np.concatenate([rng.standard_normal(200) * 4, [np.nan, np.inf, -np.inf, 1.0, 3.0]])
    nan = np.nan
    for bins in ([1.0, 3.0, nan], [nan, 3.0, 1.0], [nan, nan], [1.0, 3.0, nan, nan], [nan],
                 [nan, 3.0]):
        for right in (False, True):
            got = smemkit.digitize(dev(x), np.array(bins), right)
            np.testing.assert_array_equal(got, np.digitize(x, np.array(bins), right), str(bins))
    # Elsewhere numpy's search runs over an unsorted array (its answers depend on the samples'
    # order): refused, as the CPU engine refuses them.
    for bins in ([1.0, nan, 3.0], [0.0, nan], [1.0, 2.0, nan, 0.0]):
        with pytest.raises(ValueError, match="NaN bins"):
            smemkit.digitize(dev(x), np.array(bins))
        with pytest.raises(ValueError, match="NaN bins"):
            smemkit.digitize(x, np.array(bins))


def test_errors(fake, rng):
    x = dev(rng.standard_normal((10, 4)))
    with pytest.raises(ValueError, match="C order"):
        smemkit.digitize(x.T, [0.0, 1.0])
    with pytest.raises(ValueError, match="too deep"):
        smemkit.digitize(x, np.zeros((2, 2)))
    with pytest.raises(NotImplementedError, match="2\\*\\*53"):
        smemkit.digitize(dev(np.array([2**60, 1], np.int64)), [0, 5])
    with pytest.raises(TypeError, match="bins are on a GPU"):
        smemkit.digitize(np.zeros(3), dev(np.array([0.0, 1.0])))
    assert not runs


# ---- on a GPU ------------------------------------------------------------------------------


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
needs_jax = pytest.mark.skipif(
    jax is None or torch is None or not _cuda(), reason="needs JAX, torch and a CUDA GPU"
)


@needs_torch
@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("n", [1000, 1 << 22])
def test_torch_float_and_int(right, n):
    g = torch.Generator(device="cuda").manual_seed(8)
    x = torch.randn(n, generator=g, device="cuda", dtype=torch.float32)
    x[::1001] = float("nan")
    bins = np.linspace(-3, 3, 1000)
    i = smemkit.digitize(x, bins, right)
    assert i.is_cuda and i.dtype == torch.int64 and i.shape == x.shape
    np.testing.assert_array_equal(i.cpu().numpy(), np.digitize(x.cpu().numpy(), bins, right))
    dec = bins[::-1].copy()
    i = smemkit.digitize(x, dec, right)
    np.testing.assert_array_equal(i.cpu().numpy(), np.digitize(x.cpu().numpy(), dec, right))
    k = torch.randint(-50, 50, (n,), generator=g, device="cuda", dtype=torch.int32).reshape(-1, 4)
    ib = np.array([-10, 0, 0, 3, 17])
    i = smemkit.digitize(k, ib, right)
    assert i.shape == k.shape
    np.testing.assert_array_equal(i.cpu().numpy(), np.digitize(k.cpu().numpy(), ib, right))


@needs_torch
def test_torch_bins_on_the_gpu_and_a_side_stream():
    x = torch.rand(1 << 20, device="cuda", dtype=torch.float64)
    bins = torch.linspace(0, 1, 77, device="cuda", dtype=torch.float64)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = x * 1.2
        i = smemkit.digitize(y, bins)
    torch.cuda.current_stream().wait_stream(s)
    np.testing.assert_array_equal(i.cpu().numpy(),
                                  np.digitize(y.cpu().numpy(), bins.cpu().numpy()))


@needs_cupy
def test_cupy():
    x = cupy.random.default_rng(3).standard_normal(1 << 20)
    bins = np.geomspace(0.001, 5, 300)
    i = smemkit.digitize(x, bins, True)
    assert isinstance(i, cupy.ndarray) and i.dtype == np.int64
    np.testing.assert_array_equal(cupy.asnumpy(i), np.digitize(cupy.asnumpy(x), bins, True))


@needs_jax
def test_jax():
    x = jax.random.normal(jax.random.PRNGKey(6), (512, 512), dtype=jnp.float32)
    bins = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    i = smemkit.digitize(x, bins)
    assert isinstance(i, jax.Array) and i.shape == x.shape
    np.testing.assert_array_equal(np.asarray(i), np.digitize(np.asarray(x), bins))

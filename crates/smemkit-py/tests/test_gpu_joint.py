"""histogramdd / histogram2d of GPU arrays (torch, CuPy, JAX) read in place: numpy.histogramdd's
counts (float64), edges and density on the host copy, results of the input's kind. The GPU tests
are skipped without a GPU or the framework; the first tests run everywhere, with a stand-in CuPy
(see test_device_plumbing.py) and a stand-in native joint call that reads the host memory at the
addresses and strides the Python layer passes and counts it with numpy."""

import ctypes
import os
import sys

import numpy as np
import pytest

import smemkit
from smemkit import _device, _device_joint, _native

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


class FakeJoint:
    def __init__(self, device, dtype, weights_dtype, bins, strategy):
        self.dtype, self.weights_dtype = dtype, weights_dtype
        self._edges = []
        for nb, r, e in bins:
            if e is not None:
                self._edges.append(np.asarray(e, np.float64))
            else:
                lo, hi = r
                if lo == hi:
                    lo, hi = lo - 0.5, hi + 0.5
                self._edges.append(np.linspace(lo, hi, nb + 1))
        self.shape = [e.size - 1 for e in self._edges]
        self.nbins = int(np.prod(self.shape))

    def edges(self):
        return [e.copy() for e in self._edges]

    def run(self, stream, axes, n, weights, out, tallies):
        item = np.dtype(self.dtype).itemsize
        cols = []
        for ptr, stride in axes:
            raw = _read(ptr, (n - 1) * stride + 1, self.dtype)
            cols.append(raw[::stride])
        runs.append(dict(axes=axes, n=n, weights=weights))
        w = None if weights == 0 else _read(weights, n, self.weights_dtype)
        h, _ = np.histogramdd(np.stack(cols, 1), self._edges, weights=w)
        words = np.zeros(self.nbins + 3, np.uint64)
        words[:self.nbins] = (h.astype(np.int64) if w is None else h).reshape(-1).view(np.uint64)
        ctypes.memmove(out, words.ctypes.data, words.nbytes)
        assert tallies == out + 8 * self.nbins and item


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(_native, "device_joint", FakeJoint)
    _device._EDGES.clear()
    _device_joint._CALLS.clear()
    runs.clear()


def test_rows_of_an_n_by_d_array(fake, rng):
    x = rng.standard_normal((5000, 3)).astype(np.float32)
    h, e = smemkit.histogramdd(dev(x), (10, 4, 7), range=[(-2, 2), (-1, 3), (0, 1)])
    H, E = np.histogramdd(x, (10, 4, 7), range=[(-2, 2), (-1, 3), (0, 1)])
    assert h.dtype == np.float64 and h.shape == H.shape
    np.testing.assert_array_equal(h, H)
    for a, b in zip(e, E):
        np.testing.assert_array_equal(a, b)
    base = runs[-1]["axes"][0][0]
    assert runs[-1]["axes"] == [(base, 3), (base + 4, 3), (base + 8, 3)]


def test_columns_and_a_sequence_of_arrays(fake, rng):
    x = np.asfortranarray(rng.standard_normal((3000, 2)))
    d = dev(x.T).T  # a Fortran-order (N, 2) view of device memory
    h, _ = smemkit.histogramdd(d, 8, range=[(-3, 3), (-3, 3)])
    np.testing.assert_array_equal(h, np.histogramdd(x, 8, range=[(-3, 3), (-3, 3)])[0])
    assert runs[-1]["axes"][0][1] == 1
    a, b = x[:, 0].copy(), x[:, 1].copy()
    h2, xe, ye = smemkit.histogram2d(dev(a), dev(b), [5, 9], range=[[-2, 2], [-1, 1]])
    H2, XE, YE = np.histogram2d(a, b, [5, 9], range=[[-2, 2], [-1, 1]])
    np.testing.assert_array_equal(h2, H2)
    np.testing.assert_array_equal(xe, XE)
    np.testing.assert_array_equal(ye, YE)


def test_weights_density_and_given_edges(fake, rng):
    x = rng.standard_normal((4000, 2))
    w = rng.random(4000)
    edges = [np.array([-3, -1, 0, 2, 5]), np.linspace(-2, 2, 11)]
    h, e = smemkit.histogramdd(dev(x), edges, weights=dev(w))
    H, _ = np.histogramdd(x, edges, weights=w)
    np.testing.assert_allclose(h, H, rtol=1e-12)
    assert e[0].dtype == edges[0].dtype
    d, _ = smemkit.histogramdd(dev(x), edges, density=True)
    np.testing.assert_array_equal(d, np.histogramdd(x, edges, density=True)[0])


def test_errors(fake, rng):
    x = dev(rng.standard_normal((100, 2)))
    with pytest.raises(ValueError, match="backend='cpu'"):
        smemkit.histogramdd(x, 4, range=[(0, 1), (0, 1)], backend="cpu")
    with pytest.raises(TypeError, match="some sample arrays"):
        smemkit.histogram2d(x[:, 0], np.zeros(100), 4)
    with pytest.raises(TypeError, match="one dtype"):
        smemkit.histogram2d(dev(np.zeros(10)), dev(np.zeros(10, np.float32)), 4,
                            range=[(0, 1), (0, 1)])
    with pytest.raises(ValueError, match="weights must be 1-D"):
        smemkit.histogramdd(x, 4, range=[(0, 1), (0, 1)], weights=dev(np.ones(99)))
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


def _same(h, e, H, E, host):
    np.testing.assert_array_equal(host(h), H)
    assert len(e) == len(E)
    for a, b in zip(e, E):
        a = host(a)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@needs_torch
@pytest.mark.parametrize("dtype", [torch and torch.float32, torch and torch.float64,
                                   torch and torch.int32, torch and torch.uint8])
@pytest.mark.parametrize("n", [1000, 1 << 21])
def test_torch_n_by_d_over_a_range(dtype, n):
    g = torch.Generator(device="cuda").manual_seed(5)
    x = (torch.randn(n, 3, generator=g, device="cuda") * 40).to(dtype) if dtype.is_floating_point \
        else torch.randint(0, 200, (n, 3), generator=g, device="cuda").to(dtype)
    rng_ = [(-100, 100), (0.5, 150.25), (-3, 3)]
    h, e = smemkit.histogramdd(x, (64, 33, 7), range=rng_)
    assert h.is_cuda and h.dtype == torch.float64
    H, E = np.histogramdd(x.cpu().numpy(), (64, 33, 7), range=rng_)
    _same(h, e, H, E, lambda t: t.cpu().numpy())


@needs_torch
def test_torch_histogram2d_columns_weights_density_and_data_range():
    g = torch.Generator(device="cuda").manual_seed(9)
    xy = torch.randn(2, 1 << 20, generator=g, device="cuda", dtype=torch.float32)
    x, y = xy[0], xy[1]
    h, xe, ye = smemkit.histogram2d(x, y, 100)  # range from the data: a synchronisation
    H, XE, YE = np.histogram2d(x.cpu().numpy(), y.cpu().numpy(), 100)
    _same(h, [xe, ye], H, [XE, YE], lambda t: t.cpu().numpy())
    w = torch.rand(1 << 20, generator=g, device="cuda", dtype=torch.float64)
    h, _, _ = smemkit.histogram2d(x, y, [30, 40], range=[[-3, 3], [-2, 2]], weights=w)
    H, _, _ = np.histogram2d(x.cpu().numpy(), y.cpu().numpy(), [30, 40],
                             range=[[-3, 3], [-2, 2]], weights=w.cpu().numpy())
    np.testing.assert_allclose(h.cpu().numpy(), H, rtol=1e-12)
    d, _, _ = smemkit.histogram2d(x, y, [30, 40], range=[[-3, 3], [-2, 2]], density=True)
    D, _, _ = np.histogram2d(x.cpu().numpy(), y.cpu().numpy(), [30, 40],
                             range=[[-3, 3], [-2, 2]], density=True)
    np.testing.assert_array_equal(d.cpu().numpy(), D)
    # a transposed (column-major) (N, 2) view
    h, e = smemkit.histogramdd(xy.T, [16, 16], range=[(-4, 4), (-4, 4)])
    H, E = np.histogramdd(xy.T.cpu().numpy(), [16, 16], range=[(-4, 4), (-4, 4)])
    _same(h, e, H, E, lambda t: t.cpu().numpy())


@needs_torch
def test_torch_given_edges_on_a_side_stream():
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(1 << 18, 2, generator=g, device="cuda", dtype=torch.float64)
    edges = [np.array([-5.0, -1.0, 0.0, 0.25, 3.0]), np.geomspace(0.01, 4, 50)]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = x * 1.5
        h, e = smemkit.histogramdd(y, edges)
    torch.cuda.current_stream().wait_stream(s)
    H, E = np.histogramdd(y.cpu().numpy(), edges)
    _same(h, e, H, E, lambda t: t.cpu().numpy())


@needs_cupy
def test_cupy_n_by_d_and_histogram2d():
    g = cupy.random.default_rng(2)
    x = g.standard_normal((1 << 20, 2), dtype=cupy.float32)
    h, e = smemkit.histogramdd(x, [50, 70], range=[(-3, 3), (-2.5, 2.5)])
    assert isinstance(h, cupy.ndarray) and h.dtype == np.float64
    H, E = np.histogramdd(cupy.asnumpy(x), [50, 70], range=[(-3, 3), (-2.5, 2.5)])
    _same(h, e, H, E, cupy.asnumpy)
    a, b = cupy.ascontiguousarray(x[:, 0]), cupy.ascontiguousarray(x[:, 1])
    h, xe, ye = smemkit.histogram2d(a, b, 64)
    H, XE, YE = np.histogram2d(cupy.asnumpy(a), cupy.asnumpy(b), 64)
    _same(h, [xe, ye], H, [XE, YE], cupy.asnumpy)


@needs_torch
def test_torch_and_cupy_float16_joint_histograms():
    g = torch.Generator(device="cuda").manual_seed(12)
    x = (torch.randn(1 << 20, 2, generator=g, device="cuda") * 20).half()
    for bins, r in (([100, 37], None), ([64, 64], [(-30, 30), None]), (4096, [(-8, 8), (-8, 8)])):
        h, e = smemkit.histogramdd(x, bins, range=r)
        H, E = np.histogramdd(x.cpu().numpy(), bins, range=r)
        _same(h, e, H, E, lambda t: t.cpu().numpy())
    h, xe, ye = smemkit.histogram2d(x[:, 0], x[:, 1], 50, density=True)
    H, XE, YE = np.histogram2d(x[:, 0].cpu().numpy(), x[:, 1].cpu().numpy(), 50, density=True)
    _same(h, [xe, ye], H, [XE, YE], lambda t: t.cpu().numpy())
    if cupy is not None:
        c = cupy.asarray(x.cpu().numpy())
        h, e = smemkit.histogramdd(c, [30, 20])
        H, E = np.histogramdd(cupy.asnumpy(c), [30, 20])
        _same(h, e, H, E, cupy.asnumpy)


@needs_torch
def test_torch_bfloat16_joint_histograms():
    if ml_dtypes is None:
        pytest.skip("needs ml_dtypes (numpy's bfloat16) for the oracle")
    g = torch.Generator(device="cuda").manual_seed(13)
    x = (torch.randn(1 << 20, 2, generator=g, device="cuda") * 20).bfloat16()
    host = x.float().cpu().numpy().astype(ml_dtypes.bfloat16)
    for bins, r in (([100, 37], None), ([64, 64], [(-30, 30), None]), (4096, [(-8, 8), (-8, 8)])):
        h, e = smemkit.histogramdd(x, bins, range=r)
        H, E = np.histogramdd(host, bins, range=r)
        _same(h, e, H, E, lambda t: t.cpu().numpy())  # edges: float64, as numpy's
    h, xe, ye = smemkit.histogram2d(x[:, 0], x[:, 1], 50, density=True)
    H, XE, YE = np.histogram2d(host[:, 0], host[:, 1], 50, density=True)
    _same(h, [xe, ye], H, [XE, YE], lambda t: t.cpu().numpy())


@needs_jax
def test_jax_n_by_d():
    jax.config.update("jax_enable_x64", True)  # numpy's float64 results (see test_gpu_arrays)
    x = jax.random.normal(jax.random.PRNGKey(4), (1 << 18, 2), dtype=jnp.float32)
    h, e = smemkit.histogramdd(x, [20, 30], range=[(-3, 3), (-3, 3)])
    assert isinstance(h, jax.Array)
    H, E = np.histogramdd(np.asarray(x), [20, 30], range=[(-3, 3), (-3, 3)])
    _same(h, e, H, E, np.asarray)


def _same_joint(got, want):
    (h, e), (H, E) = got, want
    assert h.dtype == H.dtype and h.shape == H.shape
    np.testing.assert_array_equal(h, H)
    for a, b in zip(e, E):
        a = np.asarray(a)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_array_equal(a, b)


try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None
HALVES = [np.float16] + ([ml_dtypes.bfloat16] if ml_dtypes is not None else [])


@pytest.mark.parametrize("half", HALVES, ids=lambda t: np.dtype(t).name)
def test_16_bit_float_samples_are_binned_as_numpy_bins_them(fake, rng, half):
    for _ in range(5):
        x = (rng.standard_normal((3000, 3)) * 30).astype(half)
        x[:7, 1] = x[0, 1]  # values on the float16 edges' ends
        bins = [int(b) for b in rng.integers(1, 200, 3)]
        for r in (None, [None, (-20.0, 15.5), None], [(-1, 1), (0, 64), (-60.0, -59.0)]):
            got = smemkit.histogramdd(dev(x), bins, range=r)
            _same_joint(got, np.histogramdd(x, bins, range=r))
            assert runs[-1]["n"] == 3000
        edges = [np.linspace(-40, 40, 9).astype(half), 12, np.array([-5.0, 0.0, 5.0])]
        _same_joint(smemkit.histogramdd(dev(x), edges), np.histogramdd(x, edges))
        d = smemkit.histogramdd(dev(x), bins, density=True)
        np.testing.assert_array_equal(d[0], np.histogramdd(x, bins, density=True)[0])
        a, b = np.ascontiguousarray(x[:, 0]), np.ascontiguousarray(x[:, 2])
        got = smemkit.histogram2d(dev(a), dev(b), bins[:2])
        want = np.histogram2d(a, b, bins[:2])
        _same_joint((got[0], got[1:]), (want[0], want[1:]))
    same = np.full((10, 1), 3.0, half)  # one value: numpy widens the range by 0.5
    _same_joint(smemkit.histogramdd(dev(same), 5), np.histogramdd(same, 5))
    empty = np.zeros((0, 2), half)
    _same_joint(smemkit.histogramdd(dev(empty), 4), np.histogramdd(empty, 4))
    with pytest.raises(ValueError, match="not finite"):
        smemkit.histogramdd(dev(np.array([[1.0], [np.inf]], half)), 4)


def test_a_one_dimensional_sample_is_one_axis(fake, rng):
    x = rng.standard_normal(1000)
    h, e = smemkit.histogramdd(dev(x), 12, range=[(-2, 2)])
    H, E = np.histogramdd(x, 12, range=[(-2, 2)])
    np.testing.assert_array_equal(h, H)
    np.testing.assert_array_equal(e[0], E[0])

"""float16 and bfloat16 GPU arrays (torch, CuPy, JAX) histogrammed in place: numpy's counts and
edges on the host copy (numpy bins float16 itself; bfloat16 is numpy's through ml_dtypes, whose
type does not promote weakly, so with a range of Python numbers its histogram is float64's: float64
edges, and the counts of the values widened exactly to float32). The GPU tests are skipped without
a GPU or the framework; the first tests run everywhere, with a stand-in CuPy (see
test_device_plumbing.py) whose native call is numpy's histogram on the host memory, checking what
the Python layer passes and returns."""

import os
import sys

import numpy as np
import pytest

import smemkit
from smemkit import _device, _native

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

seen = []


def _numpy_device_histogram(device, stream, samples, out, bins, run):
    """The native call's stand-in for 16-bit floats: numpy's histogram of the host memory."""
    input, n, dtype, weights, weights_dtype = samples
    nbins, range, edges, integer_bins, extremes = bins
    seen.append(dict(dtype=dtype, nbins=nbins, range=range, edges=edges, extremes=extremes))
    x = _read(input, n, dtype)
    if extremes:
        # Bins over two values of the samples' type (the data's extremes, or a range of such
        # scalars): numpy's own over that range, which is its histogram without one when they
        # are the data's extremes.
        range = tuple(x.dtype.type(v) for v in extremes)
    counts, _ = np.histogram(x, edges if edges is not None else nbins, range=range)
    words = np.zeros(counts.size + 3, np.uint64)
    words[:counts.size] = counts
    import ctypes

    ctypes.memmove(out, words.ctypes.data, words.nbytes)


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(_native, "device_histogram", _numpy_device_histogram)
    _device._EDGES.clear()
    seen.clear()


@pytest.mark.parametrize("bins,rng_", [(100, (-4, 4)), (7, (-1.5, 2.25)), (3, (1, 1))])
def test_float16_passes_the_range_and_returns_float16_edges(fake, rng, bins, rng_):
    x = (rng.standard_normal(5000) * 2).astype(np.float16)
    h, e = smemkit.histogram(dev(x), bins, range=rng_)
    H, E = np.histogram(x, bins, range=rng_)
    assert seen[-1]["dtype"] == "float16" and seen[-1]["range"] == tuple(map(float, rng_))
    assert h.dtype == np.int64 and e.dtype == np.float16 == E.dtype
    np.testing.assert_array_equal(h, H)
    np.testing.assert_array_equal(e.view(np.uint16), E.view(np.uint16))
    d, _ = smemkit.histogram(dev(x), bins, range=rng_, density=True)
    np.testing.assert_array_equal(d, np.histogram(x, bins, range=rng_, density=True)[0])


def test_float16_with_given_edges(fake, rng):
    x = rng.standard_normal(3000).astype(np.float16)
    edges = np.array([-3.0, -0.1, 0.0, 0.1, 2.5])
    h, e = smemkit.histogram(dev(x), edges)
    np.testing.assert_array_equal(h, np.histogram(x, edges)[0])
    assert seen[-1]["edges"] is not None and e.dtype == np.float64


@pytest.mark.parametrize("bins", [1, 3, 10, 100, 1000])
def test_float16_without_a_range_is_numpys(fake, rng, bins):
    # The extremes are read on the device (here the stand-in's host memory) and passed on; the
    # edges come from the library (float16 linspace in float16 arithmetic from the extremes),
    # checked bit for bit against numpy's.
    x = (rng.standard_normal(4000) * 3 + 1).astype(np.float16)
    h, e = smemkit.histogram(dev(x), bins)
    H, E = np.histogram(x, bins)
    assert seen[-1]["extremes"] == [float(x.min()), float(x.max())]
    assert seen[-1]["range"] is None and seen[-1]["nbins"] == bins
    assert e.dtype == np.float16 == E.dtype
    np.testing.assert_array_equal(e.view(np.uint16), E.view(np.uint16))
    np.testing.assert_array_equal(h, H)
    d, _ = smemkit.histogram(dev(x), bins, density=True)
    np.testing.assert_array_equal(d, np.histogram(x, bins, density=True)[0])
    be = smemkit.histogram_bin_edges(dev(x), bins)
    np.testing.assert_array_equal(np.asarray(be).view(np.uint16), E.view(np.uint16))


@pytest.mark.parametrize("x", [np.full(5, 3.5, np.float16), np.zeros(0, np.float16),
                               np.array([-0.0, 30000.0, -30000.0], np.float16)])
def test_float16_without_a_range_edge_cases(fake, x):
    h, e = smemkit.histogram(dev(x), 8)
    H, E = np.histogram(x, 8)
    np.testing.assert_array_equal(e.view(np.uint16), E.view(np.uint16))
    np.testing.assert_array_equal(h, H)
    assert seen[-1]["extremes"] == ([] if x.size == 0 else [float(x.min()), float(x.max())])


def test_float16_without_a_range_refuses_nan_as_numpy(fake):
    x = np.array([1.0, np.nan, 2.0], np.float16)
    with pytest.raises(ValueError, match="not finite") as ours:
        smemkit.histogram(dev(x), 4)
    with pytest.raises(ValueError, match="not finite"):
        np.histogram(x, 4)
    assert "NaN" in str(ours.value)
    # A range whose width overflows float16: numpy's "Too many bins" ValueError, ours names it.
    x = np.array([-65504.0, 65504.0], np.float16)
    with pytest.raises(ValueError, match="Too many bins"):
        np.histogram(x, 8)
    with pytest.raises(ValueError, match="Too many bins"):
        smemkit.histogram(dev(x), 8)
    assert not seen


def test_bfloat16_data_edges_are_ml_dtypes_numpys():
    # The library's edges of bfloat16 samples over their own range (the GPU path's) against
    # numpy with ml_dtypes on the same values.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(5)
    for values, bins in [((rng.standard_normal(3000) * 2).astype(np.float32), 40),
                         (np.full(4, 2.5, np.float32), 6)]:
        b = values.astype(ml_dtypes.bfloat16)
        try:
            E = np.histogram_bin_edges(b, bins)
        except TypeError as err:
            pytest.skip(f"numpy cannot bin ml_dtypes.bfloat16 here: {err}")
        lo, hi = float(b.min()), float(b.max())
        e, edges_dtype = _native.data_bin_edges("bfloat16", bins, [lo, hi])
        assert edges_dtype == str(E.dtype)
        np.testing.assert_array_equal(e, np.asarray(E, np.float64))


def test_float16_range_of_float16_scalars_bins_in_float16(fake, rng):
    # numpy computes the edges and bins in float16 over such a range, as over the data's extremes:
    # the range goes down as extremes.
    x = (rng.standard_normal(3000) * 2).astype(np.float16)
    for r in [(np.float16(-1.5), np.float16(2.25)), (x.min(), x.max()),
              (np.float16(0.1), 2.7)]:
        h, e = smemkit.histogram(dev(x), 37, range=r)
        H, E = np.histogram(x, 37, range=r)
        assert seen[-1]["extremes"] == [float(np.float16(r[0])), float(np.float16(r[1]))]
        assert e.dtype == E.dtype == np.float16
        np.testing.assert_array_equal(e.view(np.uint16), E.view(np.uint16))
        np.testing.assert_array_equal(h, H)


def test_float16_errors(fake):
    x = dev(np.ones(8, np.float16))
    # A float32 range widens the samples, which the device engine does not do.
    with pytest.raises(NotImplementedError, match="widened to float32"):
        smemkit.histogram(x, 10, range=(np.float32(0), np.float32(1)))
    with pytest.raises(ValueError, match="max must be larger than min"):
        smemkit.histogram(x, 10, range=(np.float16(1), np.float16(0)))
    with pytest.raises(TypeError, match="Cannot cast"):
        smemkit.bincount(x)
    assert not seen


def test_bfloat16_ranges_of_numpy_scalars_follow_numpys_promotion():
    # numpy with ml_dtypes: float64 scalars widen bfloat16 samples to float64 (the GPU path's
    # float range), integer scalars do not promote (its DTypePromotionError, a TypeError), float32
    # scalars make it bin in float32 (not followed on the GPU yet).
    pytest.importorskip("ml_dtypes")
    r = (np.float64(-1.5), np.float64(2.0))
    assert _device._typed_range(r, "bfloat16") == r
    assert _device._typed_range((-1.5, 2), "bfloat16") == (-1.5, 2)
    with pytest.raises(TypeError):
        _device._typed_range((np.int64(0), np.int64(3)), "bfloat16")
    with pytest.raises(NotImplementedError, match="float32"):
        _device._typed_range((np.float32(0), np.float32(3)), "bfloat16")


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

# float16 edges must stay increasing once rounded to float16 (more bins than float16 holds in the
# range is the library's TooManyBins error, where numpy would count into repeated edges).
CASES16 = [(1000, (-4.0, 4.0)), (2048, (-8, 8)), (100, (-0.3, 1.7)), (5, (2.0, 2.0))]
CASES = [(1000, (-4.0, 4.0)), (32768, (-4, 4)), (100, (-0.3, 1.7)), (5, (2.0, 2.0))]


def _normal16(n, dtype, seed=7):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(n, generator=g, device="cuda", dtype=torch.float32) * 2
    x[:: 997] = float("nan")
    x[1:: 1009] = float("inf")
    return x.to(dtype)


@needs_torch
@pytest.mark.parametrize("bins,rng_", CASES16)
@pytest.mark.parametrize("n", [1000, 1 << 22])
def test_torch_float16_is_numpys(bins, rng_, n):
    x = _normal16(n, torch.float16)
    h, e = smemkit.histogram(x, bins, range=rng_)
    assert h.is_cuda and h.dtype == torch.int64 and e.dtype == torch.float16
    H, E = np.histogram(x.cpu().numpy(), bins, range=rng_)
    np.testing.assert_array_equal(h.cpu().numpy(), H)
    np.testing.assert_array_equal(e.cpu().numpy().view(np.uint16), E.view(np.uint16))


@needs_torch
def test_torch_float16_weights_and_density():
    x = _normal16(1 << 16, torch.float16)
    w = torch.rand(1 << 16, device="cuda", dtype=torch.float64)
    h, _ = smemkit.histogram(x, 300, range=(-3, 3), weights=w)
    xh = x.cpu().numpy()
    H, _ = np.histogram(xh, 300, range=(-3, 3), weights=w.cpu().numpy())
    np.testing.assert_allclose(h.cpu().numpy(), H, rtol=1e-12)
    d, _ = smemkit.histogram(x, 300, range=(-3, 3), density=True)
    D, _ = np.histogram(xh, 300, range=(-3, 3), density=True)
    np.testing.assert_allclose(d.cpu().numpy(), D, rtol=1e-12)


@needs_torch
@pytest.mark.parametrize("bins,rng_", CASES)
@pytest.mark.parametrize("n", [1000, 1 << 22])
def test_torch_bfloat16_is_float64s_histogram_of_its_values(bins, rng_, n):
    # numpy with ml_dtypes: a bfloat16 array and a range of Python floats bin in float64; the
    # values widen exactly to float32, whose histogram over float64 edges is the same.
    x = _normal16(n, torch.bfloat16)
    if all(type(v) is int for v in rng_):
        # Over a range of Python ints numpy with ml_dtypes bins in bfloat16 arithmetic: refused.
        with pytest.raises(NotImplementedError, match="integers for bfloat16"):
            smemkit.histogram(x, bins, range=rng_)
        rng_ = tuple(float(v) for v in rng_)
    h, e = smemkit.histogram(x, bins, range=rng_)
    assert h.is_cuda and h.dtype == torch.int64 and e.dtype == torch.float64
    xf = x.float().cpu().numpy().astype(np.float64)
    H, E = np.histogram(xf, bins, range=rng_)
    np.testing.assert_array_equal(h.cpu().numpy(), H)
    np.testing.assert_array_equal(e.cpu().numpy(), E)


@needs_torch
def test_torch_bfloat16_against_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = _normal16(1 << 20, torch.bfloat16)
    host = x.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
    try:
        H, E = np.histogram(host, 1000, range=(-4.0, 4.0))
    except TypeError as err:  # an ml_dtypes/numpy pair without bfloat16 histograms
        pytest.skip(f"numpy cannot histogram ml_dtypes.bfloat16 here: {err}")
    h, e = smemkit.histogram(x, 1000, range=(-4.0, 4.0))
    np.testing.assert_array_equal(h.cpu().numpy(), H)
    np.testing.assert_array_equal(e.cpu().numpy(), np.asarray(E, np.float64))


@needs_torch
def test_torch_half_with_given_edges():
    edges = np.array([-5.0, -1.0, -0.25, 0.0, 0.001, 0.5, 3.0, 60000.0])
    for dtype in (torch.float16, torch.bfloat16):
        x = _normal16(1 << 18, dtype)
        h, e = smemkit.histogram(x, edges)
        H, _ = np.histogram(x.float().cpu().numpy().astype(np.float64), edges)
        np.testing.assert_array_equal(h.cpu().numpy(), H)
        np.testing.assert_array_equal(e.cpu().numpy(), edges)


def _finite16(n, dtype, seed=9):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(n, generator=g, device="cuda", dtype=torch.float32) * 3 + 1).to(dtype)


@needs_torch
@pytest.mark.parametrize("bins", [1, 10, 512])
@pytest.mark.parametrize("n", [1000, 1 << 22])
def test_torch_float16_without_a_range_is_numpys(bins, n):
    # The extremes are reduced on the device and read back (a sync); numpy bins float16 data
    # over its own range in float16 arithmetic: counts and edges bit for bit.
    x = _finite16(n, torch.float16)
    h, e = smemkit.histogram(x, bins)
    assert h.is_cuda and h.dtype == torch.int64 and e.dtype == torch.float16
    H, E = np.histogram(x.cpu().numpy(), bins)
    np.testing.assert_array_equal(h.cpu().numpy(), H)
    np.testing.assert_array_equal(e.cpu().numpy().view(np.uint16), E.view(np.uint16))
    d, _ = smemkit.histogram(x, bins, density=True)
    D, _ = np.histogram(x.cpu().numpy(), bins, density=True)
    np.testing.assert_array_equal(d.cpu().numpy(), D)


@needs_torch
def test_torch_half_without_a_range_edge_cases():
    for x in (torch.full((7,), 2.5, device="cuda", dtype=torch.float16),
              torch.zeros(0, device="cuda", dtype=torch.float16)):
        h, e = smemkit.histogram(x, 6)
        H, E = np.histogram(x.cpu().numpy(), 6)
        np.testing.assert_array_equal(h.cpu().numpy(), H)
        np.testing.assert_array_equal(e.cpu().numpy().view(np.uint16), E.view(np.uint16))
    x = _normal16(1 << 16, torch.float16)  # holds NaN and inf: numpy's ValueError
    with pytest.raises(ValueError, match="not finite"):
        smemkit.histogram(x, 10)


@needs_torch
def test_torch_bfloat16_without_a_range_against_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for x, bins in ((_finite16(1 << 20, torch.bfloat16), 40),
                    (torch.full((5,), -1.5, device="cuda", dtype=torch.bfloat16), 4)):
        host = x.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
        try:
            H, E = np.histogram(host, bins)
        except TypeError as err:
            pytest.skip(f"numpy cannot histogram ml_dtypes.bfloat16 here: {err}")
        h, e = smemkit.histogram(x, bins)
        np.testing.assert_array_equal(h.cpu().numpy(), H)
        # bfloat16 edges as torch.bfloat16 (float32 for a one-value range, as ml_dtypes').
        want = {"bfloat16": torch.bfloat16, "float32": torch.float32}[str(E.dtype)]
        assert e.dtype == want
        np.testing.assert_array_equal(e.float().cpu().numpy().astype(np.float64),
                                      np.asarray(E, np.float64))


@needs_torch
def test_torch_half_on_a_side_stream():
    x = _normal16(1 << 20, torch.float16)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = x * 2  # written on the side stream, histogrammed after it there
        h, _ = smemkit.histogram(y, 512, range=(-8, 8))
    torch.cuda.current_stream().wait_stream(s)
    H, _ = np.histogram(y.cpu().numpy(), 512, range=(-8, 8))
    np.testing.assert_array_equal(h.cpu().numpy(), H)


@needs_cupy
@pytest.mark.parametrize("bins,rng_", CASES16)
def test_cupy_float16_is_numpys(bins, rng_):
    g = cupy.random.default_rng(11)
    x = (g.standard_normal(1 << 21, dtype=cupy.float32) * 2).astype(cupy.float16)
    x[::991] = cupy.nan
    h, e = smemkit.histogram(x, bins, range=rng_)
    assert isinstance(h, cupy.ndarray) and h.dtype == np.int64 and e.dtype == np.float16
    H, E = np.histogram(cupy.asnumpy(x), bins, range=rng_)
    np.testing.assert_array_equal(cupy.asnumpy(h), H)
    np.testing.assert_array_equal(cupy.asnumpy(e).view(np.uint16), E.view(np.uint16))


@needs_cupy
def test_cupy_float16_without_a_range_is_numpys():
    g = cupy.random.default_rng(13)
    x = (g.standard_normal(1 << 20, dtype=cupy.float32) * 2).astype(cupy.float16)
    h, e = smemkit.histogram(x, 999)
    H, E = np.histogram(cupy.asnumpy(x), 999)
    np.testing.assert_array_equal(cupy.asnumpy(h), H)
    np.testing.assert_array_equal(cupy.asnumpy(e).view(np.uint16), E.view(np.uint16))


@needs_jax
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_jax_half_through_dlpack(dtype):
    # bfloat16 over a Python range has numpy's float64 edges, which JAX keeps only with x64 on
    # (without it, JAX itself turns the float64 result into float32).
    jax.config.update("jax_enable_x64", True)
    key = jax.random.PRNGKey(3)
    x = (jax.random.normal(key, (1 << 20,), dtype=jnp.float32) * 2).astype(dtype)
    h, e = smemkit.histogram(x, 777, range=(-4.0, 4.0))
    assert isinstance(h, jax.Array)
    xh = np.asarray(x.astype(jnp.float32))
    if dtype == "float16":
        H, E = np.histogram(xh.astype(np.float16), 777, range=(-4.0, 4.0))
    else:
        H, E = np.histogram(xh.astype(np.float64), 777, range=(-4.0, 4.0))
    np.testing.assert_array_equal(np.asarray(h), H)
    np.testing.assert_array_equal(np.asarray(e), E)


def test_bfloat16_range_bounds_numpy_compares_in_float32_follow_numpy_on_the_gpu(fake):
    # numpy (ml_dtypes) compares bfloat16 samples with a float range in float32: an upper bound
    # rounding up onto a bfloat16 keeps that value (last bin); on a lower one rounding down onto
    # a sample numpy fails, and the GPU refuses the bound.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    host = np.array([1.296875] * 3 + [0.5, 1.3046875, -1.0], ml_dtypes.bfloat16)
    x = dev(host)
    for r in ((-1.0, 1.296874999999), (-1.0, 1.296875), (-1.0, 1.3), (-2.0, 0.5 - 1e-12)):
        H, E = np.histogram(host, 4, range=r)
        h, e = smemkit.histogram(x, 4, range=r)
        assert seen[-1]["range"] == r  # the range goes to the engines as given
        np.testing.assert_array_equal(np.asarray(e), E)
    assert np.histogram(host, 4, range=(-1.0, 1.296874999999))[0][-1] == 3
    with pytest.raises(ValueError):  # numpy: its bin index -1 reaches bincount
        np.histogram(host, 4, range=(0.5 + 1e-12, 2.0))
    with pytest.raises(NotImplementedError, match="rounds in float32 to 0.5"):
        smemkit.histogram(x, 4, range=(0.5 + 1e-12, 2.0))
    # numpy float64 scalars: numpy compares in float64 there (drops 1.296875); refused.
    assert np.histogram(host, 4, range=(np.float64(-1.0), np.float64(1.296874999999)))[0][-1] == 0
    with pytest.raises(NotImplementedError, match="numpy float64 in float64"):
        smemkit.histogram(x, 4, range=(np.float64(-1.0), np.float64(1.296874999999)))


@needs_torch
def test_torch_bfloat16_upper_bound_rounding_onto_a_sample_counts_it_as_numpy():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = _normal16(1 << 20, torch.bfloat16) * 0.5
    x[::97] = 1.296875
    x[::101] = 1.3046875
    host = x.float().cpu().numpy().astype(ml_dtypes.bfloat16)
    w = torch.rand(x.numel(), device="cuda", dtype=torch.float64)
    for bins in (5, 1000):
        for r in ((-1.0, 1.296874999999), (-1.0, 1.296875)):
            h, e = smemkit.histogram(x, bins, range=r)
            H, E = np.histogram(host, bins, range=r)
            np.testing.assert_array_equal(h.cpu().numpy(), H)
            np.testing.assert_array_equal(e.cpu().numpy(), E)
            h, _ = smemkit.histogram(x, bins, range=r, weights=w)
            H, _ = np.histogram(host, bins, range=r, weights=w.cpu().numpy())
            np.testing.assert_allclose(h.cpu().numpy(), H, rtol=1e-12)

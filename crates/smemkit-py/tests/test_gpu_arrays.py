"""GPU arrays of torch, CuPy and JAX (and bare DLPack / __cuda_array_interface__ producers) read in
place on a CUDA device: results of the input's kind, bit for bit numpy's on the host copy, ordered
on the producer's stream, capturable in a torch CUDA graph. Skipped without a GPU or without the
framework in question. The first call of each sample type compiles kernels (up to a minute)."""

import os

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
# JAX takes 75 % of the GPU's memory on first use unless told otherwise; torch and CuPy share it.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
try:
    import jax
except ImportError:
    jax = None


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
    jax is None or not _cuda() or not any(d.platform == "gpu" for d in jax.devices()),
    reason="needs JAX on a CUDA GPU",
)


def host(t):
    if torch is not None and isinstance(t, torch.Tensor):
        return t.cpu().numpy()
    if cupy is not None and isinstance(t, cupy.ndarray):
        return t.get()
    return np.asarray(t)


def same(got, want):
    got = host(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def normal_with_specials(rng, n, dtype=np.float32):
    x = rng.standard_normal(n).astype(dtype) * 1.7
    x[:: 997] = np.nan
    x[1:: 1009] = 9.0  # above [-4, 4]
    x[2:: 1013] = -4.0  # the first edge exactly
    x[3:: 1019] = 4.0  # the last edge exactly (counted in the last bin)
    return x


# ---- torch ----------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("bins", [1000, 32768, 100000, 1 << 22])
def test_torch_float32_over_a_range(rng, bins):
    x = normal_with_specials(rng, 1 << 22)
    t = torch.from_numpy(x).cuda()
    h, e = smemkit.histogram(t, bins, range=(-4, 4))
    assert isinstance(h, torch.Tensor) and h.device == t.device and h.dtype == torch.int64
    assert isinstance(e, torch.Tensor) and e.device == t.device and e.dtype == torch.float32
    H, E = np.histogram(x, bins, range=(-4, 4))
    same(h, H)
    same(e, E)


@needs_torch
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64,
                                   np.float64])
def test_torch_dtypes(rng, dtype):
    x = rng.integers(-100, 300, 100_000).astype(dtype)
    t = torch.from_numpy(x).cuda()
    h, e = smemkit.histogram(t, 57, range=(-50, 250))
    H, E = np.histogram(x, 57, range=(-50, 250))
    same(h, H)
    same(e, E)


@needs_torch
def test_torch_range_from_the_data_edges_and_density(rng):
    x = normal_with_specials(rng, 1 << 20)
    x = x[np.isfinite(x)]
    t = torch.from_numpy(x).cuda()
    h, e = smemkit.histogram(t, 333)  # a synchronisation: the range is the data's
    H, E = np.histogram(x, 333)
    same(h, H)
    same(e, E)
    edges = np.array([-3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 3.5])
    h, e = smemkit.histogram(t, edges)
    H, E = np.histogram(x, edges)
    same(h, H)
    same(e, E)
    d, _ = smemkit.histogram(t, 100, range=(-4, 4), density=True)
    same(d, np.histogram(x, 100, range=(-4, 4), density=True)[0])
    with pytest.raises(ValueError, match="not finite"):
        smemkit.histogram(torch.tensor([1.0, float("nan")], device="cuda"), 10)
    b = smemkit.histogram_bin_edges(t, 50)
    same(b, np.histogram_bin_edges(x, 50))


@needs_torch
def test_torch_weights(rng):
    x = normal_with_specials(rng, 1 << 20)
    t = torch.from_numpy(x).cuda()
    for wdtype in (np.float64, np.float32):
        w = rng.random(x.size).astype(wdtype)
        h, _ = smemkit.histogram(t, 1000, range=(-4, 4), weights=torch.from_numpy(w).cuda())
        H, _ = np.histogram(x, 1000, range=(-4, 4), weights=w)
        got = host(h)
        assert got.dtype == H.dtype
        # Summed in numpy's order: numpy's bits.
        np.testing.assert_array_equal(got, H)
    w = torch.from_numpy(rng.random(x.size)).cuda()
    runs = [host(smemkit.histogram(t, 4096, range=(-4, 4), weights=w, deterministic=True,
                                   strategy=s)[0]) for s in (None, None, "global")]
    for r in runs[1:]:
        assert r.tobytes() == runs[0].tobytes()


@needs_torch
@pytest.mark.parametrize("nbins", [1, 1000, 5000, 70_000])
def test_float_weights_sum_as_numpy_bit_for_bit(rng, nbins):
    # Weights of every magnitude, so that numpy's float32 roundings between its blocks of 65536
    # show (and the GPU redoes most bins in order), and weights in [0, 1) (summed by its atomics);
    # five blocks and a partial one; torch and host arrays (the GPU fed from the host).
    n = 5 * 65536 + 4321
    x = normal_with_specials(rng, n)
    wide = rng.standard_normal(n) * np.exp(rng.uniform(-30, 30, n))  # sums that depend on order
    for w in (wide.astype(np.float32), wide, rng.random(n).astype(np.float32), rng.random(n)):
        H, _ = np.histogram(x, nbins, range=(-3, 3), weights=w)
        h, _ = smemkit.histogram(torch.from_numpy(x).cuda(), nbins, range=(-3, 3),
                                 weights=torch.from_numpy(w).cuda())
        got = host(h)
        assert got.dtype == H.dtype
        np.testing.assert_array_equal(got, H)
        h, _ = smemkit.histogram(x, nbins, range=(-3, 3), weights=w, backend="cuda")
        assert h.dtype == H.dtype
        np.testing.assert_array_equal(h, H)


@needs_torch
def test_torch_out_of_range_policies(rng):
    x = normal_with_specials(rng, 1 << 18)
    t = torch.from_numpy(x).cuda()
    h, _ = smemkit.histogram(t, 64, range=(-4, 4), out_of_range="clamp")
    finite = x[~np.isnan(x)]
    same(h, np.histogram(np.clip(finite, -4, 4), 64, range=(-4, 4))[0])
    with pytest.raises(ValueError, match="out-of-range policy `error`"):
        smemkit.histogram(t, 64, range=(-4, 4), out_of_range="error")


@needs_torch
def test_torch_bincount(rng):
    x = rng.integers(0, 70000, 1 << 20).astype(np.int32)
    t = torch.from_numpy(x).cuda()
    same(smemkit.bincount(t), np.bincount(x))
    same(smemkit.bincount(t, minlength=80000), np.bincount(x, minlength=80000))
    # exactly minlength bins, no synchronisation
    same(smemkit.bincount(t, minlength=1000, out_of_range="ignore"),
         np.bincount(x[x < 1000], minlength=1000))
    w = rng.random(x.size)
    got = host(smemkit.bincount(t, weights=torch.from_numpy(w).cuda()))
    np.testing.assert_allclose(got, np.bincount(x, weights=w), rtol=1e-12)
    with pytest.raises(ValueError, match="negative"):
        smemkit.bincount(torch.tensor([1, -1], device="cuda"))
    same(smemkit.bincount(torch.tensor([True, False, True], device="cuda")),
         np.bincount(np.array([True, False, True])))


@needs_torch
def test_torch_layouts():
    x = torch.arange(24, dtype=torch.float32, device="cuda").reshape(4, 6)
    same(smemkit.histogram(x.t(), 6, range=(0, 24))[0], np.histogram(np.arange(24), 6, range=(0, 24))[0])
    with pytest.raises(ValueError, match=r"\.contiguous\(\)"):
        smemkit.histogram(x[:, ::2], 6, range=(0, 24))
    with pytest.raises(ValueError, match=r"\.clone\(\)"):
        smemkit.histogram(x.reshape(-1)[1:], 6, range=(0, 24))
    # Bins from a float16 GPU array's range: numpy's float16 bins (more in test_gpu_half.py).
    h, e = smemkit.histogram(x.half(), 6)
    ref, ref_e = np.histogram(np.arange(24, dtype=np.float16), 6)
    same(h, ref)
    assert e.dtype == torch.float16 and np.array_equal(e.cpu().numpy(), ref_e)
    with pytest.raises(ValueError, match="backend='cpu'"):
        smemkit.histogram(x, backend="cpu")


@needs_torch
def test_torch_side_stream_orders_after_the_producer(rng):
    """Data written on a side stream behind a long sleep: the histogram, enqueued on that stream
    after the write, must see the data (on another stream it would read the zeros)."""
    x = rng.standard_normal(1 << 22).astype(np.float32)
    src = torch.from_numpy(x).cuda()
    dst = torch.zeros_like(src)
    smemkit.histogram(dst, 1000, range=(-4, 4))  # build (compile) outside the timing
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)
        dst.copy_(src)
        h, _ = smemkit.histogram(dst, 1000, range=(-4, 4))
    s.synchronize()
    same(h, np.histogram(x, 1000, range=(-4, 4))[0])


@needs_torch
def test_torch_cuda_graph_capture_and_replay(rng):
    n = 1 << 16
    static = torch.zeros(n, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):  # warm-up: builds the cached histogram before capture
            smemkit.histogram(static, 1000, range=(-4, 4))
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        h, _ = smemkit.histogram(static, 1000, range=(-4, 4))
    for _ in range(3):
        x = rng.standard_normal(n).astype(np.float32)
        static.copy_(torch.from_numpy(x))
        g.replay()
        torch.cuda.synchronize()
        same(h, np.histogram(x, 1000, range=(-4, 4))[0])


@needs_torch
def test_repeated_calls_reuse_the_cached_histogram():
    t = torch.randn(1 << 20, device="cuda")
    smemkit.histogram(t, 777, range=(-4, 4))
    size = smemkit._device_cache_size()
    for _ in range(5):
        smemkit.histogram(t, 777, range=(-4, 4))
    assert smemkit._device_cache_size() == size


# ---- CuPy -----------------------------------------------------------------------------------


@needs_cupy
def test_cupy_in_cupy_out(rng):
    x = normal_with_specials(rng, 1 << 21)
    c = cupy.asarray(x)
    h, e = smemkit.histogram(c, 4096, range=(-4, 4))
    assert isinstance(h, cupy.ndarray) and isinstance(e, cupy.ndarray)
    H, E = np.histogram(x, 4096, range=(-4, 4))
    same(h, H)
    same(e, E)
    xi = rng.integers(0, 5000, 1 << 20).astype(np.uint16)
    same(smemkit.bincount(cupy.asarray(xi)), np.bincount(xi))


@needs_cupy
def test_cupy_non_blocking_stream(rng):
    x = rng.standard_normal(1 << 22).astype(np.float32)
    src = cupy.asarray(x)
    dst = cupy.zeros_like(src)
    smemkit.histogram(dst, 1000, range=(-4, 4))
    cupy.cuda.Device().synchronize()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        dst[...] = src * 1  # a kernel on s
        h, _ = smemkit.histogram(dst, 1000, range=(-4, 4))
    s.synchronize()
    same(h, np.histogram(x, 1000, range=(-4, 4))[0])


class CaiOnly:
    """A producer that speaks only __cuda_array_interface__ (as Numba's device arrays)."""

    def __init__(self, array):
        self._a = array
        self.__cuda_array_interface__ = array.__cuda_array_interface__


@needs_cupy
def test_cuda_array_interface_producer(rng):
    x = rng.standard_normal(1 << 20).astype(np.float64)
    c = cupy.asarray(x)
    h, _ = smemkit.histogram(CaiOnly(c), 500, range=(-4, 4))
    same(h, np.histogram(x, 500, range=(-4, 4))[0])


# ---- JAX ------------------------------------------------------------------------------------


@needs_jax
def test_jax_in_jax_out(rng):
    jax.config.update("jax_enable_x64", True)
    x = normal_with_specials(rng, 1 << 21)
    gpu = [d for d in jax.devices() if d.platform == "gpu"][0]
    j = jax.device_put(x, gpu)
    h, e = smemkit.histogram(j, 1000, range=(-4, 4))
    assert isinstance(h, jax.Array) and isinstance(e, jax.Array)
    H, E = np.histogram(x, 1000, range=(-4, 4))
    same(h, H)
    same(e, E)
    xi = rng.integers(0, 300, 1 << 16).astype(np.int32)
    same(smemkit.bincount(jax.device_put(xi, gpu)), np.bincount(xi))
    w = rng.random(x.size)
    h, _ = smemkit.histogram(j, 1000, range=(-4, 4), weights=jax.device_put(w, gpu))
    np.testing.assert_allclose(host(h), np.histogram(x, 1000, range=(-4, 4), weights=w)[0],
                               rtol=1e-12)

"""The fast path of repeated GPU calls (smemkit._fast) on a real GPU: repeated calls of one key
give numpy's counts and edges bit for bit at every size class, on side streams (ordered after the
producer's work there), inside a CUDA graph, and for CuPy arrays. Skipped without a GPU."""

import numpy as np
import pytest

import smemkit
from smemkit import _fast
from test_gpu_arrays import cupy, needs_cupy, needs_torch, same, torch


@needs_torch
@pytest.mark.parametrize("log2", [0, 10, 13, 20])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_repeated_histogram_is_numpys(rng, log2, dtype):
    x = rng.standard_normal(1 << log2).astype(dtype) * 2
    t = torch.from_numpy(x).cuda()
    H, E = np.histogram(x, 1000, range=(-4, 4))
    for i in range(4):
        h, e = smemkit.histogram(t, 1000, range=(-4, 4))
        same(h, H)
        same(e, E)
        assert h.device == t.device and e.device == t.device
    assert any(k[0] == "torch-hist" for k in _fast._PLANS)


@needs_torch
@pytest.mark.parametrize("log2", [0, 10, 13, 20])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_torch_repeated_half_histogram_is_numpys(rng, log2, dtype):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    np_type = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    x = (rng.standard_normal(1 << log2) * 2).astype(np_type)
    t = torch.from_numpy(x.view(np.int16)).cuda().view(getattr(torch, dtype))
    # bfloat16 over a range of Python floats bins as float64 (ml_dtypes' type does not promote
    # weakly): its reference is float64's.
    ref = x if dtype == "float16" else x.astype(np.float64)
    H, E = np.histogram(ref, 1000, range=(-4.0, 4.0))
    for i in range(4):
        h, e = smemkit.histogram(t, 1000, range=(-4.0, 4.0))
        same(h, H)
        same(e, E)
    assert any(k[0] == "torch-hist" and k[1] == getattr(torch, dtype) for k in _fast._PLANS)


@needs_torch
def test_torch_repeated_bincount_is_numpys(rng):
    for n in (1, 1000, 1 << 20):
        x = rng.integers(-5, 70_000, n).astype(np.int32)
        t = torch.from_numpy(x).cuda()
        want = np.bincount(x[(x >= 0) & (x < 65536)], minlength=65536)
        for _ in range(3):
            same(smemkit.bincount(t, minlength=65536, out_of_range="ignore"), want)
        clamped = np.bincount(np.clip(x, 0, 999), minlength=1000)
        for _ in range(3):
            same(smemkit.bincount(t, minlength=1000, out_of_range="clamp"), clamped)


@needs_torch
def test_torch_fast_path_on_a_side_stream_orders_after_the_producer(rng):
    x = rng.standard_normal(1 << 22).astype(np.float32)
    src = torch.from_numpy(x).cuda()
    dst = torch.zeros_like(src)
    for _ in range(2):  # general path, then fast path, on the default stream
        smemkit.histogram(dst, 999, range=(-4, 4))
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)
        dst.copy_(src)
        h, _ = smemkit.histogram(dst, 999, range=(-4, 4))
    s.synchronize()
    same(h, np.histogram(x, 999, range=(-4, 4))[0])


@needs_torch
def test_torch_fast_path_in_a_cuda_graph(rng):
    n = 1 << 12
    static = torch.zeros(n, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            smemkit.histogram(static, 500, range=(-3, 3))
            smemkit.bincount(static.to(torch.int32), minlength=8, out_of_range="clamp")
    torch.cuda.current_stream().wait_stream(s)
    ints = torch.zeros(n, dtype=torch.int32, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        h, e = smemkit.histogram(static, 500, range=(-3, 3))
        c = smemkit.bincount(ints, minlength=8, out_of_range="clamp")
    for _ in range(3):
        x = rng.standard_normal(n).astype(np.float32)
        static.copy_(torch.from_numpy(x))
        ints.copy_(torch.from_numpy(rng.integers(-2, 12, n).astype(np.int32)))
        g.replay()
        torch.cuda.synchronize()
        H, E = np.histogram(x, 500, range=(-3, 3))
        same(h, H)
        same(e, E)
        same(c, np.bincount(np.clip(ints.cpu().numpy(), 0, 7), minlength=8))


@needs_cupy
def test_cupy_repeated_calls_are_numpys(rng):
    x = rng.standard_normal(1 << 16).astype(np.float32)
    cx = cupy.asarray(x)
    H, E = np.histogram(x, 4096, range=(-4, 4))
    for _ in range(3):
        h, e = smemkit.histogram(cx, 4096, range=(-4, 4))
        assert isinstance(h, cupy.ndarray)
        same(h, H)
        same(e, E)
    xi = cupy.asarray(rng.integers(0, 300, 5000).astype(np.int64))
    for _ in range(3):
        same(smemkit.bincount(xi, minlength=256, out_of_range="ignore"),
             np.bincount(xi.get()[xi.get() < 256], minlength=256))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_torch_repeated_digitize_is_numpys(rng, dtype):
    raw = rng.standard_normal((300, 7)) * 50
    x = (np.abs(raw) if dtype.startswith("u") else raw).astype(dtype)
    t = torch.from_numpy(x).cuda()
    bins = np.geomspace(1e-3, 40, 100)
    for right in (False, True, False):
        for _ in range(3):
            got = smemkit.digitize(t, bins, right)
            assert isinstance(got, torch.Tensor) and got.device == t.device
            same(got, np.digitize(x, bins, right))
    assert any(k[0] == "torch" and k[1] == t.dtype for k in _fast._DIGITIZE_PLANS)
    # The key holds the bins' values: bins changed in place are new bins, not the learned ones.
    bins *= 1.5
    same(smemkit.digitize(t, bins), np.digitize(x, bins))
    # Decreasing bins, a 0-d input and a view at an offset (the general path's error) alike.
    same(smemkit.digitize(t, bins[::-1].copy()), np.digitize(x, bins[::-1]))
    same(smemkit.digitize(t[0, 0], bins), np.asarray(np.digitize(x[0, 0], bins)))
    with pytest.raises(ValueError, match="aligned"):
        smemkit.digitize(t.reshape(-1)[1:], bins)


@needs_cupy
def test_cupy_repeated_digitize_is_numpys(rng):
    x = rng.standard_normal(1 << 14).astype(np.float32)
    cx = cupy.asarray(x)
    bins = np.array([-1.0, 0.0, 0.5, 2.0])
    for _ in range(3):
        got = smemkit.digitize(cx, bins, True)
        assert isinstance(got, cupy.ndarray)
        same(got, np.digitize(x, bins, True))
    assert any(k[0] == "cupy" for k in _fast._DIGITIZE_PLANS)


@needs_torch
def test_torch_general_path_inside_a_capture_does_not_learn(rng):
    """A call the general path serves inside a capture (its histogram already built) must not
    read anything back to learn a fast path: the capture would break."""
    n = 1 << 12
    static = torch.zeros(n, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        smemkit.histogram(static, 321, range=[-2, 2])  # a list: always the general path
    torch.cuda.current_stream().wait_stream(s)
    _fast._PLANS.clear()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        h, _ = smemkit.histogram(static, 321, range=(-2, 2))  # a tuple: would be learned
    assert not any(k[0] == "torch-hist" and k[3] == 321 for k in _fast._PLANS)
    x = rng.standard_normal(n).astype(np.float32)
    static.copy_(torch.from_numpy(x))
    g.replay()
    torch.cuda.synchronize()
    same(h, np.histogram(x, 321, range=(-2, 2))[0])

"""The one-launch small kernel of the fast path (inputs of up to 2^14 samples: every count written
by the kernel, no memset, the edges copied by the kernel): numpy's counts and edges bit for bit
over random inputs of every size around its thresholds, bin counts around its 4096-bin slices,
float32 / float64 / int32 samples with NaN, infinities and samples outside the range, both
policies it takes; outputs that torch's allocator hands back full of old values; side streams and
CUDA graphs. Skipped without a GPU."""

import numpy as np
import pytest

import smemkit
from smemkit import _fast
from test_gpu_arrays import needs_torch, same, torch

# Around the small kernel's limit (2^14) and its 16-byte loads, and beyond it (the usual launches).
SIZES = [0, 1, 2, 3, 4, 15, 16, 17, 255, 1000, 1024, 4095, 4096, 4097, 8191, 16383, 16384, 16385,
         40000, 65536]
SMALL_MAX = 1 << 14


def small_runs():
    return sum(plan[0].small_runs for key, plan in _fast._PLANS.items()
               if key[0] in ("torch-hist", "torch-bincount"))


def samples(rng, n, dtype, lo, hi):
    """n samples of `dtype` spread over [lo, hi] and beyond it, with the edges themselves and, for
    floats, NaN and infinities."""
    span = hi - lo
    if np.dtype(dtype).kind == "f":
        x = rng.uniform(lo - 0.1 * span, hi + 0.1 * span, n).astype(dtype)
        specials = np.array([np.nan, np.inf, -np.inf, lo, hi, np.nextafter(hi, -np.inf)],
                            dtype=dtype)
    else:
        x = rng.integers(lo - 3, hi + 4, n).astype(dtype)
        specials = np.array([lo, hi, lo - 1, hi + 1], dtype=dtype)
    if n:
        at = rng.integers(0, n, min(n, 40))
        x[at] = specials[rng.integers(0, specials.size, at.size)]
    return x


def expected(x, nbins, lo, hi, policy):
    if policy == "clamp":
        keep = x[~np.isnan(x)] if x.dtype.kind == "f" else x
        h, _ = np.histogram(np.clip(keep, lo, hi), nbins, range=(lo, hi))
        return h, np.histogram(x[:0], nbins, range=(lo, hi))[1]
    return np.histogram(x, nbins, range=(lo, hi))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("nbins", [1, 2, 7, 1000, 4095, 4096, 4097, 32768])
def test_small_runs_are_numpys(rng, dtype, nbins):
    before = small_runs()
    if dtype == "int32":
        ranges = [(0, nbins), (-5, 3 * nbins + 1)]
    else:
        # Any range, and one from 0 of a power-of-two width (float32's exact kernels).
        ranges = [(-4.0, 4.0), (0.0, float(nbins))]
    for lo, hi in ranges:
        for policy in ("ignore", "clamp"):
            for n in SIZES:
                x = samples(rng, n, dtype, lo, hi)
                t = torch.from_numpy(x).cuda()
                want_h, want_e = expected(x, nbins, lo, hi, policy)
                for _ in range(3):  # the general path, then the fast path
                    h, e = smemkit.histogram(t, nbins, range=(lo, hi), out_of_range=policy)
                    assert h.dtype == torch.int64 and h.device == t.device
                    same(h, want_h)
                    same(e, want_e)
    assert small_runs() > before


@needs_torch
def test_small_runs_fill_outputs_that_held_other_values(rng):
    """The small kernel writes every count and edge: outputs the caching allocator hands back
    full of a sentinel come back as numpy's."""
    reused = 0
    for nbins in (1, 100, 4096, 5000, 20000):
        x = rng.standard_normal(3000).astype(np.float32)
        t = torch.from_numpy(x).cuda()
        H, E = np.histogram(x, nbins, range=(-3, 3))
        for _ in range(4):
            counts_bait = torch.full((nbins,), -7, dtype=torch.int64, device="cuda")
            edges_bait = torch.full((nbins + 1,), 123.5, dtype=torch.float32, device="cuda")
            ptrs = {counts_bait.data_ptr(), edges_bait.data_ptr()}
            del counts_bait, edges_bait
            h, e = smemkit.histogram(t, nbins, range=(-3, 3))
            reused += h.data_ptr() in ptrs or e.data_ptr() in ptrs
            same(h, H)
            same(e, E)
    # Otherwise the test proved nothing about the clearing.
    assert reused > 0


@needs_torch
def test_small_bincount_is_numpys(rng):
    before = small_runs()
    for minlength in (1, 9, 4096, 4097, 70000):
        for n in (0, 1, 17, 1000, 16384, 16385):
            x = rng.integers(-3, minlength + 5, n).astype(np.int32)
            t = torch.from_numpy(x).cuda()
            ignore = np.bincount(x[(x >= 0) & (x < minlength)], minlength=minlength)
            clamp = np.bincount(np.clip(x, 0, minlength - 1), minlength=minlength)
            for _ in range(3):
                same(smemkit.bincount(t, minlength=minlength, out_of_range="ignore"), ignore)
                same(smemkit.bincount(t, minlength=minlength, out_of_range="clamp"), clamp)
    assert small_runs() > before


@needs_torch
def test_small_runs_on_two_streams(rng):
    """Small runs share no scratch: interleaved on two streams, each is numpy's."""
    xs = [rng.standard_normal(2000).astype(np.float32) for _ in range(2)]
    ts = [torch.from_numpy(x).cuda() for x in xs]
    want = [np.histogram(x, 600, range=(-3, 3))[0] for x in xs]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    torch.cuda.synchronize()
    out = []
    for i in range(40):
        with torch.cuda.stream(streams[i % 2]):
            out.append((i % 2, smemkit.histogram(ts[i % 2], 600, range=(-3, 3))[0]))
    torch.cuda.synchronize()
    for k, h in out:
        same(h, want[k])


@needs_torch
def test_small_run_on_a_side_stream_orders_after_the_producer(rng):
    x = rng.standard_normal(4000).astype(np.float32)
    src = torch.from_numpy(x).cuda()
    dst = torch.zeros_like(src)
    for _ in range(3):
        smemkit.histogram(dst, 300, range=(-4, 4))
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)
        dst.copy_(src)
        h, e = smemkit.histogram(dst, 300, range=(-4, 4))
    s.synchronize()
    H, E = np.histogram(x, 300, range=(-4, 4))
    same(h, H)
    same(e, E)


@needs_torch
@pytest.mark.parametrize("warmups", [1, 3])
def test_small_runs_in_a_cuda_graph(rng, warmups):
    """Captured and replayed. With one warm-up (the general path) the first fast call is the
    captured one: it takes the usual launches there (making the small kernel could load a
    module), and the small kernel after the capture."""
    n, nbins = 1500, 4500 + warmups
    static = torch.zeros(n, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmups):
            smemkit.histogram(static, nbins, range=(-3, 3))
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        h, e = smemkit.histogram(static, nbins, range=(-3, 3))
    for _ in range(3):
        x = rng.standard_normal(n).astype(np.float32)
        static.copy_(torch.from_numpy(x))
        g.replay()
        torch.cuda.synchronize()
        H, E = np.histogram(x, nbins, range=(-3, 3))
        same(h, H)
        same(e, E)
    before = small_runs()
    x = rng.standard_normal(n).astype(np.float32)
    h2, e2 = smemkit.histogram(torch.from_numpy(x).cuda(), nbins, range=(-3, 3))
    same(h2, np.histogram(x, nbins, range=(-3, 3))[0])
    assert small_runs() == before + 1

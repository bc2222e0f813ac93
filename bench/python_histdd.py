"""Peers of issue 24's joint histogram rows, printed as JSON lines in the schema of
`smemkit bench --backend cuda --op histdd` (shared/BENCH.md): cupy.histogram2d and cupy.histogramdd
on device-resident data of the same shapes, timed with CUDA events (median of the timed runs after
warm-up), and torch.histogramdd on the CPU for reference (a subsample: it is slow).

  hist2d  256 x 256 bins over [-4, 4] of 2^log2_n normal float32 (x, y) pairs (two arrays)
  histdd  64 x 64 x 64 bins over [-4, 4] of 2^log2_n normal float32 triples ((N, 3) array)
  histdd  32 x 32 x 32 bins over [0, 256) of an interleaved uint8 RGB image of 2^log2_n pixels,
          and the device copy of its bytes (copy_d2d)

`correct` compares each peer's counts with numpy.histogramdd on the first 2^--check-log2 samples
(numpy on all 2^27 would take minutes): the peer is run once more on that subsample.

Usage: python3 bench/python_histdd.py [--log2-n 27] [--runs 9] [--check-log2 22]
"""
import argparse
import json
import statistics

import numpy as np


def emit(**row):
    print(json.dumps(row), flush=True)


def median_ms(cp, f, runs, warmup=3):
    for _ in range(warmup):
        f()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(runs):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        f()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(times)


def same(counts, want):
    counts = np.asarray(counts)
    return counts.shape == want.shape and bool((counts == want).all())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2-n", type=int, default=27)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--check-log2", type=int, default=22)
    ap.add_argument("--skip-torch", action="store_true")
    a = ap.parse_args()
    import cupy as cp

    n = 1 << a.log2_n
    m = min(n, 1 << a.check_log2)
    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rng = cp.random.default_rng(1234)
    base = dict(n=n, gpu=gpu, dist="normal", dtype="float32", range=[-4.0, 4.0])

    # 2-D: two arrays, as numpy.histogram2d takes them.
    x = rng.standard_normal(n, dtype=cp.float32)
    y = rng.standard_normal(n, dtype=cp.float32)
    r2 = [[-4.0, 4.0], [-4.0, 4.0]]
    ms = median_ms(cp, lambda: cp.histogram2d(x, y, bins=256, range=r2), a.runs)
    got, _, _ = cp.histogram2d(x[:m], y[:m], bins=256, range=r2)
    want, _, _ = np.histogram2d(cp.asnumpy(x[:m]), cp.asnumpy(y[:m]), bins=256, range=r2)
    emit(op="hist2d", impl="cupy.histogram2d", dims=2, nbins=65536, shape=[256, 256], ms=ms,
         gbps=n * 8 / (ms / 1e3) / 1e9, correct=same(cp.asnumpy(got), want), checked=m,
         layout="columns", **base)
    if not a.skip_torch:
        torch_cpu(np.stack([cp.asnumpy(x[:m]), cp.asnumpy(y[:m])], axis=1), 256, r2, want, "hist2d", base, m)
    del x, y

    # 3-D: an (N, 3) array.
    s = rng.standard_normal((n, 3), dtype=cp.float32)
    r3 = [[-4.0, 4.0]] * 3
    ms = median_ms(cp, lambda: cp.histogramdd(s, bins=64, range=r3), a.runs)
    got, _ = cp.histogramdd(s[:m], bins=64, range=r3)
    host = cp.asnumpy(s[:m])
    want, _ = np.histogramdd(host, bins=64, range=r3)
    emit(op="histdd", impl="cupy.histogramdd", dims=3, nbins=262144, shape=[64, 64, 64], ms=ms,
         gbps=n * 12 / (ms / 1e3) / 1e9, correct=same(cp.asnumpy(got), want), checked=m,
         layout="rows", **base)
    if not a.skip_torch:
        torch_cpu(host, 64, r3, want, "histdd", base, m)
    del s

    # RGB: an interleaved uint8 image, and the device copy of its bytes.
    img = rng.integers(0, 256, size=(n, 3), dtype=cp.uint8)
    dst = cp.empty_like(img)
    copy_ms = median_ms(cp, lambda: dst.__setitem__(Ellipsis, img), a.runs)
    emit(op="copy_d2d", impl="cupy.copy", n=3 * n, ms=copy_ms, gbps=2 * 3 * n / (copy_ms / 1e3) / 1e9,
         gbps_read=3 * n / (copy_ms / 1e3) / 1e9, correct=True, gpu=gpu)
    del dst
    rr = [[0.0, 256.0]] * 3
    ms = median_ms(cp, lambda: cp.histogramdd(img, bins=32, range=rr), a.runs)
    got, _ = cp.histogramdd(img[:m], bins=32, range=rr)
    want, _ = np.histogramdd(cp.asnumpy(img[:m]), bins=32, range=rr)
    emit(op="histdd", impl="cupy.histogramdd", dims=3, nbins=32768, shape=[32, 32, 32], n=n, ms=ms,
         gbps=n * 3 / (ms / 1e3) / 1e9, correct=same(cp.asnumpy(got), want), checked=m,
         layout="interleaved", dist="uniform", dtype="uint8", range=[0.0, 256.0], gpu=gpu,
         copy_ms=copy_ms, vs_copy=copy_ms / ms)


def torch_cpu(host, bins, rng, want, op, base, m):
    """torch.histogramdd on the CPU (torch has no GPU histogramdd), on the checked subsample."""
    try:
        import time

        import torch
    except ImportError:
        return
    t = torch.from_numpy(host)
    ranges = [v for r in rng for v in r]
    times = []
    for _ in range(3):
        s = time.perf_counter()
        h = torch.histogramdd(t, bins=[bins] * host.shape[1], range=ranges)
        times.append((time.perf_counter() - s) * 1e3)
    ms = statistics.median(times)
    d = host.shape[1]
    emit(op=op, impl="torch.histogramdd(cpu)", dims=d, nbins=bins ** d, shape=[bins] * d,
         ms=ms, gbps=m * d * 4 / (ms / 1e3) / 1e9, correct=same(h.hist.numpy(), want),
         note=f"CPU, {m} samples (a subsample)", **{**base, "n": m})


if __name__ == "__main__":
    main()

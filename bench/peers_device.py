"""Peers of `smemkit bench --backend cuda --op hist-device`: one histogram call on data already on
the GPU, timed with CUDA events around the whole call (output allocation, memsets and any
synchronisation the peer does, such as torch.bincount reading the maximum back to size its output).
Prints JSON lines in the `hist_device` schema of shared/BENCH.md.

Workloads as ours: 2^10 .. 2^28 samples, 256 / 4096 / 1M bins, drawn on the device: `uniform` in
[0, nbins), `hot` 7 of 8 samples equal to 7 % nbins; float32 samples are the integer plus a uniform
fraction (bins over [0, nbins)). Peers: int32 torch.bincount, cupy.bincount, cupy.histogram;
float32 torch.histc, cupy.histogram. `correct` compares the peer's counts with numpy on a host copy.

Usage: python3 bench/peers_device.py [--sizes 10,14,18,22,26,28] [--bins 256,4096,1048576]
       [--dtypes int32,float32] [--runs 7] [--skip-cupy]
"""
import argparse
import json
import statistics

import numpy as np
import torch


def median_ms(call, runs):
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def draw(n, nbins, hot, dtype, gen):
    bins = torch.randint(0, nbins, (n,), device="cuda", dtype=torch.int64, generator=gen)
    if hot:
        mask = torch.randint(0, 8, (n,), device="cuda", generator=gen) != 0
        bins[mask] = 7 % nbins
    if dtype == "int32":
        return bins.to(torch.int32)
    frac = torch.rand(n, device="cuda", generator=gen)
    x = bins.to(torch.float32) + frac
    # Rounding can reach the next integer: keep each sample inside its bin's value range.
    return torch.where(x < (bins + 1).to(torch.float32), x, bins.to(torch.float32))


def as_counts(result):
    """A peer's result as int64 numpy counts (cupy.histogram returns (counts, edges))."""
    if isinstance(result, tuple):
        result = result[0]
    if hasattr(result, "get"):
        result = result.get()
    elif isinstance(result, torch.Tensor):
        result = result.cpu().numpy()
    return np.asarray(result).astype(np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,14,18,22,26,28")
    ap.add_argument("--bins", default="256,4096,1048576")
    ap.add_argument("--dtypes", default="int32,float32")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--skip-cupy", action="store_true")
    args = ap.parse_args()
    cp = None
    if not args.skip_cupy:
        try:
            import cupy as cp
        except ImportError:
            cp = None
    gpu = torch.cuda.get_device_name()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    for dtype in args.dtypes.split(","):
        for log2 in (int(s) for s in args.sizes.split(",")):
            n = 1 << log2
            for nbins in (int(b) for b in args.bins.split(",")):
                for dist in ("uniform", "hot"):
                    x = draw(n, nbins, dist == "hot", dtype, gen)
                    host = x.cpu().numpy()
                    if dtype == "int32":
                        want = np.bincount(host, minlength=nbins).astype(np.int64)
                    else:
                        want = np.histogram(host, bins=nbins, range=(0, nbins))[0].astype(np.int64)
                    calls = []
                    if dtype == "int32":
                        calls.append(("torch.bincount", lambda: torch.bincount(x, minlength=nbins)))
                    else:
                        calls.append(("torch.histc", lambda: torch.histc(x, bins=nbins, min=0, max=nbins)))
                    if cp is not None:
                        xc = cp.from_dlpack(x)
                        if dtype == "int32":
                            calls.append(("cupy.bincount", lambda: cp.bincount(xc, minlength=nbins)))
                        calls.append(("cupy.histogram", lambda: cp.histogram(xc, bins=nbins, range=(0, nbins))))
                    for name, call in calls:
                        try:
                            correct = bool(np.array_equal(as_counts(call()), want))
                            ms = median_ms(call, args.runs)
                        except Exception as e:  # a peer that fails (memory, size) is reported, not fatal
                            print(json.dumps({"op": "hist_device", "impl": name, "dtype": dtype, "dist": dist,
                                              "nbins": nbins, "n": n, "error": str(e)[:200]}), flush=True)
                            continue
                        print(json.dumps({"op": "hist_device", "impl": name, "dtype": dtype, "dist": dist,
                                          "nbins": nbins, "n": n, "ms": ms,
                                          "gbps": n * 4 / ms / 1e6, "correct": correct, "gpu": gpu}), flush=True)
                    del x
                    if cp is not None:
                        del xc
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

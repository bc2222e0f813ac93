#!/usr/bin/env python3
"""numpy baseline for the CPU histogram engine (issue 2, "Done when").

Measures `numpy.bincount` (int32 samples, integer bins) and `numpy.histogram` (float32 samples,
`nbins` uniform bins over [0, nbins)) on the standard workloads of ../shared/BENCH.md, at n = 2^27 by
default, and prints one JSON line per (impl, workload): the median of `--runs` timed runs (after one
warm-up), GB/s = n * itemsize / s / 1e9.

    python3 bench/numpy/numpy_baseline.py [--log2n 27] [--bins 256,4096,...] [--runs 5]
"""
import argparse
import json
import platform
import statistics
import time

import numpy as np

STANDARD_BINS = [256, 4096, 32768, 131072, 1048576, 16777216]


def make_int32(dist, n, nbins, rng):
    x = rng.integers(0, nbins, size=n, dtype=np.int32)
    if dist == "hot":
        hot = rng.random(n) < 7 / 8
        x[hot] = 7 % nbins
    return x


def make_f32(dist, n, nbins, rng):
    x = (rng.random(n, dtype=np.float32) * np.float32(nbins)).astype(np.float32)
    # rounding can produce nbins exactly; keep samples in [0, nbins)
    x[x >= nbins] = 0
    if dist == "hot":
        hot = rng.random(n) < 7 / 8
        x[hot] = np.float32(7 % nbins)
    return x


def timed(fn, runs):
    t = time.perf_counter()
    fn()  # warm-up
    warm = time.perf_counter() - t
    times = []
    if warm > 10:
        # very slow cases (numpy.histogram at 16M bins takes minutes): the warm-up counts as a run
        # and one more run is timed
        times.append(warm)
        runs = 1
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--bins", default=",".join(map(str, STANDARD_BINS)))
    ap.add_argument("--dists", default="uniform,hot")
    ap.add_argument("--ops", default="bincount,histogram")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    n = 1 << args.log2n
    rng = np.random.default_rng(args.seed)
    for op in args.ops.split(","):
        for dist in args.dists.split(","):
            for nbins in map(int, args.bins.split(",")):
                if op == "bincount":
                    x = make_int32(dist, n, nbins, rng)
                    fn = lambda: np.bincount(x, minlength=nbins)
                    impl, dtype = "numpy.bincount", "int32"
                else:
                    x = make_f32(dist, n, nbins, rng)
                    fn = lambda: np.histogram(x, bins=nbins, range=(0, nbins))
                    impl, dtype = "numpy.histogram", "float32"
                med, times = timed(fn, args.runs)
                print(json.dumps({
                    "impl": impl, "op": "hist", "ms": med * 1e3,
                    "gbps": n * x.itemsize / med / 1e9, "correct": False,
                    "dist": dist, "nbins": nbins, "n": n, "dtype": dtype,
                    "runs_ms": [round(t * 1e3, 2) for t in times],
                    "numpy": np.__version__, "cpu": platform.processor() or platform.machine(),
                }), flush=True)
                del x


if __name__ == "__main__":
    main()

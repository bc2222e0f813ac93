"""smemkit's Python API on GPU arrays beside the Python peers, in one process: `py_hist` rows of
shared/BENCH.md. Each row is one call on data already on the GPU, timed with CUDA events around the
whole call as a user makes it (output allocation, memsets, any synchronisation the call does), warm
(3 calls first), the median of --runs calls.

Workloads (issue 22): float32 normal samples (torch.randn) with bins over [-4, 4]: smemkit.histogram
(range given: no synchronisation), torch.histc, cupy.histogram on the same memory (cupy.from_dlpack);
int32 uniform in [0, nbins): smemkit.bincount (minlength=nbins, out_of_range='ignore': no
synchronisation), torch.bincount and cupy.bincount (minlength=nbins; both read the maximum back).
`correct` is true only when the counts equal numpy's on a host copy, bit for bit (torch.histc's
float counts are compared as integers).

Usage: python3 bench/python_device.py [--sizes 10,14,18,22,26,28] [--bins 1000,32768,100000,4194304]
       [--dtypes float32,int32] [--runs 7] [--skip-cupy]
The first smemkit call of each (bins, size class) compiles or loads kernels; the warm-up absorbs it.
"""
import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np
import torch

import smemkit


def timed(call, runs):
    """Median of `runs` event-timed calls (ms) after 3 warm-up calls, and the median host time
    of one call (us), and the last result."""
    for _ in range(3):
        out = call()
    torch.cuda.synchronize()
    times, walls = [], []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        out = call()
        walls.append((time.perf_counter() - t0) * 1e6)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), statistics.median(walls), out


def counts_of(result):
    if isinstance(result, tuple):
        result = result[0]
    if hasattr(result, "get"):
        result = result.get()
    elif isinstance(result, torch.Tensor):
        result = result.cpu().numpy()
    return np.asarray(result)


def exact(result, want):
    got = counts_of(result)
    if got.shape != want.shape:
        return False
    if got.dtype.kind == "f":
        if not np.all(got == np.round(got)):
            return False
        got = got.astype(np.int64)
    return bool(np.array_equal(got, want))


def commit():
    if os.environ.get("SMEMKIT_COMMIT"):
        return os.environ["SMEMKIT_COMMIT"]
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True,
                               check=True).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except Exception:
        return "unknown"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10,14,18,22,26,28", help="log2 of the sample counts")
    p.add_argument("--bins", default="1000,32768,100000,4194304")
    p.add_argument("--dtypes", default="float32,int32")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--skip-cupy", action="store_true")
    args = p.parse_args()
    cupy = None
    if not args.skip_cupy:
        try:
            import cupy
        except ImportError:
            pass
    gpu = torch.cuda.get_device_name()
    rev = commit()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(20261124)
    for dtype in args.dtypes.split(","):
        for log2 in (int(s) for s in args.sizes.split(",")):
            n = 1 << log2
            if dtype == "float32":
                x = torch.randn(n, device="cuda", generator=gen)
            else:
                x = None
            for nbins in (int(b) for b in args.bins.split(",")):
                rows = []
                if dtype == "float32":
                    host = x.cpu().numpy()
                    want = np.histogram(host, nbins, range=(-4, 4))[0]
                    calls = [("smemkit.histogram",
                              lambda: smemkit.histogram(x, nbins, range=(-4, 4)))]
                    calls.append(("torch.histc", lambda: torch.histc(x, nbins, -4, 4)))
                    if cupy is not None:
                        cx = cupy.from_dlpack(x)
                        calls.append(("cupy.histogram",
                                      lambda: cupy.histogram(cx, nbins, range=(-4, 4))))
                    extra = {"dist": "normal", "range": [-4, 4]}
                else:
                    xi = torch.randint(0, nbins, (n,), device="cuda", dtype=torch.int32,
                                       generator=gen)
                    host = xi.cpu().numpy()
                    want = np.bincount(host, minlength=nbins)
                    calls = [("smemkit.bincount",
                              lambda: smemkit.bincount(xi, minlength=nbins, out_of_range="ignore"))]
                    calls.append(("torch.bincount", lambda: torch.bincount(xi, minlength=nbins)))
                    if cupy is not None:
                        cxi = cupy.from_dlpack(xi)
                        calls.append(("cupy.bincount",
                                      lambda: cupy.bincount(cxi, minlength=nbins)))
                    extra = {"dist": "uniform"}
                for name, call in calls:
                    try:
                        ms, wall_us, out = timed(call, args.runs)
                        ok = exact(out, want)
                        row = {"op": "py_hist", "impl": name, "n": n, "nbins": nbins,
                               "dtype": dtype, **extra, "ms": round(ms, 5),
                               "gbps": round(n * 4 / (ms * 1e-3) / 1e9, 2),
                               "host_us": round(wall_us, 2), "correct": ok}
                    except Exception as e:  # a peer that cannot run this size says why
                        row = {"op": "py_hist", "impl": name, "n": n, "nbins": nbins,
                               "dtype": dtype, **extra, "error": f"{type(e).__name__}: {e}"}
                    row.update({"gpu": gpu, "commit": rev})
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                if dtype == "int32":
                    del xi
            x = None
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

"""The cost of one call from Python at a size where the call is all there is (2^10 samples by
default): smemkit.histogram / smemkit.bincount on GPU arrays beside torch.histc, torch.bincount
and cupy.histogram / cupy.bincount on the same data, and the CPU engines on numpy arrays beside
numpy. `py_call` rows (JSON lines; shared/BENCH.md's keys): per call, `wall_us` = host time of a
loop of --calls calls divided by the calls (the GPU works behind), `ms` = CUDA events around the
same loop divided by the calls (the GPU's time per call, which at this size is the host's rate
of enqueueing), `host_us_median` = the median of single timed calls; warm-up first.

Usage: python3 bench/python_call_cost.py [--log2 10] [--calls 10000] [--bins 1000,32768]
       [--skip-cupy] [--skip-gpu] [--skip-cpu] [--alloc]
--alloc adds `py_alloc` rows: the host cost of the ways the fast path could allocate a torch
result (two torch.empty calls, as now; one torch.empty with the counts and the float32 edges as
views of it; one torch.empty alone), each result dropped as a caller drops it.
With SMEMKIT_PY_TRACE=1 in the environment, smemkit prints the median time of each phase of its
calls at exit (stderr).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import smemkit


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


def host_loop(call, calls):
    """(us per call of a loop of `calls`, median us of single calls)."""
    for _ in range(min(200, calls)):
        call()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    per = (time.perf_counter() - t0) / calls * 1e6
    singles = []
    for _ in range(min(2000, calls)):
        t = time.perf_counter()
        call()
        singles.append((time.perf_counter() - t) * 1e6)
    return per, statistics.median(singles)


def gpu_loop(torch, call, calls):
    """(us of host time per call, ms of GPU time per call by CUDA events, median us of single
    calls): the loop is enqueued between two events; the GPU queue is drained first."""
    for _ in range(min(200, calls)):
        call()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    wall = (time.perf_counter() - t0) / calls * 1e6
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end) / calls
    singles = []
    for _ in range(min(2000, calls)):
        t = time.perf_counter()
        call()
        singles.append((time.perf_counter() - t) * 1e6)
    torch.cuda.synchronize()
    return wall, ms, statistics.median(singles)


def alloc_cases(torch, nbins):
    """(name, call) of each way of allocating a histogram's torch result (see --alloc)."""
    dev = torch.device("cuda", torch.cuda.current_device())
    empty, i64, f32 = torch.empty, torch.int64, torch.float32
    nedges = nbins + 1
    words = nbins + (nedges + 1) // 2

    def two():
        return empty(nbins, dtype=i64, device=dev), empty(nedges, dtype=f32, device=dev)

    def views():
        buf = empty(words, dtype=i64, device=dev)
        return (buf.narrow(0, 0, nbins),
                buf.narrow(0, nbins, words - nbins).view(f32).narrow(0, 0, nedges))

    def one():
        return empty(nbins, dtype=i64, device=dev)

    return [("two torch.empty", two), ("one torch.empty + views", views),
            ("one torch.empty", one)]


def emit(row, rev, gpu):
    row.update({"gpu": gpu, "commit": rev})
    print(json.dumps(row), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2", type=int, default=10)
    p.add_argument("--calls", type=int, default=10000)
    p.add_argument("--bins", default="1000,32768")
    p.add_argument("--skip-cupy", action="store_true")
    p.add_argument("--skip-gpu", action="store_true")
    p.add_argument("--skip-cpu", action="store_true")
    p.add_argument("--alloc", action="store_true")
    args = p.parse_args()
    n = 1 << args.log2
    rev = commit()
    bins_list = [int(b) for b in args.bins.split(",")]
    rng = np.random.default_rng(20261124)
    xf = rng.standard_normal(n).astype(np.float32)
    gpu = "none"
    torch = cupy = None
    if not args.skip_gpu:
        try:
            import torch
            if not torch.cuda.is_available():
                torch = None
            else:
                gpu = torch.cuda.get_device_name()
        except ImportError:
            torch = None
        if torch is not None and not args.skip_cupy:
            try:
                import cupy
            except ImportError:
                cupy = None
    for nbins in bins_list:
        xi = rng.integers(0, nbins, n, dtype=np.int32)
        cases = []
        if not args.skip_cpu:
            cases += [
                ("cpu", "smemkit.histogram", "float32",
                 lambda: smemkit.histogram(xf, nbins, range=(-4, 4)), None),
                ("cpu", "numpy.histogram", "float32",
                 lambda: np.histogram(xf, nbins, range=(-4, 4)), None),
                ("cpu", "smemkit.bincount", "int32",
                 lambda: smemkit.bincount(xi, minlength=nbins, out_of_range="ignore"), None),
                ("cpu", "numpy.bincount", "int32",
                 lambda: np.bincount(xi, minlength=nbins), None),
            ]
        if torch is not None:
            tf = torch.from_numpy(xf).cuda()
            ti = torch.from_numpy(xi).cuda()
            cases += [
                ("cuda", "smemkit.histogram", "float32",
                 lambda: smemkit.histogram(tf, nbins, range=(-4, 4)), None),
                ("cuda", "torch.histc", "float32", lambda: torch.histc(tf, nbins, -4, 4), None),
                ("cuda", "smemkit.bincount", "int32",
                 lambda: smemkit.bincount(ti, minlength=nbins, out_of_range="ignore"), None),
                ("cuda", "torch.bincount", "int32",
                 lambda: torch.bincount(ti, minlength=nbins), None),
            ]
            if cupy is not None:
                cf = cupy.asarray(xf)
                ci = cupy.asarray(xi)
                cases += [
                    ("cuda", "smemkit.histogram[cupy]", "float32",
                     lambda: smemkit.histogram(cf, nbins, range=(-4, 4)), None),
                    ("cuda", "cupy.histogram", "float32",
                     lambda: cupy.histogram(cf, nbins, range=(-4, 4)), None),
                    ("cuda", "smemkit.bincount[cupy]", "int32",
                     lambda: smemkit.bincount(ci, minlength=nbins, out_of_range="ignore"), None),
                    ("cuda", "cupy.bincount", "int32",
                     lambda: cupy.bincount(ci, minlength=nbins), None),
                ]
        for where, name, dtype, call, _ in cases:
            row = {"op": "py_call", "impl": name, "backend": where, "n": n, "nbins": nbins,
                   "dtype": dtype, "calls": args.calls}
            try:
                if where == "cuda":
                    wall, ms, single = gpu_loop(torch, call, args.calls)
                    row.update({"wall_us": round(wall, 2), "ms": round(ms, 5),
                                "host_us_median": round(single, 2)})
                else:
                    wall, single = host_loop(call, args.calls)
                    row.update({"wall_us": round(wall, 2), "host_us_median": round(single, 2)})
            except Exception as e:  # a peer that cannot run says why
                row["error"] = f"{type(e).__name__}: {e}"
            emit(row, rev, gpu)
    if args.alloc and torch is not None:
        for nbins in bins_list:
            for name, call in alloc_cases(torch, nbins):
                row = {"op": "py_alloc", "impl": name, "backend": "cuda", "nbins": nbins,
                       "calls": args.calls}
                wall, ms, single = gpu_loop(torch, call, args.calls)
                row.update({"wall_us": round(wall, 2), "ms": round(ms, 5),
                            "host_us_median": round(single, 2)})
                emit(row, rev, gpu)
    if os.environ.get("SMEMKIT_PY_TRACE") == "1":
        print(json.dumps({"op": "py_trace", "summary": smemkit.trace_summary()}), file=sys.stderr)


if __name__ == "__main__":
    main()

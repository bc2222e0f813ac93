"""The realistic float workloads of issue 23 from Python, smemkit beside its peers in one process:
`hist` rows of shared/BENCH.md with `dist` = normal | edges | weighted | bf16 | f16.

- normal: float32 and float64 normal samples, bins over [-4, 4] (numpy's correction matters) at
  1000, 32768, 100000, 131072, 262144, 500000 and 1048576 bins: smemkit.histogram, torch.histc,
  cupy.histogram.
- uniform (only when asked): the normal rows' bins over float32 / float64 uniform samples of
  [-4.5, 4.5], the data that spread a strategy's work over every bin.
- edges: |normal| float32 samples, 1000 log-spaced edges (numpy.geomspace(1e-3, 4, 1000), 999
  bins): smemkit.histogram, cupy.histogram, cupy.digitize + cupy.bincount, torch.bucketize +
  torch.bincount.
- weighted: float32 normal samples, float32 weights in [0, 1), 1000 and 32768 bins over [-4, 4]:
  smemkit.histogram, torch.bincount with weights (bin numbers computed first, in the timing),
  cupy.histogram with weights.
- digitize: |normal| float32 samples against the same 1000 log-spaced edges: `digitize` rows
  (`dist` = `edges`) of smemkit.digitize and cupy.digitize alone (issue 23's 10x target), checked
  against numpy.digitize.
- estimators: float32 normal samples, no range: `hist` rows (`dist` = `normal`, `bins` = the
  rule) of smemkit.histogram(x, rule) for each rule the GPU takes, beside smemkit.histogram(x, N)
  with N the rule's count over the data's range (`bins` = `N`: the plain histogram, itself a
  min/max pass and a synchronisation), smemkit.histogram(x, N, density=True), and
  torch.aminmax (`impl` = `one_pass`: the cost of reading the samples once). Issue 23's target:
  an estimator's row minus the plain row is no more than the extra passes its statistics need
  (sqrt/sturges/rice none beyond min/max; scott 1, the squared deviations, its sum of the
  samples coming with min/max; doane 2, the cubes needing the standard deviation first; fd/auto
  2 more radix-select passes after a first that also finds min/max).
- half-estimators: the same normal samples rounded to float16 / bfloat16, over [-4, 4] (without
  a range numpy's 16-bit edges over the data repeat at these bin counts and it refuses them):
  smemkit.histogram(x, rule, range=...) beside smemkit.histogram(x, N, range=...) and
  torch.aminmax (`one_pass`); rows carry `range` and `scale` (scott and doane take samples of
  standard deviation 0.01 over [-0.04, 0.04]: numpy's float16 sums of unit samples overflow). numpy's reference is numpy on the host copy
  (ml_dtypes' bfloat16), one run each: the slow part (about 20-40 s a rule at 2^28).
- bf16, f16: normal samples rounded to bfloat16 / float16, 256, 1000 and 4096 bins over [-4, 4]:
  smemkit.histogram, torch.histc, cupy.histogram (f16), and `copy_d2d` (a device copy of the same
  bytes: the bar of issue 23's target).
A call that fails (a peer without the dtype, smemkit's NotImplementedError) gives a row with
`error` instead of `ms`.

Timing: CUDA events around each call as a user makes it (allocation, memsets, any
synchronisation it does), 2 warm-up calls, the median of --runs. `correct` is true only when the
counts equal numpy's on the same data bit for bit (float counts compared as integers; weighted
sums compared exactly, with `max_rel_err` beside). bf16 has no numpy dtype: its reference is
numpy on the float32 values (exact), noted as `reference`.

Data: one set of 2^26 samples per workload (--base-log2) drawn on the device; a size up to it is a
prefix, a larger one the set repeated (noted as `repeats`), so that numpy's reference is the sum
of the counts of fixed chunks, computed once per bins (numpy on the host is the slow part); the
weighted rows' reference is numpy's float32 sums of each 65536-sample block added in block order,
which is numpy's own result on the whole input bit for bit.

Usage: python3 bench/python_realistic.py [--sizes 22,24,26,28]
       [--dists normal,edges,weighted,bf16,f16,digitize,estimators,half-estimators]
       [--estimator-sizes 28] [--half-estimator-rules sturges,fd,scott]
       [--runs 7] [--skip-cupy] [--budget-s 420]
Expected on an H100 with the defaults: about 3 to 5 minutes, most of it numpy's references; past
--budget-s it stops starting new workloads and says so in a final `note` row.
"""
import argparse
import json
import os
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

import smemkit

RANGE = (-4.0, 4.0)


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


def timed(call, runs):
    """Median ms of `runs` event-timed calls after 2 warm-up calls, and the last result."""
    out = None
    for _ in range(2):
        out = call()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        out = call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), out


def to_host(result):
    if isinstance(result, tuple):
        result = result[0]
    if isinstance(result, torch.Tensor):
        return result.cpu().numpy()
    if hasattr(result, "get"):
        return result.get()
    return np.asarray(result)


def compare(result, want, weighted):
    """(correct, extra fields)."""
    got = to_host(result)
    if got.shape != want.shape:
        return False, {"got_shape": list(got.shape)}
    if weighted:
        g, w = got.astype(np.float64), want.astype(np.float64)
        err = float(np.max(np.abs(g - w) / np.maximum(np.abs(w), 1e-300))) if w.size else 0.0
        return bool(np.array_equal(got.astype(want.dtype), want)), {"max_rel_err": err}
    if got.dtype.kind == "f":
        if not np.all(got == np.round(got)):
            return False, {}
        got = got.astype(np.int64)
    return bool(np.array_equal(got, want)), {}


class Reference:
    """numpy's counts of prefixes and repeats of one host array, from counts of fixed chunks."""

    def __init__(self, host, chunk, hist):
        self.host, self.chunk, self.hist = host, chunk, hist
        self.parts = {}

    def counts(self, key, n):
        if key not in self.parts:
            chunks = [self.host[i:i + self.chunk] for i in range(0, len(self.host), self.chunk)]
            with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1)) as pool:
                self.parts[key] = list(pool.map(lambda c: self.hist(c, key), chunks))
        parts = self.parts[key]
        total = len(self.host)
        if n <= total:
            return sum(parts[: n // self.chunk])
        return sum(parts) * (n // total)


class NumpyBlockReference:
    """numpy's weighted histogram of prefixes and repeats of one host array of (sample, weight)
    pairs, bit for bit: numpy sums the weights of each block of 65536 samples in float64, casts the
    block's sums to the weights' type and adds them in it, block after block, so the total is the
    blocks' histograms (np.histogram of one block is that block's cast sums) added in order."""

    BLOCK = 65536

    def __init__(self, pairs, hist):
        self.pairs, self.hist = pairs, hist
        self.parts = {}

    def counts(self, key, n):
        if key not in self.parts:
            blocks = [self.pairs[i:i + self.BLOCK] for i in range(0, len(self.pairs), self.BLOCK)]
            with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1)) as pool:
                self.parts[key] = list(pool.map(lambda c: self.hist(c, key), blocks))
        parts = self.parts[key]
        total = np.zeros_like(parts[0])
        for b in range(n // self.BLOCK):
            total += parts[b % len(parts)]
        return total


def device_data(base, n):
    """`n` samples: a prefix of `base`, or `base` repeated."""
    if n <= base.numel():
        return base[:n], 1
    return base.repeat(n // base.numel()), n // base.numel()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="22,24,26,28", help="log2 of the sample counts")
    p.add_argument("--dists",
                   default="normal,edges,weighted,bf16,f16,digitize,estimators,half-estimators")
    p.add_argument("--estimator-sizes", default="28",
                   help="log2 of the sample counts of the estimators' rows (numpy's references "
                        "of 2^28 samples take about a minute)")
    p.add_argument("--normal-bins", default="1000,32768,100000,131072,262144,500000,1048576",
                   help="bin counts of the normal rows")
    p.add_argument("--normal-dtypes", default="float32,float64")
    p.add_argument("--strategies", default="",
                   help="forced strategies timed beside auto in the normal rows (impl "
                        "smemkit.histogram/<strategy>), e.g. sliced8x4")
    p.add_argument("--estimator-rules", default=",".join(GPU_RULES),
                   help="the estimators timed (stone histograms the data max(100, sqrt(n)) "
                        "times: give it small --estimator-sizes)")
    p.add_argument("--half-estimator-rules", default="sturges,fd,scott",
                   help="the estimators timed on float16 / bfloat16 samples (at the first of "
                        "--estimator-sizes)")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--base-log2", type=int, default=26)
    p.add_argument("--skip-cupy", action="store_true")
    p.add_argument("--budget-s", type=float, default=420)
    args = p.parse_args()
    began = time.monotonic()
    cupy = None
    if not args.skip_cupy:
        try:
            import cupy
        except ImportError:
            cupy = None
    gpu = torch.cuda.get_device_name()
    rev = commit()
    sizes = sorted(1 << int(s) for s in args.sizes.split(","))
    base_n = 1 << args.base_log2
    chunk = min(sizes[0], base_n)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(20261124)
    normal32 = torch.randn(base_n, device="cuda", generator=gen)

    def emit(row):
        row.update({"gpu": gpu, "commit": rev})
        print(json.dumps(row), flush=True)

    def run_cases(dist, dtype, base, ref, ref_key, nbins, cases, extra, weighted=False):
        for n in sizes:
            x_n, repeats = device_data(base, n)
            want = None
            for name, make in cases:
                row = {"op": "hist", "impl": name, "dist": dist, "dtype": dtype, "n": n,
                       "nbins": nbins, **extra}
                if repeats > 1:
                    row["repeats"] = repeats
                try:
                    call = make(x_n, n)
                    ms, out = timed(call, args.runs)
                    row["ms"] = round(ms, 5)
                    if name == "copy_d2d":
                        row["gbps"] = round(2 * n * base.element_size() / (ms * 1e-3) / 1e9, 2)
                        row["correct"] = bool(torch.equal(out, x_n))
                    else:
                        row["gbps"] = round(n * base.element_size() / (ms * 1e-3) / 1e9, 2)
                        if want is None:
                            want = ref.counts(ref_key, n)
                        ok, more = compare(out, want, weighted)
                        row["correct"] = ok
                        row.update(more)
                    del out
                except Exception as e:  # a call that cannot run says why
                    row["error"] = f"{type(e).__name__}: {e}"[:300]
                emit(row)
            del x_n
            torch.cuda.empty_cache()

    def over_budget(what):
        if time.monotonic() - began > args.budget_s:
            emit({"op": "note", "skipped": what,
                  "reason": f"past --budget-s {args.budget_s} s"})
            return True
        return False

    dists = args.dists.split(",")
    # `uniform`: the normal rows' bins over uniform samples of [-4.5, 4.5] (a share beyond the
    # range): the data that spread a strategy's work over every bin.
    shapes = [d for d in ("normal", "uniform") if d in dists]
    for shape, dtype in ((s, d) for s in shapes for d in args.normal_dtypes.split(",")):
        drawn = normal32 if shape == "normal" else (
            torch.rand(base_n, device="cuda", generator=gen) * 9 - 4.5)
        base = drawn if dtype == "float32" else drawn.double()
        host = base.cpu().numpy()
        ref = Reference(host, chunk, lambda c, nb: np.histogram(c, nb, range=RANGE)[0])
        cx = cupy.from_dlpack(base) if cupy is not None else None
        for nbins in (int(b) for b in args.normal_bins.split(",")):
            if over_budget(f"{shape} {dtype} {nbins}"):
                continue
            cases = [
                ("smemkit.histogram", lambda x, n, nb=nbins: (
                    lambda: smemkit.histogram(x, nb, range=RANGE))),
            ] + [
                (f"smemkit.histogram/{s}", lambda x, n, nb=nbins, s=s: (
                    lambda: smemkit.histogram(x, nb, range=RANGE, strategy=s)))
                for s in args.strategies.split(",") if s
            ] + [
                ("torch.histc", lambda x, n, nb=nbins: (
                    lambda: torch.histc(x, nb, RANGE[0], RANGE[1]))),
            ]
            if cx is not None:
                cases.append(("cupy.histogram", lambda x, n, nb=nbins: (
                    lambda c=cupy.from_dlpack(x): cupy.histogram(c, nb, range=RANGE))))
            run_cases(shape, dtype, base, ref, nbins, nbins, cases,
                      {"range": list(RANGE)})
        del base, cx, drawn
    if "edges" in dists and not over_budget("edges"):
        edges = np.geomspace(1e-3, 4, 1000)
        base = normal32.abs()
        host = base.cpu().numpy()
        ref = Reference(host, chunk, lambda c, e: np.histogram(c, edges)[0])
        t_edges = torch.from_numpy(edges).cuda()
        t_edges32 = t_edges.float()

        def bucketize(x, n):
            return lambda: torch.bincount(torch.bucketize(x, t_edges32, right=True),
                                          minlength=1001)[1:1000]

        cases = [
            ("smemkit.histogram", lambda x, n: (lambda: smemkit.histogram(x, edges))),
            ("torch.bucketize+bincount", bucketize),
        ]
        if cupy is not None:
            c_edges = cupy.asarray(edges)
            c_edges32 = c_edges.astype(cupy.float32)
            cases += [
                ("cupy.histogram", lambda x, n: (
                    lambda c=cupy.from_dlpack(x): cupy.histogram(c, c_edges))),
                ("cupy.digitize+bincount", lambda x, n: (
                    lambda c=cupy.from_dlpack(x): cupy.bincount(
                        cupy.digitize(c, c_edges32), minlength=1001)[1:1000])),
            ]
        run_cases("edges", "float32", base, ref, "edges", 999, cases,
                  {"edges": "geomspace(1e-3, 4, 1000)"})
        del base
    if "weighted" in dists:
        w_base = torch.rand(base_n, device="cuda", generator=gen)
        host_x = normal32.cpu().numpy()
        host_w = w_base.cpu().numpy()
        # Samples and weights as one array, so that prefixes and repeats pair them as on the GPU.
        pairs = np.stack([host_x, host_w], axis=1)
        ref = NumpyBlockReference(pairs, lambda c, nb: np.histogram(
            c[:, 0], nb, range=RANGE, weights=c[:, 1])[0])
        for nbins in (1000, 32768):
            if over_budget(f"weighted {nbins}"):
                continue

            def peer_bincount(x, n, nb=nbins):
                w, _ = device_data(w_base, n)
                scale = nb / (RANGE[1] - RANGE[0])

                def call():
                    i = ((x - RANGE[0]) * scale).long()
                    inside = (x >= RANGE[0]) & (x <= RANGE[1])
                    return torch.bincount(i.clamp_(0, nb - 1), weights=torch.where(inside, w, 0),
                                          minlength=nb)
                return call

            def ours(x, n, nb=nbins):
                w, _ = device_data(w_base, n)
                return lambda: smemkit.histogram(x, nb, range=RANGE, weights=w)

            cases = [("smemkit.histogram", ours), ("torch.bincount", peer_bincount)]
            if cupy is not None:
                def cupy_w(x, n, nb=nbins):
                    w, _ = device_data(w_base, n)
                    cxx, cw = cupy.from_dlpack(x), cupy.from_dlpack(w)
                    return lambda: cupy.histogram(cxx, nb, range=RANGE, weights=cw)
                cases.append(("cupy.histogram", cupy_w))
            run_cases("weighted", "float32", normal32, ref, nbins, nbins, cases,
                      {"range": list(RANGE), "weights": "float32"}, weighted=True)
        del w_base
    for dist, tdtype in (("bf16", torch.bfloat16), ("f16", torch.float16)):
        if dist not in dists:
            continue
        base = normal32.to(tdtype)
        if dist == "f16":
            host = base.cpu().numpy()
            ref = Reference(host, chunk, lambda c, nb: np.histogram(c, nb, range=RANGE)[0])
            extra = {"range": list(RANGE)}
        else:
            host = base.float().cpu().numpy()
            ref = Reference(host, chunk, lambda c, nb: np.histogram(c, nb, range=RANGE)[0])
            extra = {"range": list(RANGE), "reference": "numpy on the float32 values"}
        for nbins in (256, 1000, 4096):
            if over_budget(f"{dist} {nbins}"):
                continue
            cases = [
                ("smemkit.histogram", lambda x, n, nb=nbins: (
                    lambda: smemkit.histogram(x, nb, range=RANGE))),
                ("torch.histc", lambda x, n, nb=nbins: (
                    lambda: torch.histc(x, nb, RANGE[0], RANGE[1]))),
                ("copy_d2d", lambda x, n: (lambda: x.clone())),
            ]
            if cupy is not None:
                cases.append(("cupy.histogram", lambda x, n, nb=nbins: (
                    lambda c=cupy.from_dlpack(x): cupy.histogram(c, nb, range=RANGE))))
            run_cases(dist, str(tdtype).removeprefix("torch."), base, ref, nbins, nbins, cases,
                      extra)
        del base
    if "digitize" in dists and not over_budget("digitize"):
        bench_digitize(args, sizes, normal32.abs(), cupy, emit)
    if "estimators" in dists and not over_budget("estimators"):
        est_sizes = sorted(1 << int(s) for s in args.estimator_sizes.split(","))
        bench_estimators(args, est_sizes, normal32, emit, over_budget)
    if "half-estimators" in dists and not over_budget("half-estimators"):
        n = 1 << int(args.estimator_sizes.split(",")[0])
        bench_half_estimators(args, n, normal32, emit, over_budget)
    emit({"op": "note", "elapsed_s": round(time.monotonic() - began, 1)})


def bench_digitize(args, sizes, base, cupy, emit):
    """`digitize` rows: smemkit.digitize and cupy.digitize of float32 samples, 1000 edges."""
    edges = np.geomspace(1e-3, 4, 1000)
    host = base.cpu().numpy()
    want = np.digitize(host, edges)
    t_edges = torch.from_numpy(edges).cuda()
    cases = [("smemkit.digitize", lambda x: (lambda: smemkit.digitize(x, edges)))]
    if cupy is not None:
        c_edges = cupy.asarray(edges)
        cases.append(("cupy.digitize", lambda x: (
            lambda c=cupy.from_dlpack(x): cupy.digitize(c, c_edges))))
    cases.append(("torch.bucketize", lambda x: (
        lambda: torch.bucketize(x, t_edges.to(x.dtype), right=True))))
    for n in sizes:
        x_n, repeats = device_data(base, n)
        for name, make in cases:
            row = {"op": "digitize", "impl": name, "dist": "edges", "dtype": "float32", "n": n,
                   "nbins": 1000, "edges": "geomspace(1e-3, 4, 1000)"}
            if repeats > 1:
                row["repeats"] = repeats
            try:
                ms, out = timed(make(x_n), args.runs)
                row["ms"] = round(ms, 5)
                row["gbps"] = round(n * 4 / (ms * 1e-3) / 1e9, 2)
                got = to_host(out).astype(np.int64, copy=False).reshape(repeats, -1)
                # torch.bucketize compares in float32 with float32 edges: numpy's answer only
                # where rounding the edges changes nothing.
                row["correct"] = bool((got[:, :] == want[: got.shape[1]]).all())
                del out, got
            except Exception as e:  # a call that cannot run says why
                row["error"] = f"{type(e).__name__}: {e}"[:300]
            emit(row)
        del x_n
        torch.cuda.empty_cache()


GPU_RULES = ("sqrt", "sturges", "rice", "scott", "doane", "fd", "auto")


def bench_estimators(args, sizes, base, emit, over_budget):
    """`hist` rows of the estimators against the plain histogram with the same bins."""
    for n in sizes:
        x_n, repeats = device_data(base, n)
        host = x_n.cpu().numpy()
        for rule in args.estimator_rules.split(","):
            if over_budget(f"estimators {rule} {n}"):
                return
            t0 = time.perf_counter()
            want, want_edges = np.histogram(host, rule)
            numpy_ms = (time.perf_counter() - t0) * 1e3
            nb = len(want)
            cases = [
                (rule, "smemkit.histogram", lambda: smemkit.histogram(x_n, rule)),
                (nb, "smemkit.histogram", lambda: smemkit.histogram(x_n, nb)),
                (nb, "smemkit.histogram+density",
                 lambda: smemkit.histogram(x_n, nb, density=True)),
                (nb, "one_pass", lambda: torch.aminmax(x_n)),
            ]
            # numpy on the host copy, one run (its reference): the peer of 'stone', which
            # histograms the data at max(100, sqrt(n)) bin counts.
            emit({"op": "hist", "impl": "numpy.histogram", "dist": "normal", "dtype": "float32",
                  "n": n, "nbins": nb, "bins": rule, "rule": rule, "ms": round(numpy_ms, 3),
                  "runs": 1, "host": True})
            for bins, name, call in cases:
                row = {"op": "hist", "impl": name, "dist": "normal", "dtype": "float32", "n": n,
                       "nbins": nb, "bins": bins, "rule": rule}
                if repeats > 1:
                    row["repeats"] = repeats
                try:
                    ms, out = timed(call, args.runs)
                    row["ms"] = round(ms, 5)
                    row["gbps"] = round(n * 4 / (ms * 1e-3) / 1e9, 2)
                    if name == "one_pass":
                        lo, hi = out
                        row["correct"] = bool(lo.item() == host.min() and hi.item() == host.max())
                    else:
                        counts, edges = to_host(out[0]), to_host(out[1])
                        if name.endswith("density"):
                            ref = np.histogram(host, nb, density=True)[0]
                            row["correct"] = bool(np.array_equal(counts, ref))
                        else:
                            row["correct"] = bool(np.array_equal(counts, want)
                                                  and np.array_equal(edges, want_edges))
                except Exception as e:  # a call that cannot run says why
                    row["error"] = f"{type(e).__name__}: {e}"[:300]
                emit(row)
        del x_n, host
        torch.cuda.empty_cache()


def bench_half_estimators(args, n, base, emit, over_budget):
    """`hist` rows of the estimators on float16 / bfloat16 samples over [-4, 4] standard
    deviations, against the plain histogram with the same bins and one read of the samples.
    `scott` and `doane` take samples of standard deviation 0.01 (`scale`): numpy's float16 sums
    of 2^28 unit samples' squares overflow, and it has no answer there."""
    import ml_dtypes

    x32, repeats = device_data(base, n)
    for tdtype, host_type in ((torch.float16, np.float16), (torch.bfloat16, ml_dtypes.bfloat16)):
        name = str(tdtype).removeprefix("torch.")
        held = {}
        for rule in args.half_estimator_rules.split(","):
            if over_budget(f"half-estimators {name} {rule}"):
                return
            scale = 0.01 if rule in ("scott", "doane") else 1.0
            rng = (-4.0 * scale, 4.0 * scale)
            if held.get("scale") != scale:
                held.clear()
                held["x"] = (x32 * scale).to(tdtype) if scale != 1.0 else x32.to(tdtype)
                held["host"] = held["x"].float().cpu().numpy().astype(host_type)
                held["scale"] = scale
            x, host = held["x"], held["host"]
            head = {"op": "hist", "dist": "normal", "dtype": name, "n": n, "rule": rule,
                    "range": list(rng), "scale": scale}
            if name == "bfloat16" and rule in ("scott", "doane"):
                # ml_dtypes' sums add one bfloat16 value after another: smemkit walks that chain
                # on the device (~1 s a sum of 2^28 mean-zero values), numpy on the host takes
                # minutes here, so this row is timed only; its bits are checked against numpy at
                # 2^24 by the tests and scripts/sanitize_bfloat16_chain.py.
                row = dict(head, impl="smemkit.histogram", bins=rule, reference="none")
                try:
                    ms, out = timed(lambda: smemkit.histogram(x, rule, range=rng), 3)
                    row.update(ms=round(ms, 3), nbins=int(out[0].numel()))
                except Exception as e:  # a call that cannot run says why
                    row["error"] = f"{type(e).__name__}: {e}"[:300]
                emit(row)
                continue
            t0 = time.perf_counter()
            want, want_edges = np.histogram(host, rule, range=rng)
            numpy_ms = (time.perf_counter() - t0) * 1e3
            nb = len(want)
            emit(dict(head, impl="numpy.histogram", nbins=nb, bins=rule, ms=round(numpy_ms, 3),
                      runs=1, host=True))
            cases = [
                (rule, "smemkit.histogram", lambda: smemkit.histogram(x, rule, range=rng)),
                (nb, "smemkit.histogram", lambda: smemkit.histogram(x, nb, range=rng)),
                (nb, "one_pass", lambda: torch.aminmax(x)),
            ]
            for bins, impl, call in cases:
                row = dict(head, impl=impl, nbins=nb, bins=bins)
                if repeats > 1:
                    row["repeats"] = repeats
                try:
                    ms, out = timed(call, args.runs)
                    row["ms"] = round(ms, 5)
                    row["gbps"] = round(n * 2 / (ms * 1e-3) / 1e9, 2)
                    if impl != "one_pass":
                        counts = to_host(out[0])
                        edges = out[1].float().cpu().numpy() if out[1].dtype == torch.bfloat16 \
                            else to_host(out[1])
                        row["correct"] = bool(np.array_equal(counts, want) and np.array_equal(
                            edges, want_edges.astype(edges.dtype)) and len(edges) == nb + 1)
                except Exception as e:  # a call that cannot run says why
                    row["error"] = f"{type(e).__name__}: {e}"[:300]
                emit(row)
        held.clear()
    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

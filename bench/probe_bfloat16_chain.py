"""bfloat16 `scott` / `doane` on torch GPU arrays (ml_dtypes' one-after-another sums walked on
the device, est_chain.cuh): time at 2^28 on normal samples around zero (whose ml_dtypes total
keeps moving: every chunk is walked), their magnitudes and a shifted normal, and on alternating
+-0.75 at 2^22 and 2^24, beside the plain histogram, a copy of the same bytes and float16 scott;
a torch profile of one call; and, at 2^24, the bins against numpy with ml_dtypes on the host copy
(numpy's time on the host is the only other implementation of these sums).

Usage: python3 bench/probe_bfloat16_chain.py [--dists normal,magnitude,shifted] [--quick]
(JSON lines on stdout, then the profile table; --quick: no alternating rows and no profile)
"""
import argparse
import json
import os
import statistics
import time

import ml_dtypes
import numpy as np
import torch

import smemkit
from smemkit import _native

COMMIT = os.environ.get("SMEMKIT_COMMIT", "")
ap = argparse.ArgumentParser()
ap.add_argument("--dists", default="normal,magnitude,shifted")
ap.add_argument("--quick", action="store_true")
ARGS = ap.parse_args()


def timed(f, runs=7, warm=2):
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def attempt(f):
    """f(), or the message of the ValueError it raises."""
    try:
        return f()
    except ValueError as e:
        return str(e)


def emit(**row):
    row.setdefault("commit", COMMIT)
    print(json.dumps(row), flush=True)


g = torch.Generator(device="cuda").manual_seed(11)
N = 1 << 28
base = torch.randn(N, device="cuda", generator=g)
dists = {
    "normal": (base * 0.01, (-0.04, 0.04)),
    "magnitude": (base.abs() * 0.01, (0.0, 0.03)),
    "shifted": (base * 0.5 + 2.0, (1.0, 3.0)),
}
dists = {k: v for k, v in dists.items() if k in ARGS.dists.split(",")}
s = torch.cuda.current_stream().cuda_stream
for dist, (x32, rng) in dists.items():
    x = x32.bfloat16()
    emit(op="copy", dtype="bfloat16", dist=dist, n=N, ms=round(timed(lambda: x.clone()), 4))
    emit(op="histogram", impl="smemkit", dtype="bfloat16", dist=dist, n=N, bins=1000,
         range=rng, ms=round(timed(lambda: smemkit.histogram(x, 1000, range=rng)), 4))
    for rule in ("scott", "doane"):
        for r in (None, rng):
            row = dict(op="histogram_estimator", impl="smemkit", dtype="bfloat16", dist=dist,
                       n=N, rule=rule, range=r)
            # numpy's bfloat16 std of many samples stalls small, and its bins can be too many
            # for bfloat16 edges: then both fail alike, after the same sums (timed as well).
            row["ms"] = round(timed(lambda: attempt(lambda: smemkit.histogram(x, rule, range=r)),
                                    runs=3, warm=1), 3)
            row["estimate_ms"] = round(timed(lambda: attempt(lambda: _native.device_estimate(
                (0, s, x.data_ptr(), N, "bfloat16"), rule, r)), runs=1, warm=0), 3)
            got = attempt(lambda: smemkit.histogram(x, rule, range=r))
            if isinstance(got, str):
                row["error"] = got[:120]
            else:
                row["nbins"] = int(got[0].numel())
            emit(**row)
    h = x32.half()
    got = attempt(lambda: smemkit.histogram(h, "scott", range=rng))
    emit(op="histogram_estimator", impl="smemkit", dtype="float16", dist=dist, n=N, rule="scott",
         range=rng, ms=round(timed(lambda: attempt(lambda: smemkit.histogram(
             h, "scott", range=rng))), 3), **({"error": got[:120]} if isinstance(got, str) else {}))
    del x, h

# The worst case: every value moves the total (it never grows past the values).
for n in () if ARGS.quick else (1 << 22, 1 << 24):
    alt = (torch.where(torch.arange(n, device="cuda") % 2 == 0, 0.75, -0.75)).bfloat16()
    for rule in ("scott", "doane"):
        t0 = time.perf_counter()
        try:
            got = smemkit.histogram(alt, rule)
            torch.cuda.synchronize()
            emit(op="histogram_estimator", impl="smemkit", dtype="bfloat16", dist="alternating",
                 n=n, rule=rule, range=None, ms=round((time.perf_counter() - t0) * 1e3, 1),
                 nbins=int(got[0].numel()))
        except ValueError as e:
            emit(op="histogram_estimator", dtype="bfloat16", dist="alternating", n=n, rule=rule,
                 error=str(e)[:120])

# Where one call's time goes.
import torch.profiler as tp

table = ""
if "normal" in dists and not ARGS.quick:
    x = dists["normal"][0].bfloat16()
    with tp.profile(activities=[tp.ProfilerActivity.CUDA, tp.ProfilerActivity.CPU]) as prof:
        _native.device_estimate((0, s, x.data_ptr(), N, "bfloat16"), "doane", None)
        torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=12)

# Against numpy with ml_dtypes on the host copy, at 2^24.
n = 1 << 24
for dist, (x32, rng) in dists.items():
    x = x32[:n].bfloat16()
    host = x.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
    for rule in ("scott", "doane"):
        for r in (None, rng):
            t0 = time.perf_counter()
            try:
                H, E = np.histogram(host, rule, range=r)
            except ValueError as e:
                emit(op="parity", dist=dist, n=n, rule=rule, range=r, numpy_error=str(e)[:80])
                continue
            numpy_ms = (time.perf_counter() - t0) * 1e3
            h, e = smemkit.histogram(x, rule, range=r)
            e = (e.float().cpu().numpy().astype(ml_dtypes.bfloat16) if e.dtype == torch.bfloat16
                 else e.cpu().numpy())
            same = (np.array_equal(h.cpu().numpy(), H) and e.dtype == E.dtype
                    and np.array_equal(e, E))
            emit(op="parity", dist=dist, n=n, rule=rule, range=r, nbins=len(H), equal=bool(same),
                 numpy_ms=round(numpy_ms, 1))
print(table)

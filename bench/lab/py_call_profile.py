"""What one smemkit.histogram call on GPU samples runs on the device, beside its time: the CUDA
kernels and copies torch.profiler sees for one warm call per dtype and bin count, and the host
time of the call. For finding the work outside the counting kernel (bench/NOTES.md session 30).
Usage: python3 bench/lab/py_call_profile.py [LOG2N] [repeat|digitize]
`repeat`: the samples as python_realistic.py makes them (2^26 seeded normals repeated), else
fresh normals; `digitize`: smemkit.digitize of |x| (float32) over 1000 log-spaced bins instead."""
import json
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

import smemkit

lg = int(sys.argv[1]) if len(sys.argv) > 1 else 28
n = 1 << lg
repeat = len(sys.argv) > 2 and sys.argv[2] == "repeat"
if repeat:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(20261124)
    base = torch.randn(min(n, 1 << 26), device="cuda", generator=gen)
    base = base.repeat(n // base.numel())
else:
    base = torch.randn(n, device="cuda")
if len(sys.argv) > 2 and sys.argv[2] == "digitize":
    import numpy as np

    x = base.abs()
    edges = np.geomspace(1e-3, 4, 1000)
    cases = [("digitize", torch.float32, 1000, lambda: smemkit.digitize(x, edges))]
else:
    cases = []
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for nbins in (1000, 4096):
            cases.append(("histogram", dtype, nbins,
                          lambda x=base.to(dtype), nb=nbins: smemkit.histogram(
                              x, nb, range=(-4.0, 4.0))))
for op, dtype, nbins, call in cases:
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times, host = [], []
    for _ in range(9):
        t0 = time.perf_counter()
        e0.record()
        call()
        e1.record()
        host.append((time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    gpu_ops = []
    for ev in prof.events():
        if ev.device_type.name == "CUDA":
            gpu_ops.append((ev.name[:60], round(ev.device_time / 1e3, 4) if hasattr(ev, "device_time") else None))
    cpu_top = sorted(((ev.name[:60], round(ev.cpu_time_total / 1e3, 4)) for ev in prof.events()
                      if ev.device_type.name == "CPU"), key=lambda t: -t[1])[:12]
    print(json.dumps({"op": op, "dtype": str(dtype), "nbins": nbins, "data": "repeat" if repeat else "fresh", "ms_median": sorted(times)[4],
                      "host_ms_median": sorted(host)[4], "gpu_ops": gpu_ops, "cpu_top": cpu_top}))

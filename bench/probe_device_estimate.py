"""Device estimate alone (no histogram) for float16 against float32 of the same values at 2^28,
and a torch profile of float16 scott over a range (which kernels the time goes to).

Usage: python3 bench/probe_device_estimate.py
"""
import json, statistics, torch
from smemkit import _native
def timed(f, runs=7):
    f(); f(); torch.cuda.synchronize(); ts = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    return statistics.median(ts)
g = torch.Generator(device="cuda").manual_seed(5)
x32 = torch.randn(1 << 28, device="cuda", generator=g) * 0.01
x16 = x32.half()
s = torch.cuda.current_stream().cuda_stream
for x, d in ((x16, "float16"), (x16.float(), "float32")):
    # (-1, 1) keeps every sample: nothing to pack.
    for r in ((-0.04, 0.04), (-1.0, 1.0)):
        for rule in ("scott", "doane"):
            row = {"op": "device_estimate", "dtype": d, "n": x.numel(), "rule": rule, "range": r}
            try:
                row["ms"] = round(timed(lambda: _native.device_estimate(
                    (0, s, x.data_ptr(), x.numel(), d), rule, r)), 4)
            except ValueError as e:  # float16 edges of that many bins repeat: numpy fails too
                row["error"] = str(e)[:120]
            print(json.dumps(row), flush=True)
print(json.dumps({"op": "copy", "dtype": "float16", "ms": round(timed(lambda: x16.clone()), 4)}))
# Where scott's time goes: profile one call's kernels.
import torch.profiler as tp
with tp.profile(activities=[tp.ProfilerActivity.CUDA, tp.ProfilerActivity.CPU]) as prof:
    for _ in range(3):
        _native.device_estimate((0, s, x16.data_ptr(), x16.numel(), "float16"), "scott", (-0.04, 0.04))
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14))

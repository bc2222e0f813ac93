"""Times numpy's estimators on float16 / bfloat16 GPU samples through the installed smemkit, for
A/B runs of two builds in one device call (PYTHONPATH picks the build): `hist` rows of
smemkit.histogram(x, rule, range=(-4, 4)) and of the plain histogram with the same bins, on
2^--log2 normal samples drawn on the device (`scott` and `doane`: scaled by 0.01, over
(-0.04, 0.04), as numpy's float16 sums of unit samples' squares overflow at this size). Correctness is the realistic benchmark's and the
tests' (numpy on the host copy is the slow part; not repeated here).

Usage: python3 bench/compare_half_estimators.py --build old [--log2 28] [--rules sturges,fd,auto]
"""

import argparse
import json
import statistics

import smemkit
import torch


def timed(call, runs):
    for _ in range(2):
        out = call()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True, help="a label for the build's rows")
    p.add_argument("--log2", type=int, default=28)
    p.add_argument("--rules", default="sturges,fd,auto")
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    n = 1 << args.log2
    g = torch.Generator(device="cuda").manual_seed(20261128)
    base = torch.randn(n, device="cuda", generator=g)
    gpu = torch.cuda.get_device_name()
    for dtype in (torch.float16, torch.bfloat16):
        for rule in args.rules.split(","):
            scale = 0.01 if rule in ("scott", "doane") else 1.0
            rng = (-4.0 * scale, 4.0 * scale)
            x = (base * scale).to(dtype)
            row = {"op": "hist", "dist": "normal", "dtype": str(dtype).removeprefix("torch."),
                   "n": n, "rule": rule, "range": list(rng), "scale": scale,
                   "build": args.build, "gpu": gpu}
            try:
                ms, (h, _) = timed(lambda: smemkit.histogram(x, rule, range=rng), args.runs)
                nb = int(h.numel())
                plain, _ = timed(lambda: smemkit.histogram(x, nb, range=rng), args.runs)
                row.update({"impl": "smemkit.histogram", "bins": rule, "nbins": nb,
                            "ms": round(ms, 4), "plain_ms": round(plain, 4)})
            except Exception as e:  # a build that cannot run the rule says why
                row["error"] = f"{type(e).__name__}: {e}"[:300]
            print(json.dumps(row), flush=True)
            del x


if __name__ == "__main__":
    main()

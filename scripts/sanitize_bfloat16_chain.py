"""bfloat16 `scott` / `doane` on torch GPU arrays, small enough to run under compute-sanitizer,
each checked against numpy with ml_dtypes on the host copy (the chain walk, est_chain.cuh, on
data whose totals stall, wander across binades, or land halfway between two totals).

Usage (device): compute-sanitizer --tool memcheck --error-exitcode 9 \
    python3 scripts/sanitize_bfloat16_chain.py
Prints one line a case; exits 1 when a case differs from numpy.
"""
import sys

import ml_dtypes
import numpy as np
import torch

import smemkit

g = torch.Generator(device="cuda").manual_seed(5)


def data(kind, n):
    z = torch.randn(n, device="cuda", generator=g)
    if kind == "normal":
        return z * 0.01
    if kind == "magnitude":
        return z.abs() * 0.01
    # Values k * 2^-e: many fall halfway between two totals.
    k = torch.randint(-255, 256, (n,), device="cuda", generator=g).float()
    e = torch.randint(0, 20, (n,), device="cuda", generator=g).float()
    return k * torch.exp2(-e)


bad = 0
for kind in ("normal", "magnitude", "halfway"):
    for n in (1, 7, 257, 8193, 100_003, 1 << 20):
        x = data(kind, n).bfloat16()
        host = x.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
        for rule in ("scott", "doane"):
            try:
                want = np.histogram_bin_edges(host, rule)
            except ValueError as e:
                want = str(e)
            try:
                got = smemkit.histogram(x, rule)[1].float().cpu().numpy()
            except ValueError as e:
                got = str(e)
            if isinstance(want, str) or isinstance(got, str):
                same = isinstance(want, str) and isinstance(got, str)
                shown = "error" if same else f"{want!s:.60} against {got!s:.60}"
            else:
                same = want.shape == got.shape and np.array_equal(
                    want.astype(np.float64), got.astype(np.float64))
                shown = len(want) - 1
            bad += not same
            print(kind, n, rule, shown, "equal" if same else "DIFFERENT", flush=True)
sys.exit(1 if bad else 0)

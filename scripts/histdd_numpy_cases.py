#!/usr/bin/env python3
"""Writes crates/smemkit/tests/fixtures/histdd_numpy.json: joint histograms computed by numpy.histogramdd
(the oracle of crates/smemkit/tests/histdd_numpy.rs). Floats are stored as their IEEE bit patterns
(hex), so that nothing is lost in JSON. Run with numpy 2 from the repository root:
    python3 scripts/histdd_numpy_cases.py
"""
import json
import sys

import numpy as np

rng = np.random.default_rng(24)
INT = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
       "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}
FLOAT = {"f32": np.float32, "f64": np.float64}


def bits(a):
    a = np.asarray(a)
    if a.dtype == np.float64:
        return [format(int(x), "016x") for x in a.view(np.uint64).ravel()]
    if a.dtype == np.float32:
        return [format(int(x), "08x") for x in a.view(np.uint32).ravel()]
    return [str(int(x)) for x in a.ravel()]


def f64bits(x):
    return format(int(np.float64(x).view(np.uint64)), "016x")


def zero(h):
    z = h.ravel()[h.ravel() == 0]
    return -0.0 if np.signbit(z).sum() * 2 > z.size else 0.0


def case(name, sample, bins, ranges=None, weights=None, density=False, layout="rows"):
    sample = np.asarray(sample)
    n, d = sample.shape
    h, edges = np.histogramdd(sample, bins=bins, range=ranges, density=density, weights=weights)
    z = zero(h)
    nan = int(np.isnan(sample).any(axis=1).sum()) if sample.dtype.kind == "f" else 0
    specs = []
    for j in range(d):
        b = bins[j] if isinstance(bins, list) else bins
        if np.ndim(b) == 0:
            r = None if ranges is None or ranges[j] is None else [f64bits(ranges[j][0]), f64bits(ranges[j][1])]
            specs.append({"nbins": int(b), "range": r})
        else:
            specs.append({"edges": bits(np.asarray(b, dtype=np.float64))})
    counted = None
    if weights is None and not density:
        counted = int(h.sum())
    dtype = next(k for k, v in {**INT, **FLOAT}.items() if v == sample.dtype.type)
    return {
        "name": name,
        "dtype": dtype,
        "layout": layout,
        "dims": d,
        "data": bits(sample),  # (N, D) in C order, whatever the layout under test
        "bins": specs,
        "weights": None if weights is None else {"f32": weights.dtype == np.float32, "bits": bits(weights)},
        "density": density,
        # Bins other than `zero` (the commoner zero: -0.0 when densities divide by a negative total),
        # as [flat C-order index, value bits].
        "shape": [int(k) for k in h.shape],
        "zero": f64bits(z),
        "hist": [[int(i), f64bits(v)] for i, v in enumerate(h.ravel()) if v != 0 or np.signbit(v) != np.signbit(z)],
        "edges": [bits(np.asarray(e).astype(np.float64)) for e in edges],
        "edge_f32": [np.asarray(e).dtype == np.float32 for e in edges],
        "nan": nan,
        "outside": None if counted is None else n - counted - nan,
    }


def on_edges(lo, hi, k, n, dtype):
    """Samples over [lo, hi] with a third of them exactly on linspace's edges, some outside."""
    e = np.linspace(lo, hi, k + 1)
    x = rng.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), n)
    pick = rng.random(n) < 0.33
    x[pick] = rng.choice(e, pick.sum())
    return x.astype(dtype)


cases = []
# float64 and float32 with caller's ranges: float64 edges for both (numpy.histogramdd's linspace).
for t in ["f64", "f32"]:
    x = np.stack([on_edges(-1.3, 2.7, 7, 800, FLOAT[t]), on_edges(0.1, 0.9, 13, 800, FLOAT[t])], axis=1)
    x[rng.random(800) < 0.02, rng.integers(0, 2)] = np.nan
    for layout in ["rows", "columns", "separate"]:
        cases.append(case(f"{t} ranged {layout}", x, [7, 13], [(-1.3, 2.7), (0.1, 0.9)], layout=layout))
    w = rng.standard_normal(800)
    cases.append(case(f"{t} ranged weighted", x, [7, 13], [(-1.3, 2.7), (0.1, 0.9)], weights=w))
    cases.append(case(f"{t} ranged density", x, [7, 13], [(-1.3, 2.7), (0.1, 0.9)], density=True))
    cases.append(case(f"{t} ranged weighted density", x, [7, 13], [(-1.3, 2.7), (0.1, 0.9)],
                      weights=w.astype(np.float32), density=True))
# Automatic ranges: float32 edges from float32 data (numpy 2 keeps float32 scalars), on the edges.
for t, k in [("f32", [10, 33, 7]), ("f64", [10, 33, 7])]:
    base = rng.standard_normal((1200, 3)).astype(FLOAT[t]) * np.array([1, 1000, 1e-3], dtype=FLOAT[t])
    for j in range(3):
        lo, hi = base[:, j].min(), base[:, j].max()
        e = np.linspace(lo, hi, k[j] + 1)  # float32 when lo and hi are
        idx = rng.integers(0, 1200, 300)
        base[idx, j] = rng.choice(e, 300).astype(FLOAT[t])
    cases.append(case(f"{t} auto 3-D", base, k, layout="columns"))
    cases.append(case(f"{t} auto 3-D density", base, k, density=True))
# Large float32 bin counts over a range whose edges are not exact.
x = np.stack([rng.uniform(0.3, 0.7, 1500), rng.normal(0, 1, 1500)], axis=1).astype(np.float32)
cases.append(case("f32 many bins", x, [1000, 999], [(0.3, 0.7), (-3.1, 3.3)]))
cases.append(case("f32 many bins auto", x, [1000, 999]))
# Integers: an RGB image (interleaved u8), signed ranges, and 64-bit values past 2^53.
img = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8).reshape(-1, 3)
cases.append(case("u8 rgb 32^3", img, 32, [(0, 256)] * 3))
cases.append(case("u8 rgb auto", img, [5, 6, 7]))
x = rng.integers(-300, 300, (800, 2)).astype(np.int16)
cases.append(case("i16 ranged", x, [12, 5], [(-250, 250), (-100.5, 99.5)], layout="separate"))
x = (rng.integers(-2**62, 2**62, (600, 2), dtype=np.int64))
x[:10, 0] = x[:, 0].max()
cases.append(case("i64 auto huge", x, [17, 9]))
x = rng.integers(2**60, 2**63, (600, 2), dtype=np.uint64)
cases.append(case("u64 auto huge", x, [11, 8], layout="columns"))
x = np.full((50, 2), 7, dtype=np.int32)
cases.append(case("i32 one value", x, [3, 4]))
# Explicit edges: equal neighbours, infinite ends, uneven widths; weights and density.
x = np.stack([rng.normal(0, 2, 800), rng.exponential(1, 800)], axis=1)
x[rng.integers(0, 800, 100), 0] = rng.choice([-1.0, 0.0, 0.5, 4.0], 100)
e0 = [-np.inf, -1.0, 0.0, 0.0, 0.5, 4.0]
e1 = [0.0, 0.01, 0.1, 1.0, 1.0, 10.0, np.inf]
cases.append(case("edges", x, [e0, e1]))
cases.append(case("edges weighted", x, [e0, e1], weights=rng.uniform(-1, 1, 800)))
e0f = [-5.0, -1.0, 0.0, 0.5, 4.0]
cases.append(case("edges density", x, [e0f, [0.0, 0.01, 0.1, 1.0, 10.0]], density=True))
# One axis, and four.
x = rng.normal(0, 1, (800, 4))
cases.append(case("4-D", x, [3, 4, 5, 6], [(-2, 2)] * 4, layout="columns"))
cases.append(case("1-D", x[:, :1], [20], [(-1, 1)]))
# Weighted densities of more bins than numpy's buffer (8192): its sum of the histogram is cut in
# pieces (2-D rows, 3-D planes, rows longer than the buffer, axes of one bin).
for shape in [(100, 100), (20, 30, 40), (2, 9000), (1, 9000), (120, 1, 90)]:
    d = len(shape)
    x = rng.normal(0, 1, (600, d))
    w = rng.standard_normal(600) * 10.0 ** rng.uniform(-6, 6, 600)
    cases.append(case(f"weighted density {shape}", x, list(shape), [(-2.5, 2.5)] * d, weights=w, density=True))
# Empty input.
cases.append(case("empty", np.zeros((0, 2)), [3, 4]))

out = "crates/smemkit/tests/fixtures/histdd_numpy.json"
with open(out, "w") as f:
    json.dump({"numpy": np.__version__, "cases": cases}, f, separators=(",", ":"))
print(f"wrote {out}: {len(cases)} cases (numpy {np.__version__})", file=sys.stderr)

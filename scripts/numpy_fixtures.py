#!/usr/bin/env python3
"""Generates the numpy conformance fixtures of the smemkit histogram contract.

numpy itself computes every expected value here: `numpy.histogram` for uniform and explicit bins,
`numpy.bincount` for integer bins. The Rust test `crates/smemkit/tests/numpy_conformance.rs` loads
the fixtures and checks that smemkit's CPU engine gives bit-identical counts and edges, and an error
wherever numpy raises. CI has no numpy, so the generated JSON files are committed; rerun this script
(with numpy 2.x) after changing it:

    python3 scripts/numpy_fixtures.py            # writes crates/smemkit/tests/fixtures/*.json

Encoding (lossless): sample, weight, edge and weighted-count arrays are the hex of their
little-endian bytes with their numpy dtype name; scalars given to numpy (range ends) are the hex of
their IEEE-754 float64 bits plus `repr` for the reader. Integer counts are JSON integers.

Each case: `name`, `op` ("histogram" or "bincount"), `dtype`, `data`, `bins` (an int, or null when
`edges` is given), `range` (null or [lo, hi]), `edges` (explicit bins or null), `weights` (null or
{dtype, hex}), and `expect`: either {"error": "<numpy's exception: message>"} or {"counts": ...,
"counts_dtype", "edges": {dtype, hex} (histogram only), "below", "above", "nan"}. The tallies are
computed by numpy with the same comparisons numpy's histogram uses to keep samples (NEP 50
promotion: a float32 array compared with a Python float compares in float32). `divergence`, when
present, marks a documented place where smemkit is stricter than numpy (it errors instead).
"""
import json
import math
import os
import struct
import sys
import warnings

import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "smemkit", "tests", "fixtures")
INT_TYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"]


def hexf(v):
    return struct.pack("<d", float(v)).hex()


def arr(a):
    a = np.ascontiguousarray(a)
    return {"dtype": a.dtype.name, "hex": a.astype(a.dtype.newbyteorder("<")).tobytes().hex()}


def tallies(a, first, last):
    if a.size == 0:
        return 0, 0, 0
    nan = int(np.count_nonzero(np.isnan(a))) if a.dtype.kind == "f" else 0
    with np.errstate(invalid="ignore", over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        below = int(np.count_nonzero(a < first))
        above = int(np.count_nonzero(a > last))
    return below, above, nan


def hist_case(name, a, bins, rng=None, weights=None, divergence=None):
    """One numpy.histogram case: `bins` is an int or an array of float64 edges; `rng` a pair of
    Python floats or None."""
    a = np.asarray(a)
    case = {
        "name": name,
        "op": "histogram",
        "dtype": a.dtype.name,
        "data": arr(a)["hex"],
        "len": int(a.size),
        "bins": bins if isinstance(bins, int) else None,
        "edges": None if isinstance(bins, int) else arr(np.asarray(bins, dtype=np.float64)),
        "range": None if rng is None else [{"hex": hexf(r), "repr": repr(float(r))} for r in rng],
        "weights": None if weights is None else arr(weights),
    }
    if divergence:
        case["divergence"] = divergence
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                counts, edges = np.histogram(
                    a, bins=bins, range=None if rng is None else (float(rng[0]), float(rng[1])), weights=weights
                )
    except Exception as e:  # numpy raises: the test expects an error too
        case["expect"] = {"error": f"{type(e).__name__}: {e}"}
        return case
    # first and last edge as numpy's keep-mask sees them
    if isinstance(bins, int):
        if rng is not None:
            first, last = float(rng[0]), float(rng[1])
            if first == last:
                first, last = first - 0.5, last + 0.5
        else:
            first, last = edges[0], edges[-1]
    else:
        first, last = edges[0], edges[-1]
    below, above, nan = tallies(a, first, last)
    exp = {
        "counts_dtype": counts.dtype.name,
        "edges": arr(edges),
        "below": below,
        "above": above,
        "nan": nan,
    }
    if counts.dtype.kind == "f":
        exp["counts"] = arr(counts)["hex"]
    else:
        exp["counts"] = [int(c) for c in counts]
    case["expect"] = exp
    return case


def bincount_case(name, a, nbins, weights=None):
    """Integer bins [0, nbins): numpy.bincount of the samples inside, tallies of those outside
    (bincount itself raises on negative values and grows past nbins; the contract counts values in
    [0, nbins) and tallies the rest)."""
    a = np.asarray(a)
    inside = (a >= 0) & (a < nbins) if a.dtype.kind == "i" else (a < nbins)
    w = None if weights is None else weights[inside]
    counts = np.bincount(a[inside].astype(np.intp), weights=w, minlength=nbins)
    case = {
        "name": name,
        "op": "bincount",
        "dtype": a.dtype.name,
        "data": arr(a)["hex"],
        "len": int(a.size),
        "bins": nbins,
        "edges": None,
        "range": None,
        "weights": None if weights is None else arr(weights),
    }
    below = int(np.count_nonzero(a < 0)) if a.dtype.kind == "i" else 0
    above = int(np.count_nonzero(a >= nbins))
    exp = {"counts_dtype": counts.dtype.name, "below": below, "above": above, "nan": 0}
    exp["counts"] = arr(counts)["hex"] if counts.dtype.kind == "f" else [int(c) for c in counts]
    case["expect"] = exp
    return case


def ulp_neighbours(values, dtype):
    """Each value, and the next representable values below and above it, in `dtype`."""
    v = np.asarray(values, dtype=dtype)
    return np.concatenate([v, np.nextafter(v, dtype(-np.inf)), np.nextafter(v, dtype(np.inf))])


def numpy_edges(a, bins, rng):
    """numpy's edges (to put samples on them), or just the range when numpy refuses the bins."""
    try:
        return np.histogram_bin_edges(a, bins=bins, range=rng)
    except ValueError:
        return np.asarray(rng if rng is not None else [a.min(), a.max()], dtype=np.float64)


def edge_cases(rs):
    cases = []
    for dt in (np.float32, np.float64):
        t = np.dtype(dt).name
        # right-edge inclusion and values exactly on integer edges
        cases.append(hist_case(f"right_edge_{t}", np.arange(11, dtype=dt), 10, (0.0, 10.0)))
        cases.append(hist_case(f"right_edge_auto_{t}", np.arange(11, dtype=dt), 10))
        cases.append(hist_case(f"right_edge_only_{t}", np.array([1.0, 1.0, 1.0], dtype=dt), 4, (0.0, 1.0)))
        # values on, and one ulp either side of, every edge of awkward ranges
        for k, (lo, hi, n) in enumerate(
            [(0.0, 1.0, 10), (0.1, 0.7, 3), (-3.3, 17.1, 7), (0.1, 0.3, 49), (1e-3, 1e3, 1000),
             (-1e10, 1e-10, 13), (123.456, 123.4567, 11), (-2.5, 2.5, 100), (0.0, 5e-324 * 1e6, 5)]
        ):
            e = numpy_edges(np.zeros(1, dtype=dt), n, (lo, hi))
            data = ulp_neighbours(np.concatenate([e, np.asarray([lo, hi], dtype=np.float64)]), dt)
            cases.append(hist_case(f"ulp_edges_range_{k}_{t}", data, n, (lo, hi)))
        # auto range: min and max come from the data (float32 stays float32)
        for k in range(6):
            n = int(rs.choice([3, 7, 10, 33, 100, 999]))
            lo = float(rs.uniform(-100, 100))
            hi = lo + float(10 ** rs.uniform(-6, 3))
            base = np.asarray([lo, hi], dtype=dt)
            e = numpy_edges(base, n, None)
            data = np.concatenate([base, ulp_neighbours(e, dt)])
            data = data[(data >= base.min()) & (data <= base.max())]
            cases.append(hist_case(f"ulp_edges_auto_{k}_{t}", data, n))
        # random ranges where the arithmetic estimate is often off by one
        for k in range(10):
            n = int(rs.integers(1, 2000))
            lo = float(rs.uniform(-1e3, 1e3))
            hi = lo + float(10 ** rs.uniform(-3, 4))
            e = numpy_edges(np.zeros(1, dtype=dt), n, (lo, hi))
            data = np.concatenate([ulp_neighbours(e, dt), rs.uniform(lo - 1, hi + 1, 500).astype(dt)])
            cases.append(hist_case(f"ulp_edges_random_{k}_{t}", data, n, (lo, hi)))
        # NaN and inf
        special = np.array([np.nan, np.inf, -np.inf, 0.5, 1.0, 0.0, -0.0, np.nan], dtype=dt)
        cases.append(hist_case(f"nan_inf_range_{t}", special, 4, (0.0, 1.0)))
        cases.append(hist_case(f"nan_inf_auto_{t}", special, 4))
        cases.append(hist_case(f"nan_auto_{t}", np.array([1.0, np.nan, 2.0], dtype=dt), 4))
        cases.append(hist_case(f"inf_auto_{t}", np.array([1.0, np.inf], dtype=dt), 4))
        cases.append(hist_case(f"neg_inf_auto_{t}", np.array([-np.inf, 1.0], dtype=dt), 4))
        cases.append(hist_case(f"nan_edges_{t}", special, np.array([-1.0, 0.0, 0.5, 1.0])))
        # range=(a, a) becomes (a - 0.5, a + 0.5)
        for a_ in (0.0, 1.0, -3.25, 1e-8, 1e8, 0.1):
            data = ulp_neighbours([a_, a_ - 0.5, a_ + 0.5], dt)
            cases.append(hist_case(f"range_a_a_{a_!r}_{t}", data, 3, (a_, a_)))
            cases.append(hist_case(f"auto_a_a_{a_!r}_{t}", np.full(5, a_, dtype=dt), 3))
        # negative zero
        z = np.array([-0.0, 0.0, -0.0], dtype=dt)
        cases.append(hist_case(f"neg_zero_auto_{t}", z, 2))
        cases.append(hist_case(f"neg_zero_range_lo_{t}", z, 2, (-0.0, 1.0)))
        cases.append(hist_case(f"neg_zero_range_hi_{t}", z, 2, (-1.0, -0.0)))
        cases.append(hist_case(f"neg_zero_range_zero_{t}", z, 2, (-0.0, 0.0)))
        cases.append(hist_case(f"neg_zero_edges_{t}", z, np.array([-1.0, -0.0, 1.0])))
        # explicit edges
        for k in range(5):
            m = int(rs.integers(2, 60))
            edges = np.unique(rs.uniform(-50, 50, m))
            data = np.concatenate([ulp_neighbours(edges, dt), rs.uniform(-60, 60, 300).astype(dt)])
            cases.append(hist_case(f"edges_random_{k}_{t}", data, edges))
        cases.append(hist_case(f"edges_two_{t}", np.array([0.0, 1.0, 2.0, 2.5], dtype=dt), np.array([1.0, 2.0])))
        # float32 data, float64 edges between float32 values: comparisons are in float64
        e = np.array([0.1, 0.2, 0.30000000000000004, 0.7])
        cases.append(hist_case(f"edges_between_f32_{t}", ulp_neighbours(e, dt), e))
        # weights
        for wdt in (np.float32, np.float64):
            w = rs.normal(size=400).astype(wdt)
            data = rs.uniform(-1, 11, 400).astype(dt)
            cases.append(hist_case(f"weights_{np.dtype(wdt).name}_range_{t}", data, 10, (0.0, 10.0), weights=w))
            cases.append(hist_case(f"weights_{np.dtype(wdt).name}_auto_{t}", data, 17, weights=w))
            # dyadic weights: numpy's explicit-edge path sums by cumulative differences, exact here
            wd = (rs.integers(-40, 40, 400) / 8).astype(wdt)
            cases.append(hist_case(f"weights_{np.dtype(wdt).name}_edges_{t}", data, np.array([-0.5, 0.0, 1.0, 2.5, 10.0]), weights=wd))
        # empty input
        empty = np.zeros(0, dtype=dt)
        cases.append(hist_case(f"empty_auto_{t}", empty, 5))
        cases.append(hist_case(f"empty_range_{t}", empty, 5, (-1.0, 2.0)))
        cases.append(hist_case(f"empty_edges_{t}", empty, np.array([0.0, 1.0, 3.0])))
        cases.append(hist_case(f"empty_weights_{t}", empty, 5, (0.0, 1.0), weights=np.zeros(0)))
        # errors
        cases.append(hist_case(f"error_zero_bins_{t}", np.arange(3, dtype=dt), 0))
        cases.append(hist_case(f"error_inverted_range_{t}", np.arange(3, dtype=dt), 3, (2.0, 1.0)))
        cases.append(hist_case(f"error_nonfinite_range_{t}", np.arange(3, dtype=dt), 3, (0.0, math.inf)))
        cases.append(hist_case(f"error_nan_range_{t}", np.arange(3, dtype=dt), 3, (math.nan, 1.0)))
        cases.append(hist_case(f"error_too_many_bins_{t}", np.array([1.0, np.nextafter(dt(1.0), dt(2.0))], dtype=dt), 10))
    # float32 data, Python-float range that float32 cannot represent (NEP 50: range ends compared
    # as float32, edges computed in float64 and rounded to float32, division in float64)
    for k, (lo, hi, n) in enumerate([(0.1, 0.3, 10), (0.1, 0.30000001, 7), (1.0 / 3, 2.0 / 3, 9), (-0.1, 16777217.0, 5),
                                     (1e-45, 3e-45, 2), (0.2, 0.2000001, 3)]):
        e32 = np.array([lo, hi], dtype=np.float32)
        data = ulp_neighbours(np.concatenate([numpy_edges(np.zeros(1, np.float32), n, (lo, hi)), e32]), np.float32)
        cases.append(hist_case(f"f32_python_range_{k}", data, n, (lo, hi)))
    # a range beyond float32: the ends overflow to inf in float32
    cases.append(hist_case("f32_range_overflow", np.array([0.0, 1.0, 3e38], dtype=np.float32), 4, (-1e300, 1e300)))
    cases.append(hist_case("f32_range_beyond_max", np.array([0.0, 3.4e38], dtype=np.float32), 1, (0.0, 1e39)))
    # many bins over a tiny range in float32
    lo32 = np.float32(1.0)
    hi32 = np.float32(1.0) + np.float32(2.0 ** -5)
    data = rs.uniform(float(lo32), float(hi32), 3000).astype(np.float32)
    data = np.concatenate([data, [lo32, hi32]])
    cases.append(hist_case("many_bins_f32_auto_100000", data, 100000))
    cases.append(hist_case("many_bins_f32_range_100000", data, 100000, (1.0, 1.0 + 2.0 ** -5)))
    cases.append(hist_case("many_bins_f32_auto_too_many", data, 400000))
    data64 = rs.uniform(0, 1e-9, 3000)
    cases.append(hist_case("many_bins_f64_auto_20000", data64, 20000))
    # explicit edges numpy accepts: equal neighbours (a zero-width bin) and infinite edges
    cases.append(hist_case("equal_edges", np.array([0.0, 1.0, 1.5]), np.array([0.0, 1.0, 1.0, 2.0])))
    cases.append(hist_case("infinite_edges", np.array([-np.inf, 0.0, np.inf]), np.array([-np.inf, 0.0, np.inf])))
    return cases


def int_cases(rs):
    cases = []
    for t in INT_TYPES:
        info = np.iinfo(t)
        dt = np.dtype(t)
        lo_v, hi_v = int(info.min), int(info.max)
        small = rs.integers(max(lo_v, -200), min(hi_v, 300), 500, endpoint=True).astype(dt)
        cases.append(hist_case(f"int_auto_{t}", small, 10))
        cases.append(hist_case(f"int_auto_odd_{t}", small, 7))
        cases.append(hist_case(f"int_range_{t}", small, 10, (0.0, 100.0)))
        cases.append(hist_case(f"int_range_frac_{t}", small, 13, (-0.5, 99.5)))
        cases.append(hist_case(f"int_range_a_a_{t}", small, 3, (5.0, 5.0)))
        cases.append(hist_case(f"int_auto_constant_{t}", np.full(7, min(hi_v, 42), dtype=dt), 4))
        extremes = np.array([lo_v, hi_v, lo_v + 1, hi_v - 1, (lo_v + hi_v) // 2, 0, 1], dtype=dt)
        more = rs.integers(lo_v, hi_v, 300, endpoint=True, dtype=dt)
        cases.append(hist_case(f"int_extremes_auto_{t}", np.concatenate([extremes, more]), 17))
        cases.append(hist_case(f"int_extremes_auto_many_{t}", np.concatenate([extremes, more]), 1000))
        cases.append(hist_case(f"int_edges_{t}", small, np.array([-100.5, -1.0, 0.0, 3.0, 3.5, 250.0])))
        cases.append(hist_case(f"int_weights_{t}", small, 9, (0.0, 50.0), weights=rs.normal(size=small.size)))
        cases.append(hist_case(f"int_empty_{t}", np.zeros(0, dtype=dt), 4))
        # bincount
        for nbins in (1, 7, 256, 1000):
            cases.append(bincount_case(f"bincount_{nbins}_{t}", small, nbins))
        cases.append(bincount_case(f"bincount_extremes_{t}", np.concatenate([extremes, small]), 300))
        cases.append(bincount_case(f"bincount_weights_f64_{t}", small, 100, weights=rs.normal(size=small.size)))
        cases.append(bincount_case(f"bincount_weights_f32_{t}", small, 100,
                                   weights=rs.normal(size=small.size).astype(np.float32)))
        cases.append(bincount_case(f"bincount_empty_{t}", np.zeros(0, dtype=dt), 5))
    # integer data with float bins where float64 rounds the values (beyond 2^53)
    big = np.array([2**53, 2**53 + 1, 2**53 + 3, 2**60 + 1, 2**62, -(2**61) - 1], dtype=np.int64)
    cases.append(hist_case("int64_beyond_2p53_auto", big, 11))
    cases.append(hist_case("int64_beyond_2p53_range", big, 5, (float(2**53), float(2**53 + 8))))
    return cases


def random_cases(rs):
    cases = []
    types = ["float32", "float64"] + INT_TYPES
    for k in range(80):
        t = types[k % len(types)]
        dt = np.dtype(t)
        n = int(rs.integers(0, 3000))
        if dt.kind == "f":
            scale = 10 ** rs.uniform(-5, 6)
            data = (rs.normal(size=n) * scale + rs.uniform(-scale, scale)).astype(dt)
            if rs.random() < 0.3 and n > 0:
                data[rs.integers(0, n, 3)] = np.nan
        else:
            info = np.iinfo(dt)
            span = int(rs.choice([10, 1000, 100000, info.max]))
            lo_v = max(int(info.min), -span)
            data = rs.integers(lo_v, min(int(info.max), span), n, endpoint=True, dtype=dt)
        bins = int(rs.choice([1, 2, 5, 10, 64, 100, 1000, 4097]))
        kind = rs.integers(0, 3)
        finite = data[np.isfinite(data)] if dt.kind == "f" else data
        if kind == 0 or finite.size == 0:
            rng = None
        elif kind == 1:
            c = float(np.median(finite))
            w = float(np.ptp(finite)) * rs.uniform(0.1, 1.5) + 1e-3
            rng = (c - w * rs.random(), c + w * rs.random())
        else:
            rng = (float(finite.min()), float(finite.max()))
        w = None
        if rs.random() < 0.25:
            w = rs.normal(size=n).astype(rs.choice(["float32", "float64"]))
        cases.append(hist_case(f"random_{k}_{t}", data, bins, rng, weights=w))
    return cases


def main():
    if not np.__version__.startswith("2."):
        sys.exit(f"numpy 2.x needed (found {np.__version__}): numpy 1.x promotes float32 differently")
    rs = np.random.default_rng(20240521)
    os.makedirs(OUT, exist_ok=True)
    groups = {"edge_cases": edge_cases(rs), "integers": int_cases(rs), "random": random_cases(rs)}
    for name, cases in groups.items():
        doc = {"generator": "scripts/numpy_fixtures.py", "numpy": np.__version__, "cases": cases}
        path = os.path.join(OUT, f"numpy_{name}.json")
        with open(path, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")
        errors = sum(1 for c in cases if "error" in c["expect"])
        print(f"{path}: {len(cases)} cases ({errors} where numpy raises), {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()

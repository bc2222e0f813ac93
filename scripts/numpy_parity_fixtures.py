#!/usr/bin/env python3
"""Generates the numpy parity fixtures of issue 23 (empty input, degenerate ranges, infinite /
equal / large integer edges, bincount, density, bin estimators, digitize).

numpy computes every expected value; `crates/smemkit/tests/numpy_parity.rs` checks smemkit's CPU
engine against them bit for bit. CI has no numpy, so the generated JSON is committed; rerun with
numpy 2.x after changing this script:

    python3 scripts/numpy_parity_fixtures.py    # writes crates/smemkit/tests/fixtures/parity_numpy.json

Arrays are keys into the document's `arrays` table of {dtype, hex of little-endian bytes}; Python floats given to numpy (range ends) are the
hex of their float64 bits. Each case has `op` ("histogram", "bincount" or "digitize") and `expect`,
either {"error": "<numpy's exception>"} or the results: histogram `counts` (a list of ints, or an
array for weighted sums), `edges` and, with `density`, `density`; bincount `counts`; digitize
`indices`. Estimated bins also carry `width`: what numpy's estimator function itself returned
(float64 bits) and `width_type` (its Python type), checked against smemkit's width.
"""
import hashlib
import json
import os
import struct
import warnings

import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "smemkit", "tests", "fixtures")
RULES = ["auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"]


ARRAYS = {}


def arr(a):
    """The array interned in the document's `arrays` table: {dtype, hex} stored once, referred to
    by its key (the same samples serve many cases)."""
    a = np.ascontiguousarray(a)
    value = {"dtype": a.dtype.name, "hex": a.astype(a.dtype.newbyteorder("<")).tobytes().hex()}
    key = f"{value['dtype']}:{hashlib.sha1(value['hex'].encode()).hexdigest()[:12]}"
    while key in ARRAYS and ARRAYS[key] != value:
        key += "'"
    ARRAYS[key] = value
    return key


def hexf(v):
    return struct.pack("<d", float(v)).hex()


def run(f):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                return f(), None
    except Exception as e:  # numpy's refusal is the expected result
        return None, f"{type(e).__name__}: {e}"


def hist(name, a, bins, rng=None, weights=None, density=False):
    a = np.asarray(a)
    case = {
        "name": name,
        "op": "histogram",
        "data": arr(a),
        "bins": bins if isinstance(bins, (int, str)) else None,
        "edges": None if isinstance(bins, (int, str)) else arr(np.asarray(bins)),
        "range": None if rng is None else [hexf(r) for r in rng],
        "weights": None if weights is None else arr(weights),
        "density": density,
    }
    r = None if rng is None else (float(rng[0]), float(rng[1]))
    res, err = run(lambda: np.histogram(a, bins=bins, range=r, weights=weights, density=density))
    if err:
        case["expect"] = {"error": err}
        return case
    values, edges = res
    exp = {}
    if isinstance(bins, str):
        exp.update(selector_width(a, bins, r))
    exp |= {"edges": arr(np.asarray(edges, dtype=np.float64)), "edges_dtype": edges.dtype.name}
    if density:
        exp["density"] = arr(values)
        counts, _ = np.histogram(a, bins=bins, range=r, weights=weights)
    else:
        counts = values
    if counts.dtype.kind in "iu" and weights is None:
        exp["counts"] = [int(c) for c in counts]
    else:
        exp["counts"] = arr(counts)
    case["expect"] = exp
    return case


def selector_width(a, rule, rng):
    """numpy's own estimator function's width on the data it would see (trimmed to the range),
    with the type numpy computed it in; nothing when numpy does not call it (no data)."""
    impl = np.lib._histograms_impl
    first, last = impl._get_outer_edges(a, rng)
    if rng is not None:
        a = a[(a >= first) & (a <= last)]
    if a.size == 0:
        return {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        width = impl._hist_bin_selectors[rule](a, (first, last))
    return {"width": hexf(width), "width_type": type(width).__name__}


def bincount(name, a, weights=None, minlength=0):
    a = np.asarray(a)
    case = {
        "name": name,
        "op": "bincount",
        "data": arr(a),
        "weights": None if weights is None else arr(weights),
        "minlength": minlength,
    }
    res, err = run(lambda: np.bincount(a, weights=weights, minlength=minlength))
    if err:
        case["expect"] = {"error": err}
    elif weights is None:
        case["expect"] = {"counts": [int(c) for c in res]}
    else:
        case["expect"] = {"counts": arr(res.astype(np.float64))}
    return case


def digitize(name, x, bins, right=False):
    x = np.asarray(x)
    bins = np.asarray(bins, dtype=np.float64)
    case = {"name": name, "op": "digitize", "data": arr(x), "edges": arr(bins), "right": right}
    res, err = run(lambda: np.digitize(x, bins, right=right))
    case["expect"] = {"error": err} if err else {"indices": [int(i) for i in res]}
    return case


def empty_and_ranges():
    cases = []
    for t in ["float32", "float64", "int32", "uint8", "int64"]:
        e = np.zeros(0, dtype=t)
        cases.append(hist(f"empty_auto_{t}", e, 4))
        cases.append(hist(f"empty_range_{t}", e, 3, (-2.0, 5.0)))
        cases.append(hist(f"empty_edges_{t}", e, np.array([0.0, 1.0, 3.0])))
        cases.append(hist(f"empty_degenerate_range_{t}", e, 2, (1.0, 1.0)))
        for rule in RULES:
            cases.append(hist(f"empty_{rule}_{t}", e, rule))
        data = np.array([0, 1, 1, 2, 3], dtype=t)
        cases.append(hist(f"degenerate_range_{t}", data, 4, (1.0, 1.0)))
        cases.append(hist(f"degenerate_range_{t}_at_3", data, 3, (3.0, 3.0)))
    for t in ["int32", "uint8", "int64"]:
        cases.append(bincount(f"bincount_empty_{t}", np.zeros(0, dtype=t)))
        cases.append(bincount(f"bincount_empty_minlength_{t}", np.zeros(0, dtype=t), minlength=3))
    return cases


def edges():
    cases = []
    x = np.array([-np.inf, -1.0, 0.0, 0.5, 1.0, 2.0, 2.0, 3.0, 7.0, np.inf, np.nan])
    for t in ["float32", "float64"]:
        xs = x.astype(t)
        cases.append(hist(f"inf_edges_{t}", xs, np.array([0.0, 1.0, 3.0, np.inf])))
        cases.append(hist(f"neg_inf_edges_{t}", xs, np.array([-np.inf, 0.0, 1.0])))
        cases.append(hist(f"both_inf_edges_{t}", xs, np.array([-np.inf, np.inf])))
        cases.append(hist(f"zero_width_last_{t}", xs, np.array([0.0, 2.0, 2.0])))
        cases.append(hist(f"zero_width_inner_{t}", xs, np.array([0.0, 0.0, 1.0, 1.0, 2.0])))
        cases.append(hist(f"all_equal_edges_{t}", xs, np.array([2.0, 2.0, 2.0])))
        cases.append(hist(f"decreasing_edges_{t}", xs, np.array([0.0, 2.0, 1.0])))
    ints = np.array([0, 1, 2, 2, 3, 5], dtype=np.int32)
    cases.append(hist("zero_width_int", ints, np.array([0.0, 2.0, 2.0, 5.0])))
    big = 2**60
    for t in ["int64", "uint64", "int32", "float64"]:
        data = np.array([big - 2, big - 1, big, big + 1, big + 2, 0, 7], dtype=t) if t != "int32" \
            else np.array([0, 5, -3, 2**31 - 1], dtype=t)
        cases.append(hist(f"int64_edges_beyond_2_53_{t}", data, np.array([big - 1, big + 1, big + 2], dtype=np.int64)))
        cases.append(hist(f"uint64_edges_beyond_2_53_{t}", data, np.array([big - 1, big + 1, big + 2], dtype=np.uint64)))
    cases.append(hist("int64_edges_small_int8", np.array([-5, 0, 3, 9], dtype=np.int8), np.array([-4, 0, 4, 9], dtype=np.int64)))
    cases.append(hist("int64_edges_decreasing", np.array([1, 2], dtype=np.int64), np.array([3, 2, 1], dtype=np.int64)))
    return cases


def bincounts(rs):
    cases = []
    for t in ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"]:
        a = rs.integers(0, 50, 300).astype(t)
        cases.append(bincount(f"bincount_{t}", a))
        cases.append(bincount(f"bincount_minlength_{t}", a, minlength=80))
        cases.append(bincount(f"bincount_minlength_below_{t}", a, minlength=3))
        cases.append(bincount(f"bincount_weighted_{t}", a, weights=rs.standard_normal(300)))
        cases.append(bincount(f"bincount_weighted32_{t}", a, weights=rs.standard_normal(300).astype(np.float32)))
        if t.startswith("int"):
            cases.append(bincount(f"bincount_negative_{t}", np.array([3, -1, 2], dtype=t)))
    for t in ["float32", "float64"]:
        cases.append(bincount(f"bincount_float_{t}", np.array([1.0, 2.0], dtype=t)))
    a = rs.integers(0, 7, 12000).astype(np.int32)
    cases.append(bincount("bincount_weighted_long", a, weights=rs.standard_normal(12000) * 1e3))
    return cases


def densities(rs):
    cases = []
    for t in ["float32", "float64", "int32", "uint8"]:
        a = (rs.standard_normal(1000) * 20 + 50).astype(t) if t[0] == "f" else rs.integers(0, 200, 1000).astype(t)
        for bins in [1, 7, 64]:
            cases.append(hist(f"density_{t}_{bins}", a, bins, density=True))
            cases.append(hist(f"density_range_{t}_{bins}", a, bins, (10.0, 90.0), density=True))
        cases.append(hist(f"density_edges_{t}", a, np.array([0.0, 1.0, 10.0, 45.5, 100.0]), density=True))
        cases.append(hist(f"density_weighted_{t}", a, 9, weights=rs.random(1000), density=True))
        cases.append(hist(f"density_weighted32_{t}", a, 9, weights=rs.random(1000).astype(np.float32), density=True))
    cases.append(hist("density_zero_width", np.array([0.0, 1.0, 2.0, 2.0]), np.array([0.0, 2.0, 2.0]), density=True))
    cases.append(hist("density_empty", np.zeros(0), 3, density=True))
    return cases


def estimator_data(rs):
    sets = []
    for t in ["float32", "float64"]:
        sets.append((f"normal_{t}", (rs.standard_normal(3000) * 3 + 1).astype(t)))
        sets.append((f"normal_large_{t}", (rs.standard_normal(10000) * 1e3).astype(t)))
        sets.append((f"exponential_{t}", rs.exponential(2.0, 1500).astype(t)))
        sets.append((f"uniform_{t}", rs.uniform(-5, 5, 777).astype(t)))
        sets.append((f"small1_{t}", np.array([2.5], dtype=t)))
        sets.append((f"small2_{t}", np.array([2.5, -1.0], dtype=t)))
        sets.append((f"small3_{t}", np.array([2.5, -1.0, 0.25], dtype=t)))
        sets.append((f"small9_{t}", np.array([2.5, -1.0, 0.25, 8, 8, 8, 1, 0, 3], dtype=t)))
        sets.append((f"constant_{t}", np.full(50, 3.5, dtype=t)))
        sets.append((f"outlier_{t}", np.concatenate([np.zeros(100), [1e6]]).astype(t)))
    for t in ["int8", "int16", "int32", "int64", "uint8", "uint64"]:
        hi = 100 if t in ("int8", "uint8") else 10000
        sets.append((f"uniform_{t}", rs.integers(0, hi, 2500).astype(t)))
        sets.append((f"narrow_{t}", rs.integers(0, 3, 2000).astype(t)))
        sets.append((f"large_{t}", rs.integers(0, hi, 10000).astype(t)))
        sets.append((f"constant_{t}", np.full(20, 7, dtype=t)))
    sets.append(("extremes_int8", np.array([-128, 127, 0, 5, -3, 100, -100, 60], dtype=np.int8)))
    sets.append(("extremes_int64", np.array([-2**40, 2**40, 0, 1, 5, -7], dtype=np.int64)))
    return sets


def estimators(rs):
    cases = []
    for name, a in estimator_data(rs):
        for rule in RULES:
            cases.append(hist(f"{rule}_{name}", a, rule))
        lo, hi = float(np.min(a)), float(np.max(a))
        mid = (lo + hi) / 2
        for rule in ["auto", "fd", "stone", "scott", "sturges", "doane", "rice", "sqrt"]:
            cases.append(hist(f"{rule}_range_{name}", a, rule, (lo - 1.0, mid + 0.3)))
    cases.append(hist("auto_weighted", np.arange(5.0), "auto", weights=np.ones(5)))
    cases.append(hist("auto_nan", np.array([1.0, np.nan]), "auto"))
    cases.append(hist("auto_nan_range", np.array([1.0, np.nan, 2.0, 0.5]), "auto", (0.0, 3.0)))
    cases.append(hist("fd_degenerate_range", np.array([1.0, 1.0, 2.0]), "fd", (1.0, 1.0)))
    return cases


def digitizes(rs):
    cases = []
    x = np.array([-np.inf, -2.0, 0.0, 0.5, 1.0, 1.5, 2.0, 2.0, 3.0, 10.0, np.inf, np.nan])
    bins_sets = {
        "inc": [0.0, 1.0, 2.0, 3.0],
        "inc_repeat": [0.0, 1.0, 1.0, 2.0, 2.0, 3.0],
        "dec": [3.0, 2.0, 1.0, 0.0],
        "dec_repeat": [3.0, 2.0, 2.0, 1.0, 0.0, 0.0],
        "single": [1.0],
        "empty": [],
        "equal": [2.0, 2.0],
        "inf": [-np.inf, 0.0, np.inf],
        "not_monotonic": [0.0, 2.0, 1.0],
    }
    for t in ["float64", "float32", "int32", "int64", "uint8"]:
        xs = x if t[0] == "f" else np.array([-3, 0, 1, 2, 3, 4, 200], dtype=np.int64)
        xs = xs.astype(t) if t[0] == "f" or t != "uint8" else np.array([0, 1, 2, 3, 4, 200], dtype=t)
        for bname, b in bins_sets.items():
            for right in [False, True]:
                cases.append(digitize(f"digitize_{t}_{bname}_{'right' if right else 'left'}", xs, b, right))
    r = rs.standard_normal(5000)
    edges = np.sort(rs.standard_normal(100))
    cases.append(digitize("digitize_random", r, edges))
    cases.append(digitize("digitize_random_right_dec", r, edges[::-1], True))
    return cases


def main():
    rs = np.random.default_rng(23)
    cases = empty_and_ranges() + edges() + bincounts(rs) + densities(rs) + estimators(rs) + digitizes(rs)
    doc = {"numpy": np.__version__, "arrays": ARRAYS, "cases": cases}
    path = os.path.join(OUT, "parity_numpy.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    errors = sum(1 for c in cases if "error" in c["expect"])
    print(f"{path}: {len(cases)} cases ({errors} where numpy raises), {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()

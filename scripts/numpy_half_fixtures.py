#!/usr/bin/env python3
"""numpy's histograms of float16 and bfloat16 samples, as fixtures for smemkit's tests
(crates/smemkit/tests/half_parity.rs reads crates/smemkit/tests/fixtures/half_numpy.json): arrays
as little-endian 16-bit patterns in hex, floats as the hex of their float64 bits, and per case
numpy's counts and edges or the error it raised.

numpy computes a float16 histogram in float16 where its operands are float16 (NEP 50): without a
range every step (min, max, linspace, the bin estimate) is float16 arithmetic; with a range the
difference x - first is float16 and the rest float64. bfloat16 comes from ml_dtypes, whose type
does not promote weakly: with a range numpy computes as for float64 data, without one in
bfloat16. The estimators' cases (`rule`) give numpy's bins for each of its estimators. Run with
numpy 2 and ml_dtypes:  python3 scripts/numpy_half_fixtures.py
"""
import json
import pathlib
import struct
import warnings

import ml_dtypes
import numpy as np

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/smemkit/tests/fixtures/half_numpy.json"


def hexf(v):
    return struct.pack("<d", float(v)).hex()


ARRAYS = {}


def case(name, a, bins, rng=None, data=None):
    """One np.histogram call; `data` names the array in the document's `arrays` table."""
    ARRAYS[data] = {
        "dtype": "float16" if a.dtype == np.float16 else "bfloat16",
        "bits": a.view(np.uint16).astype("<u2").tobytes().hex(),
    }
    c = {
        "name": name,
        "data": data,
        "range": None if rng is None else [hexf(rng[0]), hexf(rng[1])],
    }
    if isinstance(bins, (int, np.integer)):
        c["bins"] = int(bins)
    elif isinstance(bins, str):
        c["rule"] = bins
    else:
        c["edges"] = [hexf(e) for e in bins]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            counts, edges = np.histogram(a, bins=bins, range=rng)
    except (ValueError, IndexError) as e:
        c["expect"] = {"error": type(e).__name__ + ": " + str(e)}
        return c
    c["expect"] = {
        "counts": [int(x) for x in counts],
        "edges_dtype": str(edges.dtype),
        # The edges in their own type's little-endian bytes (16-bit types as their bit patterns).
        "edges": edges.astype(edges.dtype.newbyteorder("<")).tobytes().hex(),
    }
    return c


def main():
    rng = np.random.default_rng(23)
    cases = []
    for dt in (np.float16, ml_dtypes.bfloat16):
        tag = "f16" if dt == np.float16 else "bf16"
        datasets = {
            "normal": rng.normal(size=1000),
            "normal_x100": rng.normal(size=1000) * 100,
            "uniform_0_1": rng.random(1000),
            "shifted": 1000 + rng.normal(size=1000) * 3,
            "ints": rng.integers(-20, 20, 1000).astype(np.float64),
            "one_value": np.full(50, 2.5),
            "tiny": rng.normal(size=7) * 1e-3,
            "empty": np.zeros(0),
        }
        for dname, values in datasets.items():
            a = values.astype(dt)
            for n in (1, 3, 10, 64, 100, 256, 1000, 2048, 4096):
                for r in (None, (-4.0, 4.0), (-1.1, 2.3), (0.1, 0.7), (2.5, 2.5), (990.0, 1010.0)):
                    # bfloat16 with a range is numpy's float64 histogram (tested elsewhere): its
                    # large float64 edge arrays are left out.
                    if tag == "bf16" and r is not None and n > 256:
                        continue
                    cases.append(case(f"{tag}_{dname}_{n}_{r}", a, n, r, f"{tag}_{dname}"))
            a = values.astype(dt)
            for edges in ([-3.0, -1.0, 0.0, 0.5, 2.0, 3.0], [0.1, 0.2, 0.30000001, 0.4], [-np.inf, 0.0, np.inf]):
                cases.append(case(f"{tag}_{dname}_edges_{edges}", a, np.array(edges), None, f"{tag}_{dname}"))
            # numpy's estimators compute in the samples' type (float16; bfloat16 through
            # ml_dtypes, whose sums run one value at a time).
            for rule in ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"):
                for r in (None, (-1.1, 2.3), (990.0, 1010.0), (2.5, 2.5)):
                    cases.append(case(f"{tag}_{dname}_{rule}_{r}", a, rule, r, f"{tag}_{dname}"))
        # NaN and infinity: refused without a range, tallied with one.
        a = np.array([0.5, np.nan, 1.5, np.inf, -np.inf, 2.0], dtype=dt)
        cases.append(case(f"{tag}_nan_inf_range", a, 4, (0.0, 2.0), f"{tag}_nan_inf"))
        cases.append(case(f"{tag}_nan_inf_norange", a, 4, None, f"{tag}_nan_inf"))
    doc = {"numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__, "arrays": ARRAYS, "cases": cases}
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()

"""Histograms numpy bins in types the engines do not compute in (``_typed_bins``): long double
samples, ranges and edges, ranges whose type numpy mixes with the samples' (a float16 range over
float32 or int16 samples, a numpy scalar beside a Python float it cannot hold), and weights numpy
sums in their own type (Decimal, Fraction, long double). numpy is the oracle on fresh random
inputs: counts, sums, edges and their dtypes identical."""

import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import smemkit

from test_histogram import hist

LONG = np.longdouble
needs_long = pytest.mark.skipif(np.finfo(LONG).nmant <= np.finfo(np.float64).nmant,
                                reason="long double is float64 on this platform")


def same(got, want):
    (h, e), (H, E) = got, want
    assert h.dtype == H.dtype, (h.dtype, H.dtype)
    assert e.dtype == E.dtype, (e.dtype, E.dtype)
    assert h.shape == H.shape
    assert list(h) == list(H)  # exact, object sums included
    np.testing.assert_array_equal(e, E)


def _long_samples(rng, n):
    """Long double samples whose values float64 cannot hold (offsets below its precision)."""
    base = rng.standard_normal(n).astype(LONG) * 3
    return base + rng.integers(-4, 5, n).astype(LONG) * np.finfo(LONG).eps


@needs_long
def test_long_double_samples(rng):
    for _ in range(20):
        n = int(rng.integers(0, 3000))
        x = _long_samples(rng, n)
        bins = int(rng.integers(1, 300))
        lo, hi = sorted(rng.standard_normal(2) * 3)
        for r in ([None] if n else []) + [(float(lo), float(hi)), (LONG(lo), LONG(hi) + np.finfo(LONG).eps),
                                          (int(np.floor(lo)), int(np.ceil(hi)) + 1)]:
            same(hist(x, bins, range=r), np.histogram(x, bins, range=r))
            np.testing.assert_array_equal(smemkit.histogram_bin_edges(x, bins, range=r),
                                          np.histogram_bin_edges(x, bins, range=r))
        w = rng.standard_normal(n).astype(np.float32)
        same(hist(x, bins, range=(lo, hi), weights=w), np.histogram(x, bins, (lo, hi), weights=w))
        d = hist(x, bins, range=(lo, hi), density=True)
        want = np.histogram(x, bins, range=(lo, hi), density=True)
        np.testing.assert_array_equal(d[0], want[0])


@needs_long
@pytest.mark.parametrize("small", [np.float16, np.float32, np.float64, np.int16, np.uint8])
def test_a_long_double_range_bins_narrower_samples_in_long_double(rng, small):
    eps = np.finfo(LONG).eps
    for _ in range(10):
        x = (rng.standard_normal(2000) * 20).astype(small)
        lo = LONG(float(x.min())) + eps * int(rng.integers(-2, 3))
        hi = LONG(float(x.max())) - eps * int(rng.integers(-2, 3))
        bins = int(rng.integers(1, 200))
        same(hist(x, bins, range=(lo, hi)), np.histogram(x, bins, range=(lo, hi)))


@needs_long
def test_numpys_precision_cases():
    # The bound moves between the types: 1.0 lies outside [1 + eps, 2] in long double only.
    eps = np.finfo(LONG).eps
    for small in (np.float16, np.float32, np.float64):
        for r in (np.array([1.0 + eps, 2.0], LONG), np.array([0.0, 1.0 - eps], LONG)):
            got = hist(np.array([1.0], small), bins=1, range=r)
            same(got, np.histogram(np.array([1.0], small), bins=1, range=r))
            assert got[0][0] == 0


@needs_long
def test_long_double_edges(rng):
    eps = np.finfo(LONG).eps
    for _ in range(10):
        x = np.concatenate([_long_samples(rng, 1500), [np.nan, np.inf, -np.inf]]).astype(LONG)
        edges = np.sort(rng.standard_normal(int(rng.integers(2, 60))).astype(LONG) * 3)
        edges[1:] += eps * rng.integers(0, 3, edges.size - 1)
        edges = np.maximum.accumulate(edges)
        edges = np.concatenate([edges, edges[-1:]])  # a zero-width last bin
        same(hist(x, edges), np.histogram(x, edges))
        x64 = rng.standard_normal(1500) * 3
        same(hist(x64, edges), np.histogram(x64, edges))


@pytest.mark.parametrize("x_type, range_", [
    (np.float32, (np.float16(-2), np.float16(3))),
    (np.int16, (np.float16(-30), np.float16(41))),
    (np.float64, (np.float32(-1), 0.1)),   # 0.1: a Python float float32 cannot hold
    (np.float32, (np.float32(-1.5), 2.7)),
])
def test_ranges_numpy_mixes_with_the_samples_type(rng, x_type, range_):
    for _ in range(20):
        x = (rng.standard_normal(3000) * (20 if x_type == np.int16 else 1.5)).astype(x_type)
        bins = int(rng.integers(1, 400))
        same(hist(x, bins, range=range_), np.histogram(x, bins, range=range_))
        np.testing.assert_array_equal(smemkit.histogram_bin_edges(x, bins, range=range_),
                                      np.histogram_bin_edges(x, bins, range=range_))
        w = rng.integers(-5, 6, x.size).astype(np.int32)
        same(hist(x, bins, range=range_, weights=w), np.histogram(x, bins, range_, weights=w))


@pytest.mark.parametrize("make", [lambda v: Decimal(int(v)) / 8, lambda v: Fraction(int(v), 7)])
def test_object_weights_are_summed_exactly_as_numpy_sums_them(rng, make):
    for _ in range(10):
        n = int(rng.integers(1, 800))
        x = rng.standard_normal(n) * 2
        w = np.array([make(v) for v in rng.integers(-50, 50, n)], dtype=object)
        for bins, r in ((int(rng.integers(1, 40)), None), (17, (-1.0, 1.5)),
                        (np.sort(rng.standard_normal(9)) * 2, None)):
            got = hist(x, bins, range=r, weights=w)
            want = np.histogram(x, bins, range=r, weights=w)
            assert got[0].dtype == object
            # Sums are exact in both: numpy's running totals differenced equal the bin sums.
            assert [Fraction(v) for v in got[0]] == [Fraction(v) for v in want[0]]
            np.testing.assert_array_equal(got[1], want[1])


@needs_long
def test_long_double_weights(rng):
    x = rng.standard_normal(2000)
    w = rng.integers(-9, 10, x.size).astype(LONG) / 4  # exact sums in any order
    for bins in (30, np.linspace(-2, 2, 11)):
        same(hist(x, bins, range=(-3.0, 3.0), weights=w), np.histogram(x, bins, (-3.0, 3.0), weights=w))


@pytest.mark.parametrize("rule", ["auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"])
def test_estimators_in_numpys_types(rng, rule):
    # numpy computes the width in the samples' (long double) type, or with the mixed range's
    # values: the number of bins and the edges must be numpy's.
    cases = []
    for n in (1, 2, 5, 100, 1500):
        if np.finfo(LONG).nmant > np.finfo(np.float64).nmant:
            x = _long_samples(rng, n)
            cases += [(x, None), (x, (LONG(-1), LONG(2) + np.finfo(LONG).eps)), (x, (-1.5, 1.0)),
                      (np.round(x * 4), None), (x, (LONG(0.5), LONG(0.5)))]
            cases.append((x.astype(np.float64), (LONG(-2), LONG(1.5))))
        y = rng.standard_normal(n).astype(np.float32) * 3
        cases += [(y, (np.float16(-2), np.float16(3))),
                  ((y * 10).astype(np.int16), (np.float16(-30), np.float16(41)))]
    for x, r in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want = np.histogram(x, rule, range=r)
            except ValueError:
                with pytest.raises(ValueError):
                    hist(x, rule, range=r)
                continue
            got = hist(x, rule, range=r)
            edges = smemkit.histogram_bin_edges(x, rule, range=r)
        same(got, want)
        np.testing.assert_array_equal(edges, want[1])
        assert edges.dtype == want[1].dtype


@needs_long
def test_what_the_typed_path_does_not_take_says_so(rng):
    x = _long_samples(rng, 100)
    with pytest.raises(NotImplementedError, match="out_of_range='clamp'"):
        hist(x, 10, range=(-1.0, 1.0), out_of_range="clamp")
    w = np.array([Decimal(1)] * 100, dtype=object)
    with pytest.raises(TypeError, match="weighted data"):
        hist(x.astype(np.float64), "auto", weights=w)
    with pytest.raises(ValueError, match="not finite"):
        hist(np.array([1.0, np.nan], LONG), 4)
    with pytest.raises(ValueError, match="max must be larger"):
        hist(x, 4, range=(LONG(1), LONG(0)))


def test_bins_without_width_in_numpys_arithmetic_are_refused_as_numpy_refuses_them():
    # A float16 range over float32 samples: numpy's edges are stepped in float16, so thousands of
    # bins over [-2, 3] repeat edges, and numpy refuses them ("Too many bins").
    x = np.array([-1.9, 0.5, 2.5], np.float32)
    r = (np.float16(-2), np.float16(3))
    with pytest.raises(ValueError, match="Too many bins"):
        np.histogram(x, 9932, range=r)
    with pytest.raises(ValueError, match="Too many bins"):
        hist(x, 9932, range=r)
    same(hist(x, 1000, range=r), np.histogram(x, 1000, range=r))

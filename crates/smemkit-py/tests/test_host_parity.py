"""numpy behaviours of host arrays that need more than float64 arithmetic: float16 and bfloat16
samples (binned in their own arithmetic, as numpy and numpy with ml_dtypes do), a range of float32
or float16 scalars (numpy computes edges and bins in that type), infinite edges, bins of zero
width, and integer edges beyond 2**53 compared exactly with integer samples. numpy is the oracle,
on fresh random inputs; counts, edges and their dtypes must be identical."""

import warnings

import numpy as np
import pytest

import smemkit

from test_histogram import hist, same as same_values

try:
    import ml_dtypes
except ImportError:  # scripts/test installs it; a plain environment may not have it
    ml_dtypes = None

needs_ml_dtypes = pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes")


def same(got, want):
    """test_histogram's check, and the edges bit for bit (-0.0 is not 0.0)."""
    same_values(got, want)
    np.testing.assert_array_equal(np.asarray(got[1], np.float64).view(np.uint64),
                                  np.asarray(want[1], np.float64).view(np.uint64))


def ranges(rng, x, scale):
    """Ranges of every kind numpy treats differently: Python floats and ints, numpy scalars of
    float64 and of the samples' type, the data's own extremes as numpy scalars, one value."""
    lo, hi = sorted(rng.standard_normal(2) * scale * 2)
    out = [None, (float(lo), float(hi)), (int(np.floor(lo)), int(np.ceil(hi))),
           (np.float64(lo), np.float64(hi)), (float(lo), float(lo))]
    if x.dtype.kind == "f" and x.dtype.itemsize in (2, 4):
        out.append((x.dtype.type(lo), x.dtype.type(hi)))
    if x.size:
        out.append((x.min(), x.max()))
    return out


def numpy_or_none(x, bins, r):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return np.histogram(x, bins, r)
        except ValueError:
            return None
        except IndexError:
            # numpy with ml_dtypes' bfloat16 can index past its edges (its float64 estimate
            # against bfloat16 edges): numpy has no answer to compare with.
            if x.dtype.kind == "f":
                raise
            return False


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("scale", [1.0, 300.0, 1e-3])
def test_small_floats_every_kind_of_range(rng, dtype, scale):
    for _ in range(12):
        x = (rng.standard_normal(int(rng.integers(0, 4000))) * scale).astype(dtype)
        bins = int(rng.integers(1, 2500))
        for r in ranges(rng, x, scale):
            want = numpy_or_none(x, bins, r)
            if want is None:
                with pytest.raises(ValueError):
                    hist(x, bins, range=r)
                continue
            same(hist(x, bins, range=r), want)
            np.testing.assert_array_equal(smemkit.histogram_bin_edges(x, bins, range=r),
                                          np.histogram_bin_edges(x, bins, range=r))


def test_float16_near_ties_of_its_edges(rng):
    # float64 edges just above a float16 tie: rounded once (numpy), not through float32.
    x = rng.standard_normal(3000).astype(np.float16)
    r = (-0.6513421715553888, 3.1088204266713935)
    same(hist(x, 1759, range=r), np.histogram(x, 1759, range=r))


def test_float16_weights_density_and_views(rng):
    x = (rng.standard_normal((60, 50)) * 4).astype(np.float16)
    w = rng.random((60, 50)).astype(np.float32)
    h, e = hist(x.T, 30, range=(-4, 4), weights=w.T)
    H, E = np.histogram(x.T, 30, range=(-4, 4), weights=w.T)
    assert h.dtype == H.dtype and e.dtype == E.dtype
    np.testing.assert_allclose(h, H, rtol=1e-6)
    np.testing.assert_array_equal(e, E)
    same(hist(x, 30, density=True), np.histogram(x, 30, density=True))
    same(hist(x[::3, 1::2], 17), np.histogram(x[::3, 1::2], 17))
    same(hist(x.astype(">f2"), 17), np.histogram(x.astype(">f2"), 17))


def test_float16_nan_and_infinity_as_numpy():
    x = np.array([1.0, np.nan, 2.0], np.float16)
    with pytest.raises(ValueError, match="not finite"):
        hist(x, 4)
    same(hist(x, 4, range=(0, 3)), np.histogram(x, 4, range=(0, 3)))
    y = np.array([1.0, np.inf, -np.inf, 2.0], np.float16)
    same(hist(y, 4, range=(0, 3)), np.histogram(y, 4, range=(0, 3)))


ESTIMATORS = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")


@pytest.mark.parametrize("rule", ESTIMATORS)
def test_float16_estimators_are_numpys(rng, rule):
    # numpy computes the statistics of float16 data in float16 (sums in float32, each result and
    # each deviation, square or cube rounded to float16): bins and edges as numpy's.
    sizes = [1, 2, 3, 7, 8, 9, 100, 129, 1000, 8191, 8193, 20000]
    if rule == "stone":
        sizes = sizes[:-2]
    for n in sizes:
        for scale in (1.0, 40.0, 1e-3, 3000.0):
            base = rng.standard_normal(n) * scale
            for x in (base.astype(np.float16), np.round(base).astype(np.float16),
                      (np.abs(base) ** 2).astype(np.float16)):
                for r in (None, (-0.5 * scale, 1.3 * scale), (0.25, 0.25)):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        try:
                            want = np.histogram(x, rule, range=r)
                        except ValueError as e:
                            # numpy's repeated float16 edges ("Too many bins"), or its 0 bins
                            # of a float16 std that overflowed (an infinite width: a negative
                            # bin number reaches its bincount).
                            with pytest.raises(ValueError):
                                hist(x, rule, range=r)
                            continue
                        got = hist(x, rule, range=r)
                    same(got, want)
                    assert got[1].dtype == want[1].dtype


@needs_ml_dtypes
@pytest.mark.parametrize("rule", ESTIMATORS)
def test_bfloat16_estimators_are_numpys(rng, rule):
    # numpy with ml_dtypes computes the statistics of bfloat16 data in bfloat16 (sums, means,
    # deviations and percentiles rounded to it): bins and edges as numpy's.
    # 'stone' histograms each case 100 times: fewer cases.
    sizes = [1, 2, 3, 9, 100, 1000, 8193] if rule != "stone" else [2, 9, 1000]
    for n in sizes:
        for scale in (1.0, 40.0, 1e-3) if rule != "stone" else (40.0,):
            base = rng.standard_normal(n) * scale
            for x in (base.astype(ml_dtypes.bfloat16), np.round(base).astype(ml_dtypes.bfloat16),
                      (np.abs(base) ** 2).astype(ml_dtypes.bfloat16)):
                for r in (None, (-0.5 * scale, 1.3 * scale), (0.25, 0.25), (x.min(), x.max())):
                    want = numpy_or_none_rule(x, rule, r)
                    if want is None:
                        with pytest.raises(ValueError):
                            hist(x, rule, range=r)
                        continue
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        got = hist(x, rule, range=r)
                        edges = smemkit.histogram_bin_edges(x, rule, range=r)
                    same(got, want)
                    assert got[1].dtype == want[1].dtype
                    assert edges.dtype == want[1].dtype
                    np.testing.assert_array_equal(edges, want[1])


def numpy_or_none_rule(x, rule, r):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return np.histogram(x, rule, range=r)
        except ValueError:
            return None


@needs_ml_dtypes
@pytest.mark.parametrize("scale", [1.0, 50.0])
def test_bfloat16_as_numpy_with_ml_dtypes(rng, scale):
    for _ in range(10):
        x = (rng.standard_normal(int(rng.integers(1, 4000))) * scale).astype(ml_dtypes.bfloat16)
        bins = int(rng.integers(1, 600))
        # A range of Python ints keeps numpy in bfloat16 (its edges too), one of floats widens
        # it to float64: both are in ranges().
        # A range of bfloat16 scalars keeps numpy in bfloat16 arithmetic (_typed_bins).
        for r in ranges(rng, x, scale):
            want = numpy_or_none(x, bins, r)
            if want is None or want is False:
                continue
            same(hist(x, bins, range=r), want)


@needs_ml_dtypes
def test_bfloat16_range_bounds_compare_as_ml_dtypes(rng):
    # numpy with ml_dtypes compares bfloat16 samples with Python floats in float32: 1.296875 is
    # kept by a range ending at 1.296874999999 (last bin), and a sample at 0.5 under a range from
    # 0.5 + 1e-12 gets bin -1 (numpy fails). With float64 scalars it compares in float64.
    x = np.concatenate([rng.standard_normal(3000) * 0.5, [1.296875] * 7, [1.3046875, -1.0, 0.5]])
    x = x.astype(ml_dtypes.bfloat16)
    weights = (None, rng.random(x.size), rng.integers(0, 9, x.size), rng.random(x.size) + 1j)
    for r in ((-1.0, 1.296874999999), (-1.0, 1.296875), (-1.0, 1.3),
              (np.float64(-1.0), np.float64(1.296874999999)), (0.5 + 1e-12, 2.0),
              (np.float64(0.5 + 1e-12), np.float64(2.0)), (0.5 - 1e-12, 1.296874999999)):
        for w in weights:
            for density in (False, True):
                try:
                    want = np.histogram(x, 5, range=r, weights=w, density=density)
                except ValueError as e:
                    with pytest.raises(ValueError, match=str(e)):
                        hist(x, 5, range=r, weights=w, density=density)
                    continue
                same(hist(x, 5, range=r, weights=w, density=density), want)
    # The comparisons differ: these ranges keep 7 more samples as Python floats than as float64.
    assert np.histogram(x, 5, range=(-1.0, 1.296874999999))[0][-1] == \
        np.histogram(x, 5, range=(np.float64(-1.0), np.float64(1.296874999999)))[0][-1] + 7


@needs_ml_dtypes
def test_bfloat16_edges_round_as_ml_dtypes():
    # ml_dtypes converts float64 to bfloat16 through float32: a linspace value just off a tie of
    # bfloat16 lands on it and goes to even (edge 100 here), which a single rounding would not.
    x = np.array([-0.00323486328125, 0.0034027099609375, 0.0], ml_dtypes.bfloat16)
    same(hist(x, 400), np.histogram(x, 400))
    y = np.array([1.0, 1.5, 3.0], ml_dtypes.bfloat16)
    same(hist(y, 7, range=(1, 3)), np.histogram(y, 7, range=(1, 3)))
    # numpy scalars of an integer type do not promote with bfloat16: numpy's TypeError.
    with pytest.raises(TypeError):
        np.histogram(y, 7, range=(np.int64(1), np.int64(3)))
    with pytest.raises(TypeError):
        hist(y, 7, range=(np.int64(1), np.int64(3)))


def test_a_range_of_the_samples_type_keeps_numpy_in_it(rng):
    # range=(x.min(), x.max()) of float32 data: numpy's float32 linspace and bins, which differ
    # from its float64 ones over the same values given as Python floats.
    x = rng.standard_normal(20000).astype(np.float32)
    lo, hi = np.float32(-3.3), np.float32(4.1)
    typed = hist(x, 33, range=(lo, hi))
    same(typed, np.histogram(x, 33, range=(lo, hi)))
    assert not np.array_equal(typed[1], np.histogram(x, 33, range=(float(lo), float(hi)))[1])
    same(hist(x, 33, range=(float(lo), float(hi))), np.histogram(x, 33, range=(float(lo), float(hi))))
    with pytest.raises(ValueError, match="max must be larger than min"):
        hist(x, 3, range=(hi, lo))
    with pytest.raises(ValueError, match="not finite"):
        hist(x, 3, range=(np.float32(0), np.float32(np.inf)))


@pytest.mark.parametrize("range_type", [np.float32, np.float16])
def test_a_narrower_range_than_the_samples(rng, range_type):
    # float64 and wide integer samples over float32 or float16 scalars: numpy's edges and width
    # in the range's type, each bin in float64; narrow integers promote to the range's type.
    wider_differs = False
    for _ in range(40):
        scale = 10.0 ** rng.integers(-2, 4)
        x64 = rng.standard_normal(int(rng.integers(0, 5000))) * scale
        lo, hi = sorted(rng.standard_normal(2) * scale * 1.5)
        lo, hi = range_type(lo), range_type(hi)
        nbins = int(rng.integers(1, 3000))
        samples = [x64, np.round(x64).astype(np.int64), np.round(x64).astype(np.uint32),
                   np.clip(np.round(x64), -128, 127).astype(np.int8)]
        # Edges in the range's type and the samples' own values: ties at every edge.
        samples.append(np.concatenate([x64, np.linspace(lo, hi, nbins + 1, dtype=range_type)]))
        for x in samples:
            for r in ((lo, hi), (lo, lo), (lo, float(hi)), (0, hi)):
                want = numpy_or_none(x, nbins, r)
                if want is None:
                    with pytest.raises(ValueError):
                        hist(x, nbins, range=r)
                    continue
                got = hist(x, nbins, range=r)
                same(got, want)
                assert got[1].dtype == want[1].dtype
                if r == (lo, hi):
                    edges = smemkit.histogram_bin_edges(x, nbins, range=r)
                    assert edges.dtype == want[1].dtype
                    np.testing.assert_array_equal(edges, want[1])
                    wide = np.histogram_bin_edges(x, nbins, range=(float(lo), float(hi)))
                    wider_differs = wider_differs or not np.array_equal(wide, want[1])
    # The range's type counts: numpy's float64 edges of the same two values differ.
    assert wider_differs


def test_datetime_and_timedelta_samples(rng):
    begin = np.datetime64("2000-01-01", "D")
    offsets = rng.integers(-50, 400, 3000)
    edges = np.array([-10, 0, 3, 3, 40, 365])
    for samples, bins in (
        (begin + offsets, begin + edges),
        ((begin + offsets).astype("datetime64[h]"), begin + edges),  # units promote
        (begin + offsets, (begin + edges).astype("datetime64[s]")),
        (offsets.astype("timedelta64[D]"), edges.astype("timedelta64[D]")),
        (np.append(begin + offsets, np.datetime64("NaT")), begin + edges),
    ):
        for density in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                n, e = smemkit.histogram(samples, bins, density=density)
                N, E = np.histogram(samples, bins, density=density)
            np.testing.assert_array_equal(n, N)
            assert n.dtype == N.dtype and e.dtype == E.dtype
            np.testing.assert_array_equal(e, E)
        w = rng.standard_normal(samples.size)
        np.testing.assert_allclose(smemkit.histogram(samples, bins, weights=w)[0],
                                   np.histogram(samples, bins, weights=w)[0])
        np.testing.assert_array_equal(smemkit.histogram_bin_edges(samples, bins),
                                      np.histogram_bin_edges(samples, bins))
    for bins in (5, "auto", np.array([0, 2, 7])):
        with pytest.raises(TypeError):
            smemkit.histogram(begin + offsets, bins)
    with pytest.raises(ValueError, match="NaT"):
        smemkit.histogram(begin + offsets, np.array([begin, np.datetime64("NaT")]))
    with pytest.raises(ValueError, match="NaT"):
        smemkit.histogram(np.array([np.datetime64("NaT")]), begin + edges, out_of_range="clamp")


def test_complex_weights(rng):
    x = rng.standard_normal(5000)
    w = rng.standard_normal(5000) + 1j * rng.standard_normal(5000)
    for bins, r in ((17, None), (9, (-1, 2)), (np.array([-3.0, 0, 0.5, 4]), None)):
        for weights in (w, w.astype(np.complex64)):
            for density in (False, True):
                got = smemkit.histogram(x, bins, r, weights=weights, density=density)
                want = np.histogram(x, bins, r, weights=weights, density=density)
                assert got[0].dtype == want[0].dtype
                np.testing.assert_allclose(got[0], want[0], rtol=1e-5 if weights.dtype == np.complex64 else 1e-12)
                np.testing.assert_array_equal(got[1], want[1])


def test_infinite_edges_and_bins_of_zero_width(rng):
    x = np.concatenate([rng.standard_normal(3000) * 3, [np.inf, -np.inf, np.nan, 2.0, 2.0, 0.0]])
    for edges in ([-np.inf, 0, 2, 2, np.inf], [0, 2, 2], [-np.inf, -1, 1], [1, 1],
                  [0, 0, 0, 1], [-np.inf, np.inf], [2.0, 2.0, 3.0, np.inf]):
        for sample in (x, x.astype(np.float32), x[np.isfinite(x)].astype(np.int64)):
            same(hist(sample, edges), np.histogram(sample, edges))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # numpy divides by the zero widths
                got = hist(sample, edges, density=True)[0]
                want = np.histogram(sample, edges, density=True)[0]
            np.testing.assert_array_equal(got, want)


def test_integer_edges_are_exact_beyond_2_53():
    big = 2**60
    x = np.array([big - 1, big, big + 1, 2**53 + 1, 5, -3], np.int64)
    for edges in (np.array([big - 1, big + 1]), np.array([0, 2**53]), np.array([-5, 5, big])):
        same(hist(x, edges), np.histogram(x, edges))
    u = np.array([2**64 - 1, 2**63, 2**63 + 1, 7], np.uint64)
    for edges in (np.array([2**63, 2**63 + 1, 2**64 - 1], np.uint64), np.array([0, 10], np.uint8)):
        same(hist(u, edges), np.histogram(u, edges))
    # Float samples compare with integer edges in float64, as numpy does.
    f = np.array([float(big)], np.float64)
    same(hist(f, np.array([big - 1, big + 1])), np.histogram(f, np.array([big - 1, big + 1])))


HALVES = [np.float16] + ([ml_dtypes.bfloat16] if ml_dtypes is not None else [])


@pytest.mark.parametrize("half", HALVES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("scale", [1.0, 40.0, 0.01])
def test_16_bit_float_joint_histograms(rng, scale, half):
    # Axes over the data's range take numpy's edges of the 16-bit extremes (float16: its linspace
    # in float16, repeated edges and all; bfloat16: float64); the density divides by their
    # widths in their type, as numpy's does.
    for _ in range(8):
        n, d = int(rng.integers(0, 3000)), int(rng.integers(1, 4))
        x = (rng.standard_normal((n, d)) * scale).astype(half)
        bins = [int(rng.integers(1, 400 if d == 1 else 50)) for _ in range(d)]
        for r in (None, [(-1.0, 2.0)] * d, [None] * (d - 1) + [(-3, 3)]):
            for density in (False, True):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        H, E = np.histogramdd(x, bins, r, density=density)
                    except ValueError:
                        continue
                    h, e = smemkit.histogramdd(x, bins, r, density=density, backend="cpu")
                np.testing.assert_array_equal(h, H)
                for got, want in zip(e, E):
                    assert got.dtype == want.dtype
                    np.testing.assert_array_equal(got, want)
    x, y = (rng.standard_normal((2, 700)) * scale).astype(half)
    h, xe, ye = smemkit.histogram2d(x, y, [9, 31])
    H, XE, YE = np.histogram2d(x, y, [9, 31])
    np.testing.assert_array_equal(h, H)
    np.testing.assert_array_equal(xe, XE)
    assert ye.dtype == YE.dtype == (np.float16 if half == np.float16 else np.float64)
    one = np.full((10, 2), 3.0, half)  # one value: numpy widens it by 0.5 (bfloat16: in float32)
    for density in (False, True):
        h, e = smemkit.histogramdd(one, 5, density=density)
        H, E = np.histogramdd(one, 5, density=density)
        np.testing.assert_array_equal(h, H)
        for got, want in zip(e, E):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_digitize_integer_bins_beyond_2_53(rng):
    big = 2**60
    x = np.concatenate([big + rng.integers(-5, 5, 200), rng.integers(-9, 9, 50)]).astype(np.int64)
    for bins in (np.array([big - 2, big, big + 1, big + 3]), np.array([-1, 2**53, big]),
                 np.array([0, 2**53 + 1], np.uint64), np.array([big + 3, big, big - 2]),
                 np.array([3, 1, -4], np.int8)):
        for right in (False, True):
            got = smemkit.digitize(x, bins, right=right)
            if bins[0] > bins[-1] and bins.dtype == np.int64:
                # numpy finds the direction in float64 (its gh-11022): compare with the exact rule.
                want = len(bins) - np.searchsorted(bins[::-1], x, side="left" if right else "right")
            else:
                want = np.digitize(x, bins, right=right)
            np.testing.assert_array_equal(got, want)
    u = np.array([2**64 - 1, 2**63, 7], np.uint64)
    np.testing.assert_array_equal(smemkit.digitize(u, np.array([2**63, 2**64 - 2], np.uint64)),
                                  np.digitize(u, np.array([2**63, 2**64 - 2], np.uint64)))


def test_joint_integer_edges_beyond_2_53(rng):
    big = 2**60
    x = rng.integers(-3, 3, 500)
    y = big + rng.integers(-4, 4, 500)
    for bins in ((np.array([-1, 1]), np.array([big - 1, big, big + 1])),
                 (np.array([-2, 0, 2]), np.array([big - 3, big + 3])),
                 (4, np.array([big - 2, big + 2]))):
        for density in (False, True):
            h, e = smemkit.histogramdd((x, y), bins=bins, density=density)
            H, E = np.histogramdd((x, y), bins=bins, density=density)
            np.testing.assert_array_equal(h, H)
            for got, want in zip(e, E):
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
    h = smemkit.histogram2d(x, y, bins=bins)
    H = np.histogram2d(x, y, bins=bins)
    np.testing.assert_array_equal(h[0], H[0])
    # uint64 edges beside int64 samples: numpy searches in float64 but tests the last edge
    # exactly, so refused by name.
    with pytest.raises(NotImplementedError, match="signedness"):
        smemkit.histogramdd((x, y), bins=(2, np.array([big - 3, big + 3], np.uint64)))


def test_float16_digitize(rng):
    x = (rng.standard_normal(2000) * 3).astype(np.float16)
    for bins in (np.linspace(-4, 4, 17), np.array([3.0, 1.0, 1.0, -2.0]), np.array([0.5], np.float16)):
        for right in (False, True):
            np.testing.assert_array_equal(smemkit.digitize(x, bins, right=right),
                                          np.digitize(x, bins, right=right))


@needs_ml_dtypes
def test_bfloat16_range_bounds_that_round_onto_a_sample_in_float32(rng):
    # numpy with ml_dtypes compares bfloat16 samples with the range in float32: a bound just
    # below a bfloat16 value (or just above it, for the lower bound) keeps that value.
    for _ in range(20):
        x = (rng.standard_normal(500) * 2).astype(ml_dtypes.bfloat16)
        v = sorted(float(t) for t in rng.choice(x, 2, replace=False))
        for r in ((v[0] - 1e-12, v[1] - 1e-12), (-5.0, v[1] - 1e-12), (v[0] + 1e-12, 5.0),
                  (v[0] - 1e-3, v[1] + 1e-3)):
            bins = int(rng.integers(1, 50))
            try:
                want = np.histogram(x, bins, range=r)
            except ValueError as e:
                # numpy's own index goes negative for a kept sample below the lower bound.
                with pytest.raises(ValueError, match=str(e)[:20]):
                    hist(x, bins, range=r)
                continue
            same(hist(x, bins, range=r), want)

"""smemkit.histogramdd, histogram2d and digitize against numpy on hard cases: edges, NaN,
out-of-range samples, every layout, weights, density, dtypes, and numpy's errors."""

import numpy as np
import pytest

import smemkit


def same_dd(got, want):
    (h, e), (H, E) = got, want
    assert h.dtype == H.dtype and h.shape == H.shape, (h.dtype, H.dtype, h.shape, H.shape)
    np.testing.assert_array_equal(h, H)
    assert len(e) == len(E)
    for a, b in zip(e, E):
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.int64])
def test_histogramdd_layouts_and_dtypes(rng, dtype):
    x = (rng.standard_normal((3000, 3)) * 20).astype(dtype)
    for sample in (x, np.asfortranarray(x), x[::2], [x[:, 0], x[:, 1], x[:, 2]]):
        for bins in (5, [3, 4, 5]):
            same_dd(smemkit.histogramdd(sample, bins), np.histogramdd(sample, bins))
    rng_ = [(-10, 10), None, (0, 30)]
    same_dd(smemkit.histogramdd(x, 7, range=rng_), np.histogramdd(x, 7, range=rng_))


def test_histogramdd_edges_nan_and_out_of_range(rng):
    x = rng.standard_normal((2000, 2))
    x[::7, 0] = np.nan
    x[::11, 1] = 9.0
    edges = [np.array([-2, -0.5, 0, 0.5, 2]), np.array([-1, 0, 1, 9])]
    same_dd(smemkit.histogramdd(x, edges), np.histogramdd(x, edges))
    mixed = [4, np.array([-1, 0, 1, 9])]
    same_dd(smemkit.histogramdd(x, mixed, range=[(-1, 1), None]),
            np.histogramdd(x, mixed, range=[(-1, 1), None]))
    # samples exactly on the edges, and the last edge included
    e = np.array([0.0, 0.25, 0.5, 1.0])
    pts = np.array([[0.0, 0.25], [0.25, 0.5], [1.0, 1.0], [0.5, 0.0], [1.0000001, 0.5]])
    same_dd(smemkit.histogramdd(pts, [e, e]), np.histogramdd(pts, [e, e]))


def test_histogramdd_weights_and_density(rng):
    x = rng.standard_normal((5000, 3)).astype(np.float32)
    for w in (rng.random(5000), rng.random(5000).astype(np.float32),
              rng.integers(0, 5, 5000)):
        same_dd(smemkit.histogramdd(x, 6, range=[(-3, 3)] * 3, weights=w),
                np.histogramdd(x, 6, range=[(-3, 3)] * 3, weights=w))
    h, e = smemkit.histogramdd(x, [4, 5, 6], density=True)
    H, E = np.histogramdd(x, [4, 5, 6], density=True)
    np.testing.assert_allclose(h, H, rtol=1e-12)
    assert h.dtype == H.dtype
    w = rng.random(5000)
    h, _ = smemkit.histogramdd(x, 4, density=True, weights=w)
    np.testing.assert_allclose(h, np.histogramdd(x, 4, density=True, weights=w)[0], rtol=1e-12)


def test_histogram2d(rng):
    x = rng.standard_normal(4000)
    y = rng.standard_normal(4000).astype(np.float32)
    for bins in (10, [5, 8], np.linspace(-2, 2, 9), [np.linspace(-2, 2, 5), np.array([-1, 0, 3])]):
        h, xe, ye = smemkit.histogram2d(x, y, bins)
        H, XE, YE = np.histogram2d(x, y, bins)
        same_dd((h, [xe, ye]), (H, [XE, YE]))
    w = rng.random(4000)
    h, xe, ye = smemkit.histogram2d(x, y, 12, range=[[-2, 2], [-1, 3]], weights=w)
    H, XE, YE = np.histogram2d(x, y, 12, range=[[-2, 2], [-1, 3]], weights=w)
    same_dd((h, [xe, ye]), (H, [XE, YE]))
    h, _, _ = smemkit.histogram2d(x, y, 7, density=True)
    np.testing.assert_allclose(h, np.histogram2d(x, y, 7, density=True)[0], rtol=1e-12)
    h, xe, ye = smemkit.histogram2d(np.zeros(0), np.zeros(0), 3)
    same_dd((h, [xe, ye]), (np.histogram2d(np.zeros(0), np.zeros(0), 3)[0],
                            list(np.histogram2d(np.zeros(0), np.zeros(0), 3)[1:])))


def test_histogramdd_errors(rng):
    x = rng.standard_normal((100, 2))
    with pytest.raises(ValueError, match="dimension of bins"):
        smemkit.histogramdd(x, [3, 4, 5])
    with pytest.raises(ValueError, match="one entry per dimension"):
        smemkit.histogramdd(x, 3, range=[(0, 1)])
    with pytest.raises(ValueError, match="positive"):
        smemkit.histogramdd(x, 0)
    with pytest.raises(ValueError, match="monotonically increasing"):
        smemkit.histogramdd(x, [np.array([0, 2, 1]), 3])
    with pytest.raises(ValueError, match="scalar or 1d"):
        smemkit.histogramdd(x, [np.ones((2, 2)), 3])
    with pytest.raises(ValueError, match="finite"):
        smemkit.histogramdd(x, 3, range=[(0, np.inf), None])
    with pytest.raises(NotImplementedError, match="float16 scalars"):
        smemkit.histogramdd(x.astype(np.float16), 3, range=[(np.float16(0), np.float16(1))] * 2)
    y = x.copy()
    y[0, 0] = np.nan
    with pytest.raises(ValueError):
        np.histogramdd(y, 3)
    with pytest.raises(ValueError):
        smemkit.histogramdd(y, 3)


@pytest.mark.parametrize("right", [False, True])
def test_digitize(rng, right):
    x = rng.standard_normal(5000) * 3
    x[::13] = np.nan
    x[1] = 1.0
    x[2] = -1.0
    edges = np.array([-2.0, -1.0, 0.0, 1.0, 1.0, 2.0])
    for bins in (edges, edges[::-1], np.array([0.5]), np.array([]), np.array([-1, 0, 4])):
        for xs in (x, x.astype(np.float32), np.round(x[~np.isnan(x)]).astype(np.int32),
                   x.reshape(50, 100), x.reshape(50, 100).T):
            got = smemkit.digitize(xs, bins, right=right)
            want = np.digitize(xs, bins, right=right)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(smemkit.digitize([True, False], [0.5]), np.digitize([True, False], [0.5]))
    np.testing.assert_array_equal(smemkit.digitize(2.5, [1, 2, 3]), np.digitize(2.5, [1, 2, 3]))
    with pytest.raises(ValueError, match="monotonically"):
        smemkit.digitize(x, [0, 2, 1])
    with pytest.raises(ValueError):
        smemkit.digitize(x, [[0, 1]])
    with pytest.raises(TypeError, match="complex"):
        smemkit.digitize(x.astype(complex), [0, 1])
    big = np.array([2**60 - 1, 2**60, 2**60 + 1], np.int64)
    np.testing.assert_array_equal(smemkit.digitize(big, np.array([2**60], np.int64), right=right),
                                  np.digitize(big, np.array([2**60], np.int64), right=right))

"""Integer and bool weights of host arrays: the library sums them exactly in their own dtype,
wrapping around as numpy's histogram does, and refuses what it cannot promise (numpy as the
oracle, on the CPU engine)."""

import numpy as np
import pytest

import smemkit

INTS = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)


def hist(*args, **kwargs):
    return smemkit.histogram(*args, backend="cpu", **kwargs)


@pytest.mark.parametrize("wtype", INTS + (np.bool_,))
@pytest.mark.parametrize("bins", [1, 7, 300])
def test_uniform_bins_match_numpy_bit_for_bit(wtype, bins):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(200_000)
    info = np.iinfo(wtype) if wtype is not np.bool_ else None
    if info is None:
        w = rng.random(x.size) < 0.3
    else:
        # Magnitudes that keep numpy's per-block float64 casts in the int32 range, wrapping in
        # the small types.
        hi = min(info.max, 2**15 - 1)
        lo = max(info.min, -hi)
        w = rng.integers(lo, hi, x.size, endpoint=True).astype(wtype)
    h, e = hist(x, bins, range=(-3, 3), weights=w)
    H, E = np.histogram(x, bins, range=(-3, 3), weights=w)
    assert h.dtype == H.dtype == np.dtype(wtype)
    np.testing.assert_array_equal(h, H)
    np.testing.assert_array_equal(e, E)
    d, _ = hist(x, bins, range=(-3, 3), weights=w, density=True)
    np.testing.assert_array_equal(d, np.histogram(x, bins, range=(-3, 3), weights=w,
                                                  density=True)[0])


@pytest.mark.parametrize("wtype", INTS)
def test_explicit_edges_match_numpy(wtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(100_000)
    edges = np.array([-2.5, -1.0, -0.1, 0.0, 0.3, 1.7, 2.0])
    w = rng.integers(0, 120, x.size).astype(wtype)
    h, _ = hist(x, edges, weights=w)
    H, _ = np.histogram(x, edges, weights=w)
    assert h.dtype == H.dtype
    np.testing.assert_array_equal(h, H)


def test_wrap_around_as_numpy():
    a = np.array([0.1, 0.2, 0.3, 0.7, 5.0])
    w = np.array([100, 100, 3, 1, 1], np.int8)
    for bins in (2, [0.0, 0.5, 1.0]):
        h, _ = hist(a, bins, range=(0, 1) if bins == 2 else None, weights=w)
        H, _ = np.histogram(a, bins, range=(0, 1) if bins == 2 else None, weights=w)
        np.testing.assert_array_equal(h, H)
        assert h.dtype == np.int8 and h[0] == -53


def test_refusals():
    x = np.zeros(8)
    # bool weights with explicit edges: numpy's own TypeError.
    with pytest.raises(TypeError):
        np.histogram(x, [0.0, 1.0], weights=np.ones(8, bool))
    with pytest.raises(TypeError, match="bool"):
        hist(x, [0.0, 1.0], weights=np.ones(8, bool))
    # Sums beyond 2**53 are exact 64-bit integers (numpy's explicit-edges path agrees; its
    # uniform path rounds float64 block sums there).
    big = np.full(8, 2**52 + 1, np.int64)
    h, _ = hist(x, 1, range=(0, 1), weights=big)
    np.testing.assert_array_equal(h, np.histogram(x, [0.0, 1.0], weights=big)[0])
    assert h[0] == 2**55 + 8
    # int32 weights whose block sum leaves int32 with uniform bins: numpy's cast overflows.
    big = np.full(8, 2**30, np.int32)
    with pytest.raises(NotImplementedError, match="int32"):
        hist(x, 1, range=(0, 1), weights=big)
    # With explicit edges numpy's integer cumulative sums wrap: 2**33 is 0 in int32.
    h, _ = hist(x, [0.0, 1.0], weights=big)
    np.testing.assert_array_equal(h, np.histogram(x, [0.0, 1.0], weights=big)[0])

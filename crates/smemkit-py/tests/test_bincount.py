"""smemkit.bincount against numpy.bincount."""

import numpy as np
import pytest

import smemkit


def bincount(*args, **kwargs):
    return smemkit.bincount(*args, backend="cpu", **kwargs)


def same(got, want):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "dtype", [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64]
)
def test_every_integer_dtype(rng, dtype):
    x = rng.integers(0, 120, 10000).astype(dtype)
    same(bincount(x), np.bincount(x))
    same(bincount(x, minlength=500), np.bincount(x, minlength=500))
    same(bincount(x, minlength=3), np.bincount(x, minlength=3))


def test_length_from_the_data():
    same(bincount([0, 0, 7]), np.bincount([0, 0, 7]))
    same(bincount(np.array([70000], np.int32)), np.bincount(np.array([70000], np.int32)))


def test_empty():
    same(bincount([]), np.bincount([]))
    same(bincount([], minlength=4), np.bincount([], minlength=4))
    same(bincount(np.zeros(0, np.int32), minlength=2), np.bincount(np.zeros(0, np.int32), minlength=2))
    same(bincount([], weights=[]), np.bincount([], weights=[]))
    same(bincount([], weights=[1.0], minlength=3), np.bincount([], weights=[1.0], minlength=3))


def test_weights(rng):
    x = rng.integers(0, 50, 5000)
    for w in (rng.random(5000), rng.random(5000).astype(np.float32), rng.integers(0, 9, 5000),
              rng.random(5000) > 0.5):
        got = bincount(x, weights=w)
        want = np.bincount(x, weights=w)
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-12)
    w = np.arange(3, dtype=">f8")
    same(bincount([0, 1, 1], weights=w), np.bincount([0, 1, 1], weights=w))


def test_views_and_bool(rng):
    x = rng.integers(0, 30, 1000)
    same(bincount(x[::3]), np.bincount(x[::3]))
    same(bincount(x[::-1].astype(">i2")), np.bincount(x[::-1].astype(">i2")))
    b = np.array([True, False, True, True])
    same(bincount(b), np.bincount(b))


@pytest.mark.parametrize(
    "args, kwargs",
    [
        (([1, -1],), {}),
        ((np.array([1.0, 2.0]),), {}),
        ((np.zeros(0),), {}),
        ((np.array([[1, 2]]),), {}),
        ((np.int64(3),), {}),
        (([1, 2],), dict(minlength=-1)),
        (([1, 2],), dict(minlength=None)),
        (([1, 2],), dict(weights=[1.0])),
        (([1, 2],), dict(weights=[1j, 2])),
    ],
)
def test_errors_are_numpys_exception_types(args, kwargs):
    with pytest.raises(Exception) as want:
        np.bincount(*args, **kwargs)
    with pytest.raises(want.type):
        bincount(*args, **kwargs)


def test_messages():
    with pytest.raises(ValueError, match="no negative elements"):
        bincount([3, -2])
    with pytest.raises(ValueError, match="same length"):
        bincount([1, 2], weights=[1.0, 2.0, 3.0])

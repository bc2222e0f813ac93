"""The behaviours CuPy's own histogram, bincount, digitize, histogramdd and histogram2d tests check
(cupy_tests/statistics_tests/test_histogram.py: small arrays of every dtype, weights of every
dtype, complex weights, empty inputs, bins given as lists, numpy arrays or CuPy arrays, NaN and
infinite samples and bins, the errors), written here against smemkit with CuPy arrays and numpy
on the host copy as the oracle: values and dtypes as numpy's. CuPy's own restrictions beyond
numpy's (lists of lists as histogramdd bins) are not followed: smemkit follows numpy there. Skipped
without CuPy and a GPU."""

import itertools
import warnings

import numpy as np
import pytest

import smemkit

try:
    import cupy

    _gpu = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:  # no CuPy, or no driver
    cupy, _gpu = None, False

pytestmark = pytest.mark.skipif(not _gpu, reason="needs CuPy and a CUDA GPU")

HIST_TYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
              np.uint8, np.uint16, np.uint32, np.uint64]
BINCOUNT_TYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                  np.uint8, np.uint16, np.uint32, np.bool_]
FLOATS = [np.float16, np.float32, np.float64]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def arange1(n, dtype):
    """1, 2, ..., n (as CuPy's tests shape their inputs), host and device."""
    x = (np.arange(n) + 1).astype(dtype)
    return x, cupy.asarray(x)


def host(v):
    return cupy.asnumpy(v) if isinstance(v, cupy.ndarray) else np.asarray(v)


def same(got, want, exact=True):
    """numpy's values and dtypes, for a result or a tuple of results."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, exact)
        return
    assert isinstance(got, cupy.ndarray), type(got)
    g = host(got)
    assert g.dtype == want.dtype, (g.dtype, want.dtype)
    assert g.shape == want.shape
    if exact:
        np.testing.assert_array_equal(g, want)
    else:
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7)


def both(call, *args, exact=True, **kwargs):
    """``call`` on the host arrays with numpy and on the device arrays with smemkit: the same
    values, or the same kind of error."""
    dev = lambda v: cupy.asarray(v) if isinstance(v, np.ndarray) else v
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = getattr(np, call)(*args, **kwargs)
        except Exception as e:
            with pytest.raises(type(e) if isinstance(e, (TypeError, ValueError)) else Exception):
                getattr(smemkit, call)(*[dev(a) for a in args],
                                       **{k: dev(v) for k, v in kwargs.items()})
            return
        got = getattr(smemkit, call)(*[dev(a) for a in args],
                                     **{k: dev(v) for k, v in kwargs.items()})
    if isinstance(want, list):  # histogramdd's edges
        want, got = tuple(want), tuple(got)
    same(got, want, exact)


@pytest.mark.parametrize("dtype", HIST_TYPES)
def test_histogram_of_every_dtype(dtype):
    x, _ = arange1(10, dtype)
    both("histogram", x)
    both("histogram", np.zeros(10, dtype), 3)
    both("histogram", x, density=True, exact=False)
    both("histogram", x, 4)
    both("histogram", np.array([], dtype))
    edges = arange1(3, dtype)[0]
    both("histogram", x, edges)  # CuPy bins
    same(smemkit.histogram(cupy.asarray(x), edges), np.histogram(x, edges))  # numpy bins
    same(smemkit.histogram(cupy.asarray(x), list(edges)), np.histogram(x, list(edges)))
    with pytest.raises(ValueError):
        smemkit.histogram(cupy.asarray(x), cupy.asarray(np.array([1, 3, 2], dtype)))
    w = (np.arange(11) + 0.5).astype(dtype)
    with pytest.raises(ValueError):
        smemkit.histogram(cupy.asarray(x), range=[1, 9], weights=cupy.asarray(w), density=True)
    both("histogram", np.arange(10, dtype=dtype), weights=np.ones(10, int))
    both("histogram", np.arange(10, dtype=dtype), weights=np.ones(10, float))


@pytest.mark.parametrize("dtype", FLOATS)
def test_histogram_ranges_and_float_weights(dtype):
    a = np.arange(10, dtype=dtype) + dtype(0.5)
    both("histogram", a, range=[0, 9])
    both("histogram", a, range=[1, 10])
    both("histogram", a, range=[1, 9], density=True, exact=False)
    both("histogram", a, range=[1, 9], weights=a, density=True, exact=False)
    v = np.linspace(0, 10, 10, dtype=dtype)
    w = np.concatenate((np.zeros(5, dtype), np.ones(5, dtype)))
    both("histogram", v, bins=np.arange(11), weights=w, exact=False)
    r = np.random.default_rng(1).random(100)
    both("histogram", r, weights=np.ones(100) * 5, exact=False)
    both("histogram", r, weights=np.ones(100) * 5, density=True, exact=False)


@pytest.mark.parametrize("dtype", INTS)
def test_histogram_integer_weights(dtype):
    v = np.array([1, 2, 2, 4], dtype)
    w = np.array([4, 3, 2, 1], dtype)
    both("histogram", v, bins=4, weights=w)
    both("histogram", v, bins=4, weights=w, density=True, exact=False)
    both("histogram", np.arange(9, dtype=dtype), np.array([0, 1, 3, 6, 10], dtype),
         weights=np.array([2, 1, 1, 1, 1, 1, 1, 1, 1], dtype), density=True, exact=False)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_histogram_complex_weights(dtype):
    values = np.array([1.3, 2.5, 2.3])
    weights = (np.array([1, -1, 2]) + 1j * np.array([2, 1, 2])).astype(dtype)
    both("histogram", values, bins=2, weights=weights, exact=False)
    both("histogram", values, bins=np.array([0, 2, 3]), weights=weights, exact=False)


def test_histogram_argument_errors():
    x = cupy.arange(10)
    with pytest.raises(ValueError):
        smemkit.histogram(x, range=[1, 9, 15])
    with pytest.raises(TypeError):
        smemkit.histogram(x, range=10)


@pytest.mark.parametrize("a_type, b_type", itertools.product(HIST_TYPES, HIST_TYPES))
def test_histogram_samples_and_edges_of_any_two_dtypes(a_type, b_type):
    x = arange1(10, a_type)[0]
    both("histogram", x, arange1(4, b_type)[0])
    both("histogram", x, np.arange(10, dtype=np.float64) + 1)


@pytest.mark.parametrize("dtype", BINCOUNT_TYPES)
def test_bincount_of_every_dtype(dtype):
    x = np.arange(3).astype(dtype)
    both("bincount", x)
    both("bincount", np.array([1, 2, 2, 1, 2, 4], dtype))
    both("bincount", x, minlength=5)
    both("bincount", x, minlength=0)
    for bad in (np.array([[1]], dtype), np.zeros((), dtype)):
        with pytest.raises((ValueError, TypeError)):
            smemkit.bincount(cupy.asarray(bad))
    with pytest.raises((ValueError, TypeError)):
        smemkit.bincount(cupy.asarray(x), minlength=-1)
    if np.dtype(dtype).kind == "i":
        with pytest.raises(ValueError):
            smemkit.bincount(cupy.asarray((np.arange(3) - 2).astype(dtype)))


@pytest.mark.parametrize("x_type, w_type", itertools.product(BINCOUNT_TYPES, BINCOUNT_TYPES))
def test_bincount_weights_of_any_dtype(x_type, w_type):
    x = np.arange(3).astype(x_type)
    w = np.arange(3).astype(w_type)
    both("bincount", x, weights=w, exact=False)
    with pytest.raises((ValueError, TypeError)):
        smemkit.bincount(cupy.asarray(x[:1]), weights=cupy.asarray(np.arange(2).astype(w_type)))


DIGITIZE_BINS = [[1.5, 2.5, 4.0, 6.0], [-1.0, 1.0, 2.5, 4.0, 20.0],
                 [0.0, 1.0, 1.0, 4.0, 4.0, 10.0]]


@pytest.mark.parametrize("dtype", HIST_TYPES)
@pytest.mark.parametrize("right", [False, True])
def test_digitize_of_every_dtype(dtype, right):
    for bins, increasing, shape in itertools.product(DIGITIZE_BINS, [True, False],
                                                     [(), (10,), (6, 3, 3)]):
        size = int(np.prod(shape))
        x = (np.arange(size) + 1).astype(dtype).reshape(shape)
        b = np.array(bins if increasing else bins[::-1])
        same(smemkit.digitize(cupy.asarray(x), cupy.asarray(b), right=right),
             np.digitize(x, b, right=right))


@pytest.mark.parametrize("right", [False, True])
def test_digitize_nan_and_infinity(right):
    x = (np.arange(14) + 1).astype(np.float32)
    xn = x.copy()
    xn[5] = np.nan
    nan = np.nan
    cases = [(xn, [1.0, 3.0, 5.0, 8.0, 12.0]), (x, [1.0, 3.0, 5.0, 8.0, nan]),
             (xn, [1.0, 3.0, 5.0, 8.0, nan, nan]), (xn, [nan, 8.0, 5.0, 3.0, 1.0]),
             (xn, [nan, nan, nan, 5.0, 3.0, 1.0]), (xn, [nan, nan, nan, nan])]
    for xs, bins in cases:
        b = np.array(bins, np.float32)
        same(smemkit.digitize(cupy.asarray(xs), cupy.asarray(b), right=right),
             np.digitize(xs, b, right=right))
    for special in (np.inf, -np.inf):
        xi = (np.arange(14) + 1).astype(np.float64)
        xi[5] = special
        b = np.array([0, 1, 2, 4, 10])
        same(smemkit.digitize(cupy.asarray(xi), cupy.asarray(b), right=right),
             np.digitize(xi, b, right=right))


def test_digitize_errors():
    x = cupy.asarray((np.arange(14) + 1).astype(complex))
    with pytest.raises(TypeError):
        smemkit.digitize(x, cupy.asarray(np.array([1.0, 3.0, 5.0], complex)))
    with pytest.raises(ValueError):
        smemkit.digitize(cupy.arange(14, dtype=cupy.float64), cupy.asarray([[1], [2]]))


def _random(shape, dtype, seed):
    """Values in [0, 100) of ``dtype``, as CuPy's shaped_random draws them."""
    v = np.random.default_rng(seed).random(shape) * 100
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", HIST_TYPES)
def test_histogramdd_and_histogram2d(dtype):
    x = _random((100, 3), dtype, 7)
    arrays = [np.arange(0, 100, 4), np.arange(0, 100, 10), np.arange(25)]
    for weights, weights_dtype, density, bins, rng in itertools.product(
            [None, 1, 2], [np.int32, np.float64], [True, False],
            [10, (8, 16, 12), (16, 12, 8), "array_list"], [None, ((20, 50), (10, 100), (0, 40))]):
        b = [cupy.asarray(a) for a in arrays] if bins == "array_list" else bins
        w = None if weights is None else np.ones(100, weights_dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            H, E = np.histogramdd(x, bins=arrays if bins == "array_list" else bins, range=rng,
                                  weights=w, density=density)
            h, e = smemkit.histogramdd(cupy.asarray(x), bins=b, range=rng,
                                       weights=None if w is None else cupy.asarray(w),
                                       density=density)
        same(h, H, exact=False)
        for got, want in zip(e, E):
            same(got, want, exact=False)
    x2, y2 = _random(100, dtype, 8), _random(100, dtype, 9)
    for bins in (10, (8, 16), [np.arange(0, 100, 4), np.arange(0, 100, 10)],
                 np.arange(0, 100, 4)):
        for rng in (None, ((20, 50), (10, 100))):
            dev_bins = (cupy.asarray(bins) if isinstance(bins, np.ndarray) else
                        [cupy.asarray(b) for b in bins] if isinstance(bins, list) else bins)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = np.histogram2d(x2, y2, bins=bins, range=rng, density=True)
                got = smemkit.histogram2d(cupy.asarray(x2), cupy.asarray(y2), bins=dev_bins,
                                          range=rng, density=True)
            same(tuple(got), tuple(want), exact=False)


def test_histogramdd_errors():
    x = cupy.asarray(_random((16, 2), np.float64, 3))
    for kwargs in (dict(bins=[cupy.arange(0, 100, 10)] * 3), dict(bins=0),
                   dict(bins=cupy.arange(64).reshape((8, 8))), dict(range=((0, 100),) * 3)):
        with pytest.raises(ValueError):
            smemkit.histogramdd(x, **kwargs)
    bad = np.arange(100)
    bad[30] = 99
    with pytest.raises(ValueError):
        smemkit.histogramdd(x, bins=cupy.asarray(bad))

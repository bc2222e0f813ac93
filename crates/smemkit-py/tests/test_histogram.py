"""smemkit.histogram against numpy.histogram: counts bit for bit, edges and result dtypes."""

import warnings

import numpy as np
import pytest

import smemkit

INT_TYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64]
FLOAT_TYPES = [np.float32, np.float64]


def hist(*args, **kwargs):
    return smemkit.histogram(*args, backend="cpu", **kwargs)


def same(got, want):
    """Identical results: values, dtypes and shapes of both arrays."""
    (h, e), (H, E) = got, want
    assert h.dtype == H.dtype, (h.dtype, H.dtype)
    assert e.dtype == E.dtype, (e.dtype, E.dtype)
    np.testing.assert_array_equal(h, H)
    np.testing.assert_array_equal(e, E)


@pytest.mark.parametrize("dtype", INT_TYPES + FLOAT_TYPES)
def test_every_dtype_automatic_range(rng, dtype):
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is not None:
        x = rng.integers(max(info.min, -1000), min(info.max, 1000), 5000, dtype=dtype)
    else:
        x = rng.standard_normal(5000).astype(dtype)
    for bins in (1, 7, 10, 256, 1000):
        same(hist(x, bins), np.histogram(x, bins))


@pytest.mark.parametrize("dtype", INT_TYPES + FLOAT_TYPES)
def test_every_dtype_explicit_range_and_edges(rng, dtype):
    x = (rng.random(5000) * 100).astype(dtype)
    same(hist(x, 33, range=(3, 77.5)), np.histogram(x, 33, range=(3, 77.5)))
    edges = np.array([0, 1, 2.5, 10, 50, 99])
    same(hist(x, edges), np.histogram(x, edges))


def test_extreme_integers():
    for dtype in (np.int64, np.uint64, np.int32, np.int8, np.uint8):
        info = np.iinfo(dtype)
        x = np.array([info.min, info.max, info.min + 1, info.max // 2], dtype=dtype)
        same(hist(x, 16), np.histogram(x, 16))


@pytest.mark.parametrize("bins", [1000, 32768, 100003])
def test_float32_rounding_at_the_edges(bins):
    """Samples on and one ulp either side of every float32 edge: the estimate is corrected
    against the edges exactly as numpy corrects it."""
    _, edges = np.histogram(np.zeros(0, np.float32), bins, range=(-4, 4))
    e = np.asarray(edges, np.float32)
    x = np.concatenate([e, np.nextafter(e, np.float32(-np.inf)), np.nextafter(e, np.float32(np.inf))])
    same(hist(x, bins, range=(-4, 4)), np.histogram(x, bins, range=(-4, 4)))
    same(hist(x, bins), np.histogram(x, bins))


@pytest.mark.parametrize(
    "bins, lo, hi", [(1 << 17, -4, 4), (1 << 20, -4, 4), (256, -256, 0), (4, 0.5, 1.5), (256, -1024, 1024)]
)
def test_float32_bins_on_a_power_of_two_grid(rng, bins, lo, hi):
    """Grids of a power-of-two width that start away from 0 (the exact path where the edges allow
    it): every edge and its neighbours, signed zeros, subnormals and normal samples."""
    _, edges = np.histogram(np.zeros(0, np.float32), bins, range=(lo, hi))
    e = np.asarray(edges, np.float32)[:: max(1, bins // 4096)]
    tiny = np.float32(1e-45)
    specials = np.array([0.0, -0.0, tiny, -tiny, 1.2e-38, -1.2e-38, lo, hi, np.nan, np.inf, -np.inf], np.float32)
    x = np.concatenate(
        [
            e,
            np.nextafter(e, np.float32(-np.inf)),
            np.nextafter(e, np.float32(np.inf)),
            specials,
            (rng.standard_normal(100_000) * (hi - lo) / 4 + (lo + hi) / 2).astype(np.float32),
        ]
    )
    same(hist(x, bins, range=(lo, hi)), np.histogram(x, bins, range=(lo, hi)))


def test_float32_range_as_float64_scalars(rng):
    """A float64 range makes numpy bin float32 samples in float64 (edges float64 too)."""
    x = rng.standard_normal(10000).astype(np.float32)
    r = (np.float64(-1.1), np.float64(2.3))
    same(hist(x, 301, range=r), np.histogram(x, 301, range=r))
    same(hist(x, 301, range=(-1.1, 2.3)), np.histogram(x, 301, range=(-1.1, 2.3)))


def test_nan_is_not_counted_with_a_range():
    x = np.array([0.5, np.nan, 1.5, np.nan, 2.0], np.float32)
    same(hist(x, 4, range=(0, 2)), np.histogram(x, 4, range=(0, 2)))
    same(hist(x, [0, 1, 2]), np.histogram(x, [0, 1, 2]))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_data_without_a_range_is_a_value_error(bad):
    x = np.array([0.0, 1.0, bad])
    with pytest.raises(ValueError):
        np.histogram(x)
    with pytest.raises(ValueError, match="not finite"):
        hist(x)


def test_degenerate_range_and_constant_data():
    x = np.array([3, 3, 3], np.int32)
    same(hist(x, 5), np.histogram(x, 5))
    same(hist(x, 5, range=(1, 1)), np.histogram(x, 5, range=(1, 1)))
    y = np.array([2.5, 2.5], np.float32)
    same(hist(y, 3), np.histogram(y, 3))


def test_empty_input():
    for x in ([], np.zeros(0, np.float32), np.zeros(0, np.int16)):
        same(hist(x), np.histogram(x))
        same(hist(x, [0, 1, 5]), np.histogram(x, [0, 1, 5]))


def test_fewer_than_two_edges():
    for bins in ([1], []):
        same(hist([1, 2], bins), np.histogram([1, 2], bins))


def test_weights_float64(rng):
    x = rng.standard_normal(20000)
    w = rng.random(20000)
    h, e = hist(x, 50, weights=w)
    H, E = np.histogram(x, 50, weights=w)
    assert h.dtype == np.float64
    np.testing.assert_array_equal(e, E)
    np.testing.assert_allclose(h, H, rtol=1e-12)


def test_weights_keep_their_dtype(rng):
    x = rng.integers(0, 100, 3000)
    for wtype in (np.float32, np.float16, np.int32, np.int64, np.uint8, np.bool_):
        w = (rng.random(3000) * 10).astype(wtype)
        h, e = hist(x, 10, weights=w)
        H, E = np.histogram(x, 10, weights=w)
        assert h.dtype == H.dtype == wtype
        if np.dtype(wtype).kind == "f":
            np.testing.assert_allclose(h.astype(np.float64), H.astype(np.float64), rtol=1e-3)
        else:
            np.testing.assert_array_equal(h, H)


@pytest.mark.parametrize("wtype", [np.float32, np.float64])
@pytest.mark.parametrize("nbins", [1, 7, 1000, 70_000])
def test_float_weights_equal_numpy_bit_for_bit(rng, wtype, nbins):
    # numpy sums per block of 65536 samples in float64 and adds the blocks in the weights' type:
    # five blocks and a partial one, weights of every magnitude (so the float32 roundings show),
    # samples outside the range and NaN.
    n = 5 * 65536 + 4321
    x = rng.standard_normal(n) * 1.5
    x[::997] = np.nan
    w = (rng.standard_normal(n) * np.exp(rng.uniform(-30, 30, n))).astype(wtype)
    ints = np.where(np.isnan(x), 1000, np.nan_to_num(x) * 40).astype(np.int32)
    for data in (x, x.astype(np.float32), ints):
        with np.errstate(invalid="ignore"):
            got = hist(data, nbins, range=(-3, 3), weights=w)
            want = np.histogram(data, nbins, range=(-3, 3), weights=w)
        same(got, want)


def test_float32_weights_where_float64_sums_differ_from_numpy():
    # One bin, three blocks each summing to 1 + 2^-24 in float64, which rounds (a tie, to even)
    # to 1 in float32: numpy's three blocks add to 3, the float64 total 3 + 3 * 2^-24 rounds to
    # 3 + 2^-22.
    x = np.zeros(3 * 65536)
    w = np.zeros(3 * 65536, np.float32)
    w[0::65536] = 1.0
    w[1::65536] = 2.0 ** -24
    want = np.histogram(x, 1, weights=w)[0]
    assert want[0] == np.float32(3.0) != np.float32(w.astype(np.float64).sum())
    h, _ = hist(x, 1, weights=w)
    assert h.dtype == np.float32 and h[0] == want[0]


def test_weights_with_edges(rng):
    x = rng.random(5000)
    w = rng.standard_normal(5000)
    edges = np.sort(rng.random(20))
    h, _ = hist(x, edges, weights=w)
    np.testing.assert_allclose(h, np.histogram(x, edges, weights=w)[0], rtol=1e-9, atol=1e-9)


def test_integer_weights_beyond_exact_float64_sums_are_exact():
    # Exact 64-bit sums: numpy's explicit-edges path agrees (its uniform path rounds float64
    # block sums beyond 2**53).
    x = np.arange(4)
    w = np.full(4, 2**60 + 1, np.int64)
    h, e = hist(x, weights=w)
    np.testing.assert_array_equal(h, np.histogram(x, e, weights=w)[0])
    assert h.dtype == np.int64 and int(h.sum()) == 4 * (2**60 + 1)


def test_density(rng):
    x = rng.standard_normal(10000).astype(np.float32)
    same(hist(x, 40, density=True), np.histogram(x, 40, density=True))
    edges = [-3, -1, 0, 0.5, 3]
    same(hist(x, edges, density=True), np.histogram(x, edges, density=True))
    w = rng.random(10000)
    h, e = hist(x, 40, weights=w, density=True)
    H, E = np.histogram(x, 40, weights=w, density=True)
    assert h.dtype == H.dtype == np.float64
    np.testing.assert_allclose(h, H, rtol=1e-12)


def test_shapes_orders_and_views(rng):
    base = rng.standard_normal((60, 70)).astype(np.float32)
    weights = rng.random((60, 70))
    views = {
        "C": base,
        "F": np.asfortranarray(base),
        "transposed": base.T,
        "strided": base[::3, 1::2],
        "reversed": base[::-1, ::-2],
        "3-D": base.reshape(6, 10, 70),
        "0-d": np.float32(1.5),
    }
    for name, v in views.items():
        same(hist(v, 17), np.histogram(v, 17))
        same(hist(v, 17, range=(-2, 2)), np.histogram(v, 17, range=(-2, 2)))
    for wv in (weights, np.asfortranarray(weights), weights[:, ::-1]):
        for av in (base, np.asfortranarray(base), base[::-1]):
            h, _ = hist(av, 9, weights=wv)
            np.testing.assert_allclose(h, np.histogram(av, 9, weights=wv)[0], rtol=1e-12)


def test_contiguous_memory_is_read_in_place():
    from smemkit._inputs import flat_pair

    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    for v in (a, np.asfortranarray(a)):
        flat, _ = flat_pair(v, None)
        assert np.shares_memory(flat, v)
        fa, fw = flat_pair(v, v.astype(np.float64, order="K"))
        assert np.shares_memory(fa, v)
        np.testing.assert_array_equal(fa, fw)
    flat, _ = flat_pair(a[:, ::2], None)
    np.testing.assert_array_equal(flat, a[:, ::2].ravel())


def test_byte_orders(rng):
    x = rng.integers(0, 1000, 1000)
    for t in (">i4", "<i4", ">f8", ">u2", ">f4"):
        v = x.astype(t)
        same(hist(v, 13), np.histogram(v, 13))


def test_unaligned_memory(rng):
    raw = np.zeros(8 * 1000 + 1, np.uint8)
    x = np.frombuffer(raw.data, dtype=np.float64, count=1000, offset=1)
    assert not x.flags.aligned
    raw[1:] = np.frombuffer(rng.standard_normal(1000).tobytes(), np.uint8)
    same(hist(x, 21), np.histogram(x, 21))
    w = np.frombuffer(raw.data, dtype=np.float64, count=1000, offset=1)
    h, _ = hist(x, 21, weights=np.abs(w))
    np.testing.assert_allclose(h, np.histogram(x, 21, weights=np.abs(w))[0], rtol=1e-12)
    with pytest.raises(ValueError, match="not aligned"):
        smemkit._native.histogram(x, None, (21, None, None), ("ignore", "cpu", None))


def test_bool_samples_warn_as_numpy_does():
    x = np.array([True, False, True])
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        got = hist(x, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(got, np.histogram(x, 3))


def test_lists_and_python_numbers():
    same(hist([1, 2, 2, 3.5], 3), np.histogram([1, 2, 2, 3.5], 3))
    same(hist(range(100), np.int64(8)), np.histogram(range(100), np.int64(8)))


def test_integer_edges_are_returned_as_given():
    x = np.arange(20)
    edges = np.array([0, 5, 10, 19], np.int32)
    h, e = hist(x, edges)
    assert e is edges or np.shares_memory(e, edges)
    same((h, e), np.histogram(x, edges))


@pytest.mark.parametrize(
    "kwargs, numpy_raises",
    [
        (dict(bins=0), ValueError),
        (dict(bins=-3), ValueError),
        (dict(bins=2.5), TypeError),
        (dict(bins=[[0, 1], [2, 3]]), ValueError),
        (dict(bins=[0, 2, 1]), ValueError),
        (dict(bins="nonsense"), ValueError),
        (dict(range=(2, 1)), ValueError),
        (dict(range=(0, np.inf)), ValueError),
        (dict(weights=[1.0, 2.0]), ValueError),
        (dict(weights=np.ones((2, 2))), ValueError),
    ],
)
def test_errors_are_numpys_exception_types(kwargs, numpy_raises):
    x = np.array([0.5, 1.0, 1.5])
    with pytest.raises(numpy_raises):
        np.histogram(x, **kwargs)
    with pytest.raises(numpy_raises):
        hist(x, **kwargs)


def test_library_messages_reach_python():
    with pytest.raises(ValueError, match="unknown backend `gpu`"):
        smemkit.histogram([1.0], backend="gpu")
    with pytest.raises(ValueError, match="unknown out-of-range policy"):
        hist([1.0], out_of_range="wrap")
    with pytest.raises(ValueError, match="unknown strategy"):
        hist([1.0], strategy="fastest")
    with pytest.raises(ValueError, match="inverted"):
        hist([1.0], range=(3, 2))
    with pytest.raises(ValueError, match="Too many bins for data range"):
        hist(np.array([1.0, np.nextafter(1.0, 2.0)]), 10)


def test_out_of_range_policies():
    x = np.array([-5.0, 0.2, 0.7, 9.0, np.nan])
    h, _ = hist(x, 2, range=(0, 1), out_of_range="clamp")
    np.testing.assert_array_equal(h, [2, 2])
    with pytest.raises(ValueError, match="1 samples below the range, 1 above it and 1 NaN"):
        hist(x, 2, range=(0, 1), out_of_range="error")
    h, _ = hist(x[1:3], 2, range=(0, 1), out_of_range="error")
    np.testing.assert_array_equal(h, [1, 1])


def test_unsupported_sample_types_are_type_errors():
    for x in (np.ones(3, np.complex128), np.array(["a", "b"]), np.array([1, None], dtype=object)):
        with pytest.raises(TypeError):
            hist(x)


def test_histogram_bin_edges(rng):
    for x in (rng.standard_normal(1000).astype(np.float32), rng.integers(-9, 99, 1000), []):
        for bins, rng_ in ((10, None), (33, (-1, 4)), ([0, 1, 3], None)):
            got = smemkit.histogram_bin_edges(x, bins, rng_)
            want = np.histogram_bin_edges(x, bins, rng_)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(smemkit.histogram_bin_edges([1.0, 2.0, 7.5], "sturges"),
                                  np.histogram_bin_edges([1.0, 2.0, 7.5], "sturges"))


ESTIMATORS = ["auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"]


# numpy's 'stone' warns when its search hits the upper bound; smemkit does not repeat that warning.
@pytest.mark.filterwarnings("ignore:The number of bins estimated may be suboptimal")
@pytest.mark.parametrize("name", ESTIMATORS)
def test_bin_estimators_are_numpys(rng, name):
    data = [
        rng.standard_normal(5000),
        rng.standard_normal(5000).astype(np.float32) * 3,
        rng.integers(-50, 50, 3000),
        rng.integers(0, 3, 1000).astype(np.uint8),
        np.array([1.0, 1.0, 1.0]),
        np.zeros(0),
        np.concatenate([rng.standard_normal(500), [1e6]]),
    ]
    for x in data:
        for rng_ in (None, (-2, 2.5)):
            if x.size == 0 and rng_ is None:
                continue
            got = hist(x, name, range=rng_)
            want = np.histogram(x, name, range=rng_)
            same(got, want)
            np.testing.assert_array_equal(smemkit.histogram_bin_edges(x, name, rng_),
                                          np.histogram_bin_edges(x, name, rng_))


def test_bin_estimator_errors():
    with pytest.raises(ValueError, match="not a valid estimator"):
        hist(np.ones(3), "nope")
    with pytest.raises(TypeError, match="weighted data"):
        hist(np.ones(3), "fd", weights=np.ones(3))


def test_large_input_uses_every_thread(rng):
    x = rng.standard_normal(3_000_001).astype(np.float32)
    same(hist(x, 4099, range=(-4, 4)), np.histogram(x, 4099, range=(-4, 4)))
    y = rng.integers(0, 70000, 2_000_000).astype(np.int32)
    same(hist(y, 70000), np.histogram(y, 70000))

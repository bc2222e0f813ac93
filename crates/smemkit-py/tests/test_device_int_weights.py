"""Integer and bool weights of GPU arrays through the Python layer, run without a GPU (the stand-in
CuPy and native call of test_device_plumbing.py, whose stand-in sums int64 weights exactly as the
kernels do): int64 and uint64 weights reach the native call in place, narrower types as an int64
copy (never float64), the result has numpy's dtype and numpy's wrapped sums at any magnitude
(beyond 2**53, those of numpy's explicit-edges path, which are exact)."""

import numpy as np
import pytest

import smemkit
from smemkit import _native

from test_device_plumbing import dev, fake  # noqa: F401 (the fixture)

INTS = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)


@pytest.fixture
def seen(fake, monkeypatch):  # noqa: F811
    """The samples tuples the native call received."""
    got = []
    inner = _native.device_histogram

    def spy(device, stream, samples, out, bins, run):
        got.append(samples)
        return inner(device, stream, samples, out, bins, run)

    monkeypatch.setattr(_native, "device_histogram", spy)
    return got


@pytest.mark.parametrize("wtype", INTS + (np.bool_,))
def test_integer_weights_pass_as_int64_and_keep_their_type(seen, rng, wtype):
    x = rng.standard_normal(5000).astype(np.float32)
    if wtype is np.bool_:
        w = rng.random(x.size) < 0.4
    else:
        w = rng.integers(0, 100, x.size).astype(wtype)
    dw = dev(w)
    h, _ = smemkit.histogram(dev(x), 12, range=(-3.0, 3.0), weights=dw)
    want, _ = np.histogram(x, 12, range=(-3.0, 3.0), weights=w)
    assert np.asarray(h).dtype == want.dtype == np.dtype(wtype)
    np.testing.assert_array_equal(np.asarray(h), want)
    _, _, _, wptr, wdtype = seen[-1]
    assert wdtype == "int64"
    # 64-bit weights are read in place; narrower ones from an int64 copy.
    assert (wptr == dw.data.ptr) == (np.dtype(wtype).itemsize == 8)


def test_sums_beyond_2_53_are_exact_and_wrap(fake, rng):  # noqa: F811
    x = rng.random(20_000).astype(np.float32)
    w = rng.integers(-(2**20), 2**20, x.size) + np.where(rng.random(x.size) < 0.5, 2**62, -(2**62))
    w = w.astype(np.int64)
    edges = np.linspace(0.0, 1.0, 9)
    h, _ = smemkit.histogram(dev(x), edges, weights=dev(w))
    # numpy's explicit-edges path sums in int64 (wrapping): exact.
    want, _ = np.histogram(x, edges, weights=w)
    assert np.asarray(h).dtype == np.int64
    np.testing.assert_array_equal(np.asarray(h), want)
    # Modulo 2**64, by Python integers.
    bins = np.searchsorted(edges, x, side="right") - 1
    exact = [sum(int(v) for v in w[bins == k]) for k in range(8)]
    wrapped = [((s + 2**63) % 2**64) - 2**63 for s in exact]
    assert [int(v) for v in np.asarray(h)] == wrapped
    # Uniform bins give the same exact sums (numpy's own uniform path rounds float64 block sums
    # there).
    hu, _ = smemkit.histogram(dev(x), 8, range=(0.0, 1.0), weights=dev(w))
    np.testing.assert_array_equal(np.asarray(hu), want)


def test_uint64_sums_keep_their_bits(fake):  # noqa: F811
    x = np.array([0.25, 0.25, 0.75], np.float32)
    w = np.array([2**63 + 5, 2**62, 9], np.uint64)
    h, _ = smemkit.histogram(dev(x), [0.0, 0.5, 1.0], weights=dev(w))
    assert np.asarray(h).dtype == np.uint64
    np.testing.assert_array_equal(np.asarray(h), np.histogram(x, [0.0, 0.5, 1.0], weights=w)[0])


def test_bool_weights_with_edges_are_numpys_type_error(fake):  # noqa: F811
    x = np.zeros(8, np.float32)
    with pytest.raises(TypeError):
        np.histogram(x, [0.0, 1.0], weights=np.ones(8, bool))
    with pytest.raises(TypeError, match="bool"):
        smemkit.histogram(dev(x), [0.0, 1.0], weights=dev(np.ones(8, bool)))


@pytest.mark.parametrize("wtype", [np.int8, np.int64, np.uint32, np.bool_])
def test_bincount_of_integer_weights_is_float64(fake, rng, wtype):  # noqa: F811
    k = rng.integers(0, 9, 3000)
    w = (rng.integers(0, 50, 3000)).astype(wtype)
    got = smemkit.bincount(dev(k), weights=dev(w))
    want = np.bincount(k, weights=w)
    assert np.asarray(got).dtype == want.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(got), want)

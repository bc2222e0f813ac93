"""numpy's bin estimators on GPU arrays, computed on the device: numpy.histogram_bin_edges and
numpy.histogram on the host copy give the same bins and counts. The GPU tests are skipped without
a GPU and torch or CuPy; the first tests run everywhere, with a stand-in CuPy (see
test_device_plumbing.py) and a stand-in native estimate that reads the host memory at the address
the Python layer passes and asks the CPU engine."""

import os
import sys
import warnings

import numpy as np
import pytest

import smemkit
from smemkit import _device, _native

from test_device_plumbing import _fake_cupy, _fake_device_histogram, _no_fast_call, _read, dev

# JAX (test_float16_sums_on_the_gpu_are_numpys) must not take the GPU's memory up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
try:
    import torch
except ImportError:
    torch = None
try:
    import cupy
except ImportError:
    cupy = None

GPU_RULES = ["auto", "fd", "doane", "scott", "rice", "sturges", "sqrt"]

# ---- the Python layer, without a GPU -------------------------------------------------------

estimates = []


def _fake_estimate(array, rule, range):
    device, stream, input, n, dtype = array
    estimates.append(dict(n=n, dtype=dtype, rule=rule, range=range))
    half = dtype if dtype in ("float16", "bfloat16") else None
    x = _read(input, n, "uint16" if half else dtype)
    if half:
        # 16-bit samples (scott and doane) as the native calls take host samples: their bits.
        import ml_dtypes

        x = x.view(np.float16 if half == "float16" else ml_dtypes.bfloat16)
    nbins = _native.estimate_bins(x.view(np.uint16) if half else x, rule, range, half)
    # As the library's DeviceEstimate: the data's extremes when no range was given.
    extremes = None if range is not None or n == 0 else (float(x.min()), float(x.max()))
    # (16-bit callers read the count and extremes only.)
    edges = np.zeros(0) if half else _native.histogram_bin_edges(x, nbins, range)
    return nbins, edges, extremes


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(_native, "device_histogram", _fake_device_histogram)
    monkeypatch.setattr(_native, "device_estimate", _fake_estimate)
    monkeypatch.setattr(_native, "fast_call", _no_fast_call)
    _device._EDGES.clear()
    estimates.clear()


@pytest.mark.parametrize("rule", GPU_RULES)
@pytest.mark.parametrize("range_", [None, (-1.0, 2.5)])
def test_estimators_resolve_through_the_device_estimate(fake, rng, rule, range_):
    x = rng.standard_normal((300, 7)).astype(np.float32)
    h, e = smemkit.histogram(dev(x), rule, range=range_)
    want_h, want_e = np.histogram(x, rule, range=range_)
    np.testing.assert_array_equal(np.asarray(h), want_h)
    assert np.asarray(e).dtype == want_e.dtype
    np.testing.assert_array_equal(np.asarray(e), want_e)
    e2 = smemkit.histogram_bin_edges(dev(x), rule, range=range_)
    np.testing.assert_array_equal(np.asarray(e2), np.histogram_bin_edges(x, rule, range=range_))
    assert estimates[-1] == dict(n=2100, dtype="float32", rule=rule, range=range_)


def test_estimator_errors_on_gpu_arrays(fake, rng):
    x = dev(rng.standard_normal((10, 4)))
    with pytest.raises(ValueError, match="not a valid estimator"):
        smemkit.histogram(x, "nope")
    with pytest.raises(TypeError, match="weighted data"):
        smemkit.histogram(x, "auto", weights=x)
    with pytest.raises(ValueError, match="C order"):
        smemkit.histogram(x.T, "auto")
    assert not estimates


# ---- on a GPU ------------------------------------------------------------------------------


def _cuda():
    if torch is not None:
        return torch.cuda.is_available()
    if cupy is not None:
        try:
            return cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:
            return False
    return False


needs_torch = pytest.mark.skipif(torch is None or not _cuda(), reason="needs torch and a CUDA GPU")
needs_cupy = pytest.mark.skipif(cupy is None or not _cuda(), reason="needs CuPy and a CUDA GPU")


def _check(got_h, got_e, host, rule, range_):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_h, want_e = np.histogram(host, rule, range=range_)
        edges = np.histogram_bin_edges(host, rule, range=range_)
    np.testing.assert_array_equal(got_e, want_e)
    np.testing.assert_array_equal(got_h, want_h)
    np.testing.assert_array_equal(got_e, edges)


@needs_torch
@pytest.mark.parametrize("rule", GPU_RULES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "int64"])
@pytest.mark.parametrize("range_", [None, (-1.0, 2.5)])
def test_torch_estimators_are_numpys(rule, dtype, range_):
    g = torch.Generator(device="cuda").manual_seed(23)
    for n in (1, 5, 1000, (1 << 20) + 7):
        x = torch.randn(n, generator=g, device="cuda", dtype=torch.float64) * 3
        if dtype == "uint8":
            x = (x * 10).abs()
        elif dtype.startswith("int"):
            x = x * 10
        x = x.to(getattr(torch, dtype))
        host = x.cpu().numpy()
        h, e = smemkit.histogram(x, rule, range=range_)
        assert h.is_cuda and e.is_cuda
        _check(h.cpu().numpy(), e.cpu().numpy(), host, rule, range_)
        e2 = smemkit.histogram_bin_edges(x, rule, range=range_)
        np.testing.assert_array_equal(e2.cpu().numpy(), e.cpu().numpy())


@needs_torch
@pytest.mark.parametrize("rule", GPU_RULES)
def test_torch_heavy_ties_and_nan(rule):
    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randint(0, 4, (1 << 18,), generator=g, device="cuda").float() / 2
    _check(*[t.cpu().numpy() for t in smemkit.histogram(x, rule)], x.cpu().numpy(), rule, None)
    x[77] = float("nan")
    with pytest.raises(ValueError):
        np.histogram(x.cpu().numpy(), rule)
    with pytest.raises(ValueError, match="finite"):
        smemkit.histogram(x, rule)
    h, e = smemkit.histogram(x, rule, range=(0.0, 1.0))
    _check(h.cpu().numpy(), e.cpu().numpy(), x.cpu().numpy(), rule, (0.0, 1.0))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("range_", [None, (-1.0, 2.5)])
def test_torch_stone_is_numpys(dtype, range_):
    # Every candidate bin count histogrammed on the device (max(100, sqrt(n)) of them).
    g = torch.Generator(device="cuda").manual_seed(29)
    for n in (2, 1000, 40_000):
        x = (torch.randn(n, generator=g, device="cuda", dtype=torch.float64) * 3)
        x = (x * 10 if dtype == "int32" else x).to(getattr(torch, dtype))
        h, e = smemkit.histogram(x, "stone", range=range_)
        _check(h.cpu().numpy(), e.cpu().numpy(), x.cpu().numpy(), "stone", range_)


def _half_types():
    try:
        import ml_dtypes
    except ImportError:
        return [np.float16]
    return [np.float16, ml_dtypes.bfloat16]


HALF_RULES = ["auto", "fd", "stone", "rice", "sturges", "sqrt"]


def _same_as_numpy(got, x, rule, r, host=np.asarray):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        H, E = np.histogram(x, rule, range=r)
    h, e = host(got[0]), host(got[1])
    assert h.dtype == H.dtype and e.dtype == E.dtype, (h.dtype, H.dtype, e.dtype, E.dtype)
    np.testing.assert_array_equal(h, H)
    np.testing.assert_array_equal(e, E)


@pytest.mark.parametrize("half", _half_types(), ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("rule", HALF_RULES)
def test_16_bit_estimators_on_the_device_are_numpys(fake, rng, half, rule):
    # The counts of each value (one device histogram of the bit patterns) and stone's
    # histograms come from the device; numpy's arithmetic in the samples' type makes the width
    # from the extremes and quartiles' neighbours they give.
    sys.modules["cupy"].asnumpy = np.asarray
    sizes = [1, 2, 3, 11, 12, 13, 14, 15, 101, 1002] if rule != "stone" else [2, 13, 1002]
    for n in sizes:
        for scale in (1.0, 30.0):
            base = rng.standard_normal(n) * scale
            for x in (base.astype(half), (np.abs(base) ** 2).astype(half)):
                for r in (None, (-0.5 * scale, 1.3 * scale), (0.25, 0.25)):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        try:
                            np.histogram(x, rule, range=r)
                        except ValueError:
                            # numpy's candidates can repeat 16-bit edges ("Too many bins").
                            with pytest.raises(ValueError, match="Too many bins"):
                                smemkit.histogram(dev(x), rule, range=r)
                            continue
                    got = smemkit.histogram(dev(x), rule, range=r)
                    _same_as_numpy(got, x, rule, r)
                    edges = smemkit.histogram_bin_edges(dev(x), rule, range=r)
                    np.testing.assert_array_equal(np.asarray(edges), got[1])
    assert not estimates  # the library's device estimate takes no 16-bit samples


@pytest.mark.parametrize("half", _half_types(), ids=lambda t: np.dtype(t).name)
def test_16_bit_estimators_trim_to_the_range_as_numpy_compares(fake, rng, half):
    # numpy keeps float16 samples by comparing in float16 (1.3 rounds down onto a sample) and
    # bfloat16 ones in float32 (a bound just below a sample, rounded to float32, keeps it). The
    # edges carry the estimate (the counts of such bounds: see the closing note of issue 23).
    top = float(half(1.3))
    x = np.concatenate([rng.standard_normal(200) * 0.3, [top] * 150, [-0.75] * 60]).astype(half)
    for r in ((-1.0, 1.3), (-1.0, top - 1e-12), (-1.0, top - 1e-4), (-1.0, top + 1e-7),
              (-0.75, top), (float(np.nextafter(-0.75, 0)), 1.0)):
        lo32, hi32 = float(np.float32(r[0])), float(np.float32(r[1]))
        lands = [v for v, bad in ((lo32, lo32 < r[0]),) if bad and float(half(v)) == v]
        for rule in ("sqrt", "fd"):
            if half != np.float16 and lands:
                # A lower bound whose float32 rounding lands on a bfloat16 value below it: the
                # GPU's bfloat16 histograms refuse it (test_gpu_half).
                with pytest.raises(NotImplementedError, match="rounds in float32"):
                    smemkit.histogram_bin_edges(dev(x), rule, range=r)
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = np.histogram_bin_edges(x, rule, range=r)
            got = np.asarray(smemkit.histogram_bin_edges(dev(x), rule, range=r))
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_16_bit_estimators_refuse_infinite_data_and_inverted_ranges(fake, rng):
    x = rng.standard_normal(100).astype(np.float16)
    with pytest.raises(ValueError, match="not finite"):
        smemkit.histogram(dev(np.array([1.0, np.inf], np.float16)), "sqrt")
    with pytest.raises(ValueError, match="max must be larger"):
        smemkit.histogram(dev(x), "sqrt", range=(1.0, 0.0))


@pytest.mark.parametrize("half", _half_types(), ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("rule", ["scott", "doane"])
def test_16_bit_scott_and_doane_follow_numpys_sums(fake, rng, half, rule):
    # numpy's float16 std (pairwise float32 sums rounded to float16) and doane's third moment
    # (float32 sums, 8192 samples at a time), ml_dtypes' bfloat16 ones (one value after another):
    # sizes around the block (128), the lanes (8) and the buffer (8192); means far from 0, so the
    # 16-bit mean and deviations round. (The stand-in estimate is the library's on the host.)
    sys.modules["cupy"].asnumpy = np.asarray
    for n in [1, 2, 3, 7, 8, 9, 96, 100, 127, 128, 129, 144, 1000, 8191, 8192, 8193, 20007,
              65536, 70000]:
        for scale, shift in ((1.0, 0.0), (0.3, 5.0), (40.0, -100.0), (0.01, 1.0)):
            x = (rng.standard_normal(n) * scale + shift).astype(np.float32).astype(half)
            for r in (None, (shift - scale, shift + 2 * scale)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        np.histogram(x, rule, range=r)
                    except ValueError:
                        # Repeated float16 edges, or a float16 std overflowing to inf (0 bins).
                        with pytest.raises(ValueError, match="Too many bins|width is infinite"):
                            smemkit.histogram(dev(x), rule, range=r)
                        continue
                    got = smemkit.histogram(dev(x), rule, range=r)
                _same_as_numpy(got, x, rule, r)


@pytest.mark.parametrize("half", _half_types(), ids=lambda t: np.dtype(t).name)
def test_16_bit_estimators_of_nan_zeros_and_ties_are_numpys(fake, rng, half):
    # NaN (numpy's extremes become NaN; a range drops it), both zeros, infinities beside a
    # range, and heavy ties: the counts of each bit pattern carry all of them.
    sys.modules["cupy"].asnumpy = np.asarray
    cases = [
        np.array([1.0, np.nan, 2.0, 3.0]),
        np.array([-0.0, 0.0, 0.0, -0.0, 1.5, 2.5, -1.0] * 3),
        np.concatenate([rng.standard_normal(500), [np.inf, -np.inf, np.nan] * 4]),
        np.repeat([0.5, 0.75, 1.0, 3.0], [100, 1, 57, 2]),
    ]
    for x in cases:
        x = x.astype(half)
        for r in (None, (-1.0, 2.0)):
            for rule in ("sturges", "fd", "auto"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        want = np.histogram(x, rule, range=r)
                    except ValueError as e:
                        with pytest.raises(ValueError, match=str(e).replace("[", r"\[")):
                            smemkit.histogram(dev(x), rule, range=r)
                        continue
                _same_as_numpy(smemkit.histogram(dev(x), rule, range=r), x, rule, r)


@needs_torch
@pytest.mark.parametrize("rule", HALF_RULES + ["scott", "doane"])
def test_torch_16_bit_estimators_are_numpys(rule):
    import ml_dtypes

    g = torch.Generator(device="cuda").manual_seed(21)
    base = torch.randn(1 << 20 if rule != "stone" else 1 << 16, generator=g, device="cuda") * 3
    for t, host in ((base.half(), lambda v: v.cpu().numpy()),
                    (base.bfloat16(), lambda v: v.float().cpu().numpy().astype(ml_dtypes.bfloat16))):
        for r in (None, (-1.0, 2.5)):
            x = host(t)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    np.histogram(x, rule, range=r)
                except ValueError:
                    # bfloat16 edges over the data repeat at this many bins, or numpy's float16
                    # std overflows (its squares sum past 65504: an infinite width): numpy fails.
                    with pytest.raises(ValueError, match="Too many bins|width is infinite"):
                        smemkit.histogram(t, rule, range=r)
                    continue
            got = smemkit.histogram(t, rule, range=r)
            _same_as_numpy(got, x, rule, r,
                           host=lambda v: v.float().cpu().numpy().astype(ml_dtypes.bfloat16)
                           if v.dtype == torch.bfloat16 else v.cpu().numpy())


@pytest.mark.parametrize("kind", ["torch", "cupy", "jax"])
def test_float16_scott_and_doane_on_the_gpu_are_numpys(kind):
    # numpy's float16 std and third moment by the library's device estimate, over sizes around
    # its 8192-sample buffer and 128-sample blocks, with and without a range.
    if not _cuda():
        pytest.skip("needs a CUDA GPU")
    if kind == "torch" and torch is None or kind == "cupy" and cupy is None:
        pytest.skip(f"needs {kind}")
    if kind == "jax":
        jnp = pytest.importorskip("jax.numpy")
    # Small values: numpy's float16 sums of many samples and of their squares stay finite.
    r = np.random.default_rng(8)
    for n in (5, 1000, 8193, 300007, 1 << 20, 3 << 20):
        x = (r.standard_normal(n) * 0.01 + 0.002).astype(np.float16)
        d = (torch.from_numpy(x).cuda() if kind == "torch" else cupy.asarray(x)
             if kind == "cupy" else jnp.asarray(x))
        for rule in ("scott", "doane"):
            for rg in (None, (-0.01, 0.02)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    H, E = np.histogram(x, rule, range=rg)
                h, e = smemkit.histogram(d, rule, range=rg)
                host = (lambda v: v.cpu().numpy()) if kind == "torch" else (
                    cupy.asnumpy if kind == "cupy" else np.asarray)
                np.testing.assert_array_equal(host(h), H)
                np.testing.assert_array_equal(host(e), E)
    # Larger ones: numpy's float16 squares sum to inf, its width is infinite, and it fails.
    x = (r.standard_normal(1 << 16) * 2).astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError):
            np.histogram(x, "scott")
    d = (torch.from_numpy(x).cuda() if kind == "torch" else cupy.asarray(x)
         if kind == "cupy" else jnp.asarray(x))
    with pytest.raises(ValueError, match="width is infinite"):
        smemkit.histogram(d, "scott")


@pytest.mark.parametrize("kind", ["torch", "jax"])
def test_bfloat16_scott_and_doane_on_the_gpu_are_ml_dtypes_numpys(kind):
    # numpy with ml_dtypes sums bfloat16 one value after another, each total rounded to bfloat16:
    # the library's device chain, on data whose totals stall (positive), wander (mean zero) or
    # move at every value (alternating), with and without a range, against numpy on the host.
    if not _cuda():
        pytest.skip("needs a CUDA GPU")
    if kind == "torch" and torch is None:
        pytest.skip("needs torch")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    if kind == "jax":
        jnp = pytest.importorskip("jax.numpy")
    r = np.random.default_rng(9)
    cases = [r.standard_normal(n) * s + m
             for n in (5, 1000, 8193, 300007, 3 << 20)
             for s, m in ((1.0, 0.0), (0.5, 2.0))]
    cases.append(np.where(np.arange(1 << 20) % 2 == 0, 1.0, -1.0) * 0.75)
    for v in cases:
        x = v.astype(np.float32).astype(ml_dtypes.bfloat16)
        if kind == "torch":
            d = torch.from_numpy(x.view(np.int16)).cuda().view(torch.bfloat16)
            host = (lambda t: t.float().cpu().numpy().astype(ml_dtypes.bfloat16)
                    if t.dtype == torch.bfloat16 else t.cpu().numpy())
        else:
            d = jnp.asarray(x.astype(np.float32)).astype(jnp.bfloat16)
            # (JAX without x64 counts in int32: compared as numpy's int64.)
            host = (lambda t: np.asarray(t.astype(jnp.float32)).astype(ml_dtypes.bfloat16)
                    if t.dtype == jnp.bfloat16 else np.asarray(t).astype(
                        np.int64 if t.dtype == jnp.int32 else t.dtype))
        # JAX keeps a range's float64 edges only with x64 on (test_gpu_half): no range there.
        for rg in (None, (-1.0, 2.5)) if kind == "torch" else (None,):
            for rule in ("scott", "doane"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        np.histogram(x, rule, range=rg)
                    except ValueError:
                        with pytest.raises(ValueError, match="Too many bins|width is infinite"):
                            smemkit.histogram(d, rule, range=rg)
                        continue
                _same_as_numpy(smemkit.histogram(d, rule, range=rg), x, rule, rg, host=host)


@needs_cupy
@pytest.mark.parametrize("rule", GPU_RULES)
def test_cupy_estimators_are_numpys(rule):
    r = cupy.random.default_rng(3)
    x = r.standard_normal(1 << 20, dtype=cupy.float32)
    h, e = smemkit.histogram(x, rule)
    assert isinstance(h, cupy.ndarray)
    _check(h.get(), e.get(), x.get(), rule, None)
    h, e = smemkit.histogram(x, rule, range=(-1.0, 2.0))
    _check(h.get(), e.get(), x.get(), rule, (-1.0, 2.0))


# ---- integer weights keep their type (issue 23), through the Python layer ------------------


@pytest.mark.parametrize("wtype", [np.int8, np.int32, np.int64, np.uint16, np.uint64])
def test_integer_weights_on_gpu_arrays_keep_their_type(fake, rng, wtype):
    x = rng.standard_normal(3000).astype(np.float32)
    w = (rng.random(3000) * 60).astype(wtype)
    for bins in (10, [-2.0, -0.5, 0.0, 3.0]):
        h, e = smemkit.histogram(dev(x), bins, range=(-3.0, 3.0) if bins == 10 else None,
                                 weights=dev(w))
        want, _ = np.histogram(x, bins, range=(-3.0, 3.0) if bins == 10 else None, weights=w)
        assert np.asarray(h).dtype == want.dtype == wtype
        np.testing.assert_array_equal(np.asarray(h), want)
    # numpy's bincount sums weights in float64 whatever their type.
    k = rng.integers(0, 9, 3000)
    got = smemkit.bincount(dev(k), weights=dev(w))
    want = np.bincount(k, weights=w)
    assert np.asarray(got).dtype == want.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(got), want)


def test_integer_weights_beyond_2_53_sum_exactly(fake):
    # Exact int64 sums modulo 2**64 (test_device_int_weights.py has more): 4 * 2**62 wraps to 0.
    x = np.zeros(4, np.float32)
    w = np.full(4, 2**62, np.int64)
    h, _ = smemkit.histogram(dev(x), 3, range=(0.0, 1.0), weights=dev(w))
    np.testing.assert_array_equal(np.asarray(h), np.array([0, 0, 0], np.int64))
    w[0] += 7
    h, _ = smemkit.histogram(dev(x), 3, range=(0.0, 1.0), weights=dev(w))
    np.testing.assert_array_equal(np.asarray(h), np.array([7, 0, 0], np.int64))

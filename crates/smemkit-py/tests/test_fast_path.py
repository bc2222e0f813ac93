"""The fast path of repeated GPU calls (smemkit._fast), run without a GPU on the stand-in "cupy"
of test_device_plumbing: the first call of a key takes the general path and builds a FastCall;
later calls take the fast path and give the same results; calls the fast path cannot repeat
(weights, density, no range, strided or misaligned arrays, out_of_range='error', bool) keep the
general path. test_gpu_fast.py checks the real thing on a GPU."""

import ctypes

import numpy as np
import pytest

import smemkit
from smemkit import _device_digitize, _fast, _native
from test_device_plumbing import _read, calls, dev, fake  # noqa: F401 (fixture)

fast_runs = []


class FakeFastCall:
    """The native FastCall's contract, on host memory: overwrite the counts, write the edges."""

    def __init__(self, device, dtype, weights_dtype, bins, run, edges):
        nbins, rng, integer = bins
        policy, strategy, deterministic = run
        assert weights_dtype is None and policy != "error"
        self.args = (dtype, nbins, rng, integer, policy)
        self.nbins = nbins
        self.edges = edges

    def run(self, stream, input, n, weights, counts, edges):
        dtype, nbins, rng, integer, policy = self.args
        fast_runs.append(dict(n=n, dtype=dtype, nbins=nbins, rng=rng, integer=integer))
        x = _read(input, n, dtype)
        if integer:
            c = smemkit.bincount(x, minlength=nbins, out_of_range=policy)
        else:
            c = smemkit.histogram(x, nbins, range=rng, out_of_range=policy)[0]
        c = np.ascontiguousarray(c, np.int64)
        ctypes.memmove(counts, c.ctypes.data, c.nbytes)
        self.copy_edges(stream, edges)

    def copy_edges(self, stream, edges):
        if edges:
            ctypes.memmove(edges, self.edges, len(self.edges))


class FakeDigitize:
    """The native DeviceDigitizeCall's contract on host memory; counts its calls and runs."""

    made = 0

    def __init__(self, device, dtype, bins, right):
        FakeDigitize.made += 1
        self.dtype, self.bins, self.right = dtype, np.array(bins), right

    def run(self, stream, input, n, out):
        fast_runs.append(dict(n=n, dtype=self.dtype, digitize=True))
        idx = np.digitize(_read(input, n, self.dtype), self.bins, self.right).astype(np.int64)
        ctypes.memmove(out, idx.ctypes.data, idx.nbytes)


@pytest.fixture
def fast(fake, monkeypatch):
    fake.cuda.runtime = type("runtime", (), {"getDevice": staticmethod(lambda: 0)})
    monkeypatch.setattr(_native, "fast_call", FakeFastCall)
    monkeypatch.setattr(_native, "device_digitize", FakeDigitize)
    monkeypatch.setattr(_fast, "_PLANS", {})
    monkeypatch.setattr(_fast, "_DIGITIZE_PLANS", {})
    monkeypatch.setattr(_fast, "HIST", {})
    monkeypatch.setattr(_fast, "BINCOUNT", {})
    monkeypatch.setattr(_fast, "DIGITIZE", {})
    monkeypatch.setattr(_device_digitize, "_CALLS", {})
    monkeypatch.setattr(smemkit, "_FAST_HIST", _fast.HIST)
    monkeypatch.setattr(smemkit, "_FAST_BINCOUNT", _fast.BINCOUNT)
    monkeypatch.setattr(smemkit, "_FAST_DIGITIZE", _fast.DIGITIZE)
    fast_runs.clear()
    FakeDigitize.made = 0
    return fake


def test_repeated_histogram_takes_the_fast_path(fast, rng):
    x = rng.standard_normal(10_000).astype(np.float32)
    H, E = np.histogram(x, 100, range=(-4, 4))
    h, e = smemkit.histogram(dev(x), 100, range=(-4, 4))
    assert not fast_runs and len(calls) == 1  # the first call: the general path
    for _ in range(3):
        h2, e2 = smemkit.histogram(dev(x), 100, range=(-4, 4))
        assert h2.dtype == np.int64 and e2.dtype == np.float32
        np.testing.assert_array_equal(h2, H)
        np.testing.assert_array_equal(e2, E)
        assert e2 is not e
    assert len(fast_runs) == 3 and len(calls) == 1
    # float64 samples, another key: general first, then fast, with float64 edges
    y = x.astype(np.float64)
    for _ in range(2):
        h, e = smemkit.histogram(dev(y), 7, range=(-1, 2.5))
        H, E = np.histogram(y, 7, range=(-1, 2.5))
        np.testing.assert_array_equal(h, H)
        np.testing.assert_array_equal(e, E)
        assert e.dtype == np.float64
    assert len(fast_runs) == 4 and len(calls) == 2
    # a range of other types is another key (numpy scalars bin float32 samples in float64)
    smemkit.histogram(dev(y), 7, range=(np.float64(-1), np.float64(2.5)))
    assert len(calls) == 3


def test_calls_the_fast_path_leaves_to_the_general_path(fast, rng):
    x = rng.standard_normal((40, 30))
    d = dev(x)
    smemkit.histogram(d, 10, range=(-4, 4))
    smemkit.histogram(d, 10, range=(-4, 4))
    assert len(fast_runs) == 1
    n_general = len(calls)
    h, _ = smemkit.histogram(d.T, 10, range=(-4, 4))  # Fortran order: general path
    np.testing.assert_array_equal(h, np.histogram(x, 10, range=(-4, 4))[0])
    with pytest.raises(ValueError, match="strided view"):
        smemkit.histogram(d[:, ::2], 10, range=(-4, 4))
    with pytest.raises(ValueError, match="16-byte aligned"):
        smemkit.histogram(d.reshape(-1)[1:], 10, range=(-4, 4))
    d1, _ = smemkit.histogram(d, 10, range=(-4, 4), density=True)
    np.testing.assert_array_equal(d1, np.histogram(x, 10, range=(-4, 4), density=True)[0])
    smemkit.histogram(d, 10, range=[-4, 4])  # a list: general path (not hashable)
    smemkit.histogram(d, 10)  # range from the data: general path
    assert len(fast_runs) == 1 and len(calls) > n_general
    with pytest.raises(ValueError, match="1 samples below"):
        for _ in range(2):
            smemkit.histogram(dev(np.array([-1.0, 0.5])), 4, range=(0, 1), out_of_range="error")
    with pytest.warns(RuntimeWarning, match="bool"):
        for _ in range(2):
            smemkit.histogram(dev(x > 0), 2, range=(0, 1))
    assert len(fast_runs) == 1


def test_repeated_bincount_takes_the_fast_path(fast, rng):
    x = rng.integers(0, 300, 5000).astype(np.int32)
    want = np.bincount(x[x < 200], minlength=200)
    for _ in range(3):
        c = smemkit.bincount(dev(x), minlength=200, out_of_range="ignore")
        assert c.dtype == np.int64
        np.testing.assert_array_equal(c, want)
    assert len(fast_runs) == 2 and fast_runs[-1]["integer"]
    # numpy's length (a synchronisation), weights and 'error' keep the general path
    for _ in range(2):
        np.testing.assert_array_equal(smemkit.bincount(dev(x)), np.bincount(x))
        smemkit.bincount(dev(x), dev(rng.random(5000)), minlength=300, out_of_range="ignore")
    with pytest.raises(ValueError, match="too deep"):
        smemkit.bincount(dev(x.reshape(50, 100)), minlength=200, out_of_range="ignore")
    assert len(fast_runs) == 2


def test_repeated_digitize_takes_the_fast_path(fast, rng):
    x = rng.standard_normal((50, 40)).astype(np.float32) * 3
    bins = np.array([-2.0, -0.5, 0.0, 1.0, 4.0])
    for right in (False, True):
        for _ in range(3):
            i = smemkit.digitize(dev(x), bins, right)
            assert i.dtype == np.int64 and i.shape == x.shape
            np.testing.assert_array_equal(i, np.digitize(x, bins, right))
    # Each (bins, right) once through the general path (which learns), then twice fast.
    assert FakeDigitize.made == 2 and len(_fast._DIGITIZE_PLANS) == 2
    learned = len(fast_runs)
    # Bins changed in place are another key: the general path again, then fast.
    bins[0] = -3.0
    for _ in range(2):
        np.testing.assert_array_equal(smemkit.digitize(dev(x), bins), np.digitize(x, bins))
    assert FakeDigitize.made == 3 and len(fast_runs) == learned + 2
    # Never learned: bins as a list, NaN bins, 64-bit integer samples against integer bins, a
    # right= that is not a bool; refused alike on both paths: a misaligned view.
    xi = rng.integers(-5, 5, 100)
    for _ in range(2):
        np.testing.assert_array_equal(smemkit.digitize(dev(x), [-1.0, 1.0]),
                                      np.digitize(x, [-1.0, 1.0]))
        np.testing.assert_array_equal(smemkit.digitize(dev(x), np.array([-1.0, 1.0, np.nan])),
                                      np.digitize(x, [-1.0, 1.0, np.nan]))
        np.testing.assert_array_equal(smemkit.digitize(dev(xi), np.array([0, 2])),
                                      np.digitize(xi, [0, 2]))
        np.testing.assert_array_equal(smemkit.digitize(dev(x), bins, np.True_),
                                      np.digitize(x, bins, True))
    # (The NaN bins' numbers, [-1, 1], which the general path searched as bins of their own, are
    # the one new key.)
    assert len(_fast._DIGITIZE_PLANS) == 4
    with pytest.raises(ValueError, match="16-byte aligned"):
        smemkit.digitize(dev(x).reshape(-1)[1:], bins)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint64])
def test_host_repeated_calls_are_numpys(rng, dtype):
    """numpy arrays: the second call of a key takes the host fast path; every layout and dtype
    still gives numpy's counts and edges (dtype included)."""
    x = (rng.standard_normal((60, 50)) * 30).astype(dtype)
    for a in (x, np.asfortranarray(x), x[:, ::3], x.reshape(-1), x[::-1]):
        H, E = np.histogram(a, 17, range=(-40, 40))
        for _ in range(3):
            h, e = smemkit.histogram(a, 17, range=(-40, 40))
            assert h.dtype == H.dtype and e.dtype == E.dtype
            np.testing.assert_array_equal(h, H)
            np.testing.assert_array_equal(e, E)
    assert any(k[0] == "np-hist" for k in _fast._PLANS)


def test_host_fast_path_keys_keep_numpys_promotions(rng):
    x = rng.standard_normal(1000).astype(np.float32) * 3
    for _ in range(2):
        smemkit.histogram(x, 50, range=(-1, 1))
    # numpy scalars as the range make numpy bin float32 samples in float64: another answer
    for rng_ in ((np.float64(-1), np.float64(1)), (-1, 1.0)):
        H, E = np.histogram(x, 50, range=rng_)
        for _ in range(2):
            h, e = smemkit.histogram(x, 50, range=rng_)
            assert e.dtype == E.dtype
            np.testing.assert_array_equal(h, H)
            np.testing.assert_array_equal(e, E)
    with pytest.raises(TypeError):
        for _ in range(2):
            smemkit.histogram(x, 50.0, range=(-1, 1))
    with pytest.warns(RuntimeWarning, match="bool"):
        for _ in range(2):
            smemkit.histogram(x > 0, 2, range=(0, 1))


def test_host_repeated_bincount_is_numpys(rng):
    x = rng.integers(0, 300, 5000)
    for minlength, policy in ((0, None), (400, None), (100, "ignore"), (100, "clamp")):
        want = (np.bincount(x, minlength=minlength) if policy is None else
                np.bincount(x[x < 100], minlength=100) if policy == "ignore" else
                np.bincount(np.clip(x, 0, 99), minlength=100))
        for _ in range(3):
            c = smemkit.bincount(x, minlength=minlength, out_of_range=policy)
            assert c.dtype == np.int64
            np.testing.assert_array_equal(c, want)
    for _ in range(2):
        np.testing.assert_array_equal(smemkit.bincount(x[::2]), np.bincount(x[::2]))
        with pytest.raises(ValueError, match="negative"):
            smemkit.bincount(np.array([1, -1]))


def test_trace_prints_a_summary_at_exit():
    import os
    import subprocess
    import sys

    code = ("import numpy as np, smemkit\n"
            "x = np.arange(100.0)\n"
            "for _ in range(3): smemkit.histogram(x, 10, range=(0, 100))\n"
            "s = smemkit.trace_summary()\n"
            "assert s['general histogram']['calls'] == 1, s\n")
    env = dict(os.environ, SMEMKIT_PY_TRACE="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "smemkit trace (median us per call and phase):" in r.stderr
    assert "general histogram: 1 calls" in r.stderr

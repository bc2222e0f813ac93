"""The CUDA engine behind the numpy API, on numpy (host) inputs: run on a machine with a GPU
(skipped elsewhere, where the CUDA backend is instead a RuntimeError naming what is missing).
The first call of each sample type compiles its kernels, which can take a minute."""

import numpy as np
import pytest

import smemkit


def has_gpu():
    return not smemkit.plan(1)["device"].startswith("no GPU found")


needs_gpu = pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")


@pytest.mark.skipif(has_gpu(), reason="this machine has a GPU")
def test_cuda_backend_without_a_gpu_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="CUDA backend is not available"):
        smemkit.histogram(np.ones(4), backend="cuda")


@needs_gpu
@pytest.mark.parametrize("bins", [1000, 32768, 1 << 17, 1 << 20, 1_000_000])
def test_float32_normal_over_a_range(rng, bins):
    x = rng.standard_normal(1 << 22).astype(np.float32)
    h, e = smemkit.histogram(x, bins, range=(-4, 4), backend="cuda")
    H, E = np.histogram(x, bins, range=(-4, 4))
    assert h.dtype == H.dtype and e.dtype == E.dtype
    np.testing.assert_array_equal(h, H)
    np.testing.assert_array_equal(e, E)


@needs_gpu
def test_int32_bincount_and_weights(rng):
    x = rng.integers(0, 70000, 1 << 22).astype(np.int32)
    np.testing.assert_array_equal(smemkit.bincount(x, backend="cuda"), np.bincount(x))
    w = rng.random(1 << 22)
    np.testing.assert_allclose(
        smemkit.bincount(x, weights=w, backend="cuda"), np.bincount(x, weights=w), rtol=1e-9
    )
    edges = np.geomspace(1, 70000, 1000)
    h, _ = smemkit.histogram(x, edges, backend="cuda")
    np.testing.assert_array_equal(h, np.histogram(x, edges)[0])


@needs_gpu
def test_plan_reads_the_device():
    p = smemkit.plan(4096)
    assert p["sm_count"] > 0 and not p["device"].startswith("no GPU")

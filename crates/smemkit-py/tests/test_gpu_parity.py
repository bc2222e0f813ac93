"""numpy behaviours of GPU arrays that need more than a range of Python floats: a range of the
samples' own float32 / float16 scalars (numpy bins in that type over it, as over the data's
extremes), infinite edges and bins of zero width, float16 edges rounded once near a tie. Torch
arrays on a CUDA device against numpy on the host copy, bit for bit; skipped without them."""

import numpy as np
import pytest

import smemkit

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None or not torch.cuda.is_available(),
                                 reason="needs torch and a CUDA GPU")


def same(got, want):
    (h, e), (H, E) = got, want
    h, e = h.cpu().numpy(), e.cpu().numpy()
    assert h.dtype == H.dtype and e.dtype == E.dtype, (h.dtype, H.dtype, e.dtype, E.dtype)
    np.testing.assert_array_equal(h, H)
    np.testing.assert_array_equal(e, E)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("nbins", [7, 1000, 100_000, 700_000])
def test_a_range_of_the_samples_type(rng, dtype, nbins):
    x = (rng.standard_normal(1 << 21) * 2).astype(dtype)
    if dtype == np.float16 and nbins > 1000:
        pytest.skip("float16 holds too few values in the range for that many bins")
    t = torch.from_numpy(x).cuda()
    for r in [(dtype(-3.3), dtype(4.1)), (x.min(), x.max()), (dtype(0.5), dtype(0.5))]:
        same(smemkit.histogram(t, nbins, range=r), np.histogram(x, nbins, range=r))


@needs_torch
def test_ranges_numpy_computes_in_another_type_are_refused(rng):
    t = torch.ones(16, device="cuda", dtype=torch.float64)
    with pytest.raises(NotImplementedError, match="float32 values for float64"):
        smemkit.histogram(t, 4, range=(np.float32(0), np.float32(2)))
    b = torch.ones(16, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="integers for bfloat16"):
        smemkit.histogram(b, 4, range=(0, 2))


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_infinite_edges_and_bins_of_zero_width(rng, dtype):
    x = np.concatenate([rng.standard_normal(1 << 20) * 3,
                        [np.inf, -np.inf, np.nan, 2.0, 2.0, 0.0]]).astype(dtype)
    t = torch.from_numpy(x).cuda()
    for edges in ([-np.inf, 0, 2, 2, np.inf], [0, 2, 2], [-np.inf, -1, 1], [1, 1],
                  [0, 0, 0, 1], [-np.inf, np.inf], list(np.linspace(-4, 4, 3001)) + [np.inf]):
        h, e = smemkit.histogram(t, edges)
        np.testing.assert_array_equal(h.cpu().numpy(), np.histogram(x, edges)[0])
        np.testing.assert_array_equal(np.asarray(e.cpu()), np.asarray(edges))


@needs_torch
def test_float16_edges_near_a_tie_are_rounded_once(rng):
    x = rng.standard_normal(1 << 20).astype(np.float16)
    r = (-0.6513421715553888, 3.1088204266713935)
    same(smemkit.histogram(torch.from_numpy(x).cuda(), 1759, range=r),
         np.histogram(x, 1759, range=r))

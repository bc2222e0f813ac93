"""The options the GPU path brought to the host path too (bincount's out_of_range, deterministic),
and the layout rule of device arrays, checked without a GPU."""

import numpy as np
import pytest

import smemkit
from smemkit._device import Input


def test_bincount_out_of_range_has_exactly_minlength_bins(rng):
    x = rng.integers(-5, 40, 10_000).astype(np.int32)
    inside = x[(x >= 0) & (x < 30)]
    np.testing.assert_array_equal(
        smemkit.bincount(x, minlength=30, out_of_range="ignore"), np.bincount(inside, minlength=30)
    )
    clamped = np.clip(x, 0, 29)
    np.testing.assert_array_equal(
        smemkit.bincount(x, minlength=30, out_of_range="clamp"), np.bincount(clamped, minlength=30)
    )
    w = rng.random(x.size)
    got = smemkit.bincount(x, weights=w, minlength=30, out_of_range="ignore")
    keep = (x >= 0) & (x < 30)
    np.testing.assert_allclose(got, np.bincount(x[keep], weights=w[keep], minlength=30), rtol=1e-12)
    assert got.dtype == np.float64
    with pytest.raises(ValueError, match="out-of-range policy `error`"):
        smemkit.bincount(x, minlength=30, out_of_range="error")
    ok = np.arange(30, dtype=np.int64)
    np.testing.assert_array_equal(smemkit.bincount(ok, minlength=30, out_of_range="error"), np.ones(30))
    with pytest.raises(ValueError, match="minlength >= 1"):
        smemkit.bincount(x, out_of_range="ignore")
    with pytest.raises(TypeError, match="out_of_range"):
        smemkit.bincount(x, minlength=3, out_of_range=1)


def test_bincount_out_of_range_on_empty_input():
    got = smemkit.bincount(np.zeros(0, np.int32), minlength=4, out_of_range="ignore")
    np.testing.assert_array_equal(got, np.zeros(4))
    assert got.dtype == np.int64


def test_deterministic_weighted_sums_are_for_gpu_arrays():
    with pytest.raises(NotImplementedError, match="deterministic=True with weights"):
        smemkit.histogram(np.ones(3), weights=np.ones(3), deterministic=True)
    with pytest.raises(NotImplementedError, match="deterministic=True with weights"):
        smemkit.bincount(np.ones(3, np.int32), weights=np.ones(3), deterministic=True)
    # Counts are exact whatever the flag.
    h, _ = smemkit.histogram(np.ones(3), deterministic=True)
    assert h.sum() == 3


def _described(shape, strides):
    inp = Input.__new__(Input)
    inp.shape, inp.strides = shape, strides
    inp.size = int(np.prod(shape)) if shape else 1
    inp.kind, inp.name = "torch", "a"
    return inp


@pytest.mark.parametrize(
    "shape, strides, layout",
    [
        ((4, 3), None, "C"),
        ((4, 3), (3, 1), "C"),
        ((4, 3), (1, 4), "dense"),  # a transposed block (Fortran order)
        ((4, 1, 3), (3, 7, 1), "C"),  # extent-1 dimensions' strides do not matter
        ((2, 3, 4), (1, 8, 2), "dense"),  # channels-last-like permutation
        ((4, 3), (6, 2), None),  # every other column
        ((4,), (2,), None),
        ((4,), (-1,), None),  # reversed: logical order differs, and not a block from the start
        ((0,), (5,), "C"),
        ((), (), "C"),
    ],
)
def test_device_layouts(shape, strides, layout):
    assert _described(shape, strides).layout() == layout


def test_strided_device_arrays_are_refused_naming_contiguous():
    a = _described((4, 3), (6, 2))
    with pytest.raises(ValueError, match=r"strided view of GPU memory.*\.contiguous\(\)"):
        a.check_layout()
    # Samples alone may be read in any dense order; with weights both must be laid out alike.
    _described((4, 3), (1, 4)).check_layout()
    with pytest.raises(ValueError, match="unlike the weights"):
        _described((4, 3), (1, 4)).check_layout(_described((4, 3), (3, 1)))
    _described((4, 3), (1, 4)).check_layout(_described((4, 3), (1, 4)))


def test_misaligned_device_arrays_are_refused_naming_clone():
    a = _described((4,), (1,))
    a.ptr, a.dtype = 0x7F0000001004, "float32"
    with pytest.raises(ValueError, match=r"not 16-byte aligned.*\.clone\(\)"):
        a.check_aligned()
    a.ptr = 0x7F0000001010
    a.check_aligned()

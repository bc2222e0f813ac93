"""The array-interchange protocols: DLPack capsules read in place (host tensors), the CUDA array
interface parsed and checked, stream values per the array API, and the GPU arrays this machine
cannot read refused clearly (test_gpu_arrays.py reads them on a GPU)."""

import numpy as np
import pytest

import smemkit
from smemkit import _native


class DLPackOnly:
    """A host tensor that speaks only DLPack (no __array__), like a torch CPU tensor."""

    def __init__(self, array, device=(1, 0)):
        self._array = array
        self._device = device

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device


class FakeCudaArray:
    """An object exposing __cuda_array_interface__ as a GPU library would (no memory behind it)."""

    def __init__(self, **overrides):
        self.__cuda_array_interface__ = {
            "shape": (4, 3),
            "typestr": "<f4",
            "data": (0x7F0000001000, False),
            "version": 3,
            "strides": None,
            "stream": 1,
        }
        self.__cuda_array_interface__.update(overrides)


def test_dlpack_capsule_is_described():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    info = _native.dlpack_info(a)
    assert info["device"] == "cpu" and info["device_type"] == 1 and info["device_id"] == 0
    assert info["dtype"] == "int32"
    assert info["shape"] == (3, 4)
    assert info["data"] == a.ctypes.data
    assert info["byte_offset"] == 0 or info["data"] + info["byte_offset"] == a.ctypes.data
    t = a[:, ::2]
    info = _native.dlpack_info(t)
    assert info["shape"] == (3, 2) and info["strides"] == (4, 2)


def test_dlpack_read_only_flag():
    a = np.arange(5.0)
    a.setflags(write=False)
    info = _native.dlpack_info(a)
    if info["versioned"]:
        assert info["read_only"]


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32, np.int64, np.float32, np.float64, np.bool_])
def test_dlpack_host_tensor_is_read_in_place(dtype):
    a = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
    v = _native.dlpack_host_array(DLPackOnly(a))
    assert v.dtype == a.dtype and v.shape == a.shape
    assert np.shares_memory(v, a)
    assert not v.flags.writeable
    np.testing.assert_array_equal(v, a)


def test_dlpack_strided_tensor_is_copied_in_logical_order():
    a = np.arange(60, dtype=np.float64).reshape(6, 10)
    for view in (a[::2, 1::3], a.T, a[::-1]):
        v = _native.dlpack_host_array(DLPackOnly(view))
        np.testing.assert_array_equal(v, view)
    empty = _native.dlpack_host_array(DLPackOnly(np.zeros((0, 3), np.int32)))
    assert empty.shape == (0, 3)


def test_histogram_of_dlpack_inputs(rng):
    x = rng.standard_normal(5000).astype(np.float32)
    w = rng.random(5000)
    h, e = smemkit.histogram(DLPackOnly(x), 20, weights=DLPackOnly(w), backend="cpu")
    H, E = np.histogram(x, 20, weights=w)
    np.testing.assert_allclose(h, H, rtol=1e-12)
    np.testing.assert_array_equal(e, E)
    c = smemkit.bincount(DLPackOnly(np.array([1, 1, 4])), backend="cpu")
    np.testing.assert_array_equal(c, [0, 2, 0, 0, 1])


def test_unsupported_dlpack_types():
    with pytest.raises(TypeError, match="complex128"):
        _native.dlpack_host_array(DLPackOnly(np.ones(3, np.complex128)))
    # float16 host tensors are read in place as numpy's float16.
    x = np.random.default_rng(2).standard_normal(1000).astype(np.float16)
    h, e = smemkit.histogram(DLPackOnly(x), 20)
    H, E = np.histogram(x, 20)
    np.testing.assert_array_equal(h, H)
    assert e.dtype == np.float16
    np.testing.assert_array_equal(e, E)


def _no_gpu_framework():
    import importlib.util

    return importlib.util.find_spec("torch") is None and importlib.util.find_spec("cupy") is None


@pytest.mark.skipif(not _no_gpu_framework(), reason="torch or CuPy is installed")
def test_gpu_dlpack_tensors_need_a_framework_to_allocate_the_outputs():
    fake = DLPackOnly(np.ones(3, np.float32), device=(2, 1))
    with pytest.raises(NotImplementedError, match="need torch or CuPy installed"):
        smemkit.histogram(fake, range=(0, 1))
    with pytest.raises(NotImplementedError, match="need torch or CuPy installed"):
        smemkit.bincount(DLPackOnly(np.ones(3, np.int32), device=(2, 0)))


def test_gpu_arrays_beside_host_data_are_refused():
    with pytest.raises(NotImplementedError, match="samples are on the GPU too.*cuda device 0"):
        smemkit.histogram(np.ones(3), weights=DLPackOnly(np.ones(3), device=(2, 0)))


def test_gpu_arrays_with_the_cpu_backend_are_refused():
    fake = DLPackOnly(np.ones(3, np.float32), device=(2, 0))
    with pytest.raises(ValueError, match="backend='cpu' with an array on a GPU"):
        smemkit.histogram(fake, backend="cpu")
    with pytest.raises(ValueError, match="backend must be"):
        smemkit.bincount(fake, backend="gpu")
    with pytest.raises(NotImplementedError, match="arrays on DLPack device opencl"):
        smemkit.histogram(DLPackOnly(np.ones(3), device=(4, 0)))


def test_cuda_array_interface_is_parsed():
    info = _native.cuda_array_interface(FakeCudaArray())
    assert info == {
        "data": 0x7F0000001000,
        "read_only": False,
        "shape": (4, 3),
        "strides": None,
        "typestr": "<f4",
        "version": 3,
        "stream": ("legacy", None),
    }
    info = _native.cuda_array_interface(
        FakeCudaArray(strides=(4, 16), stream=0xABC000, data=(0x10, True), typestr="|u1")
    )
    assert info["strides"] == (4, 16) and info["stream"] == ("handle", 0xABC000)
    assert info["read_only"] and info["typestr"] == "|u1"
    v2 = {k: v for k, v in FakeCudaArray(version=2).__cuda_array_interface__.items() if k != "stream"}
    obj = FakeCudaArray()
    obj.__cuda_array_interface__ = v2
    assert _native.cuda_array_interface(obj)["stream"] == ("none", None)
    assert _native.cuda_array_interface(FakeCudaArray(stream=None))["stream"] == ("none", None)
    assert _native.cuda_array_interface(FakeCudaArray(stream=2))["stream"] == ("per-thread", None)


@pytest.mark.parametrize(
    "overrides, error, message",
    [
        (dict(version=1), ValueError, "version 1"),
        (dict(stream=0), ValueError, "ambiguous"),
        (dict(stream=-1), ValueError, "not a stream"),
        (dict(stream="s"), TypeError, "integer or None"),
        (dict(typestr="float32"), ValueError, "typestr"),
        (dict(data=(0, False)), ValueError, "NULL"),
        (dict(data=12), ValueError, "'data'"),
        (dict(strides=(4,)), ValueError, "1 strides for a shape of 2"),
        (dict(shape=(-1, 3)), ValueError, "'shape'"),
        (dict(mask=object()), NotImplementedError, "masked"),
    ],
)
def test_bad_cuda_array_interfaces(overrides, error, message):
    with pytest.raises(error, match=message):
        _native.cuda_array_interface(FakeCudaArray(**overrides))


def test_missing_keys():
    obj = FakeCudaArray()
    del obj.__cuda_array_interface__["typestr"]
    with pytest.raises(ValueError, match="'typestr' is missing"):
        _native.cuda_array_interface(obj)


@pytest.mark.skipif(not _no_gpu_framework(), reason="torch or CuPy is installed")
def test_cuda_arrays_need_a_framework():
    with pytest.raises(NotImplementedError, match="need torch or CuPy installed"):
        smemkit.histogram(FakeCudaArray(), 10, range=(0, 1))


def test_cuda_array_interface_stream_zero_is_refused():
    with pytest.raises(ValueError, match="ambiguous"):
        smemkit.histogram(FakeCudaArray(stream=0), 10)


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, ("legacy", None)),
        (1, ("legacy", None)),
        (2, ("per-thread", None)),
        (-1, ("none", None)),
        (3, ("handle", 3)),
        (0x7F12345678, ("handle", 0x7F12345678)),
    ],
)
def test_dlpack_stream_values(value, expected):
    assert _native.dlpack_stream(value) == expected


@pytest.mark.parametrize("value, error", [(0, ValueError), (-2, ValueError), (True, TypeError), (1.0, TypeError)])
def test_bad_dlpack_stream_values(value, error):
    with pytest.raises(error):
        _native.dlpack_stream(value)


def test_cuda_array_interface_stream_values():
    assert _native.cuda_array_interface_stream(None) == ("none", None)
    assert _native.cuda_array_interface_stream(1) == ("legacy", None)
    with pytest.raises(ValueError):
        _native.cuda_array_interface_stream(-1)

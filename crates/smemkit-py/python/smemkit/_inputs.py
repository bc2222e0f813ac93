"""Arrays from whatever the caller holds: numpy arrays as they are, host tensors of other
libraries through DLPack (read in place), GPU arrays (DLPack or ``__cuda_array_interface__``)
recognised and refused until the device-resident engine exists, anything else through
``numpy.asarray`` as numpy itself would."""

from __future__ import annotations

import numpy as np

from . import _native

# DLPack device types whose memory the CPU can read: kDLCPU and kDLCUDAHost (pinned host memory).
_HOST_DEVICES = (1, 3)

_GPU_NOT_YET = (
    "GPU arrays are not supported yet: {what}. The device-resident engine (issue 21) will read "
    "them in place on the producer's stream; until then copy the array to the host first "
    "(numpy.asarray(x.get()), x.cpu().numpy(), numpy.asarray(x))."
)


def _dlpack_device(obj):
    """``obj.__dlpack_device__()`` as two ints, or None when obj does not speak DLPack."""
    if getattr(type(obj), "__dlpack_device__", None) is None or not hasattr(obj, "__dlpack__"):
        return None
    device_type, device_id = obj.__dlpack_device__()
    return int(device_type), int(device_id)


def _cuda_array_interface(obj) -> bool:
    try:
        return getattr(obj, "__cuda_array_interface__", None) is not None
    except Exception:  # some libraries raise other errors for host arrays
        return False


def as_array(obj, name: str) -> np.ndarray:
    """The caller's array as a numpy array, without a copy where the memory allows one."""
    if isinstance(obj, np.ndarray):
        return np.asarray(obj)
    device = _dlpack_device(obj)
    if device is not None:
        if device[0] in _HOST_DEVICES:
            return _native.dlpack_host_array(obj)
        raise NotImplementedError(
            _GPU_NOT_YET.format(
                what=f"{name} is a DLPack tensor on {_native.dlpack_device_name(device[0])} "
                f"device {device[1]}"
            )
        )
    if _cuda_array_interface(obj):
        info = _native.cuda_array_interface(obj)
        raise NotImplementedError(
            _GPU_NOT_YET.format(
                what=f"{name} is a CUDA array (__cuda_array_interface__ v{info['version']}, "
                f"{info['typestr']}, shape {info['shape']}, stream {info['stream'][0]})"
            )
        )
    return np.asarray(obj)


def native_order(a: np.ndarray) -> np.ndarray:
    """``a`` in native byte order and aligned for its type, as the engines read it (a copy only
    when it is not)."""
    if not a.dtype.isnative:
        return a.astype(a.dtype.newbyteorder("="))
    if not a.flags.aligned:
        return a.copy()
    return a


def flat_pair(a: np.ndarray, w):
    """``a`` and ``w`` (same shape, or None) as 1-D contiguous arrays with elements paired as in
    the originals. A histogram does not depend on the order of its samples, so memory that is one
    contiguous block in C or Fortran order is read as it lies, with no copy; other layouts are
    copied in logical order."""
    if w is None:
        if a.flags.c_contiguous or a.flags.f_contiguous:
            return a.ravel(order="K"), None
        return a.ravel(order="C"), None
    if a.flags.c_contiguous and w.flags.c_contiguous:
        return a.ravel(order="C"), w.ravel(order="C")
    if a.flags.f_contiguous and w.flags.f_contiguous:
        return a.ravel(order="F"), w.ravel(order="F")
    return a.ravel(order="C"), w.ravel(order="C")

# The Rust extension (crates/smemkit-py/src); its callers are the package's Python modules.
from typing import Any, List, Optional, Tuple

import numpy as np

__version__: str

def histogram(
    a: np.ndarray,
    weights: Optional[np.ndarray],
    bins: Tuple[Optional[int], Optional[Tuple[float, float]], Optional[np.ndarray]],
    run: Tuple[str, str, Optional[str]],
    half: Optional[str] = None,
) -> Tuple[np.ndarray, np.ndarray, str]: ...
def histogram_bin_edges(
    a: np.ndarray, nbins: int, range: Optional[Tuple[float, float]]
) -> np.ndarray: ...
def typed_bin_edges(
    a: np.ndarray, nbins: int, range: Optional[Tuple[float, float]], half: Optional[str] = None
) -> Tuple[np.ndarray, str]: ...
def bincount(
    x: np.ndarray,
    weights: Optional[np.ndarray],
    minlength: int,
    backend: str,
    strategy: Optional[str],
    out_of_range: Optional[str] = None,
) -> np.ndarray: ...
def device_histogram(
    device: int,
    stream: int,
    samples: Tuple[int, int, str, int, Optional[str]],
    out: int,
    bins: Tuple[
        Optional[int], Optional[Tuple[float, float]], Optional[np.ndarray], bool,
        Optional[List[float]],
    ],
    run: Tuple[str, Optional[str], bool],
) -> None: ...
def data_bin_edges(dtype: str, nbins: int, extremes: List[float]) -> Tuple[np.ndarray, str]: ...
def device_cache_size() -> int: ...
def dlpack_capsule_info(capsule: Any) -> dict[str, Any]: ...
def plan(
    bins: int, dtype: str, weighted: bool, samples: Optional[int], strategy: str
) -> dict[str, Any]: ...
def cuda_array_interface(obj: Any) -> dict[str, Any]: ...
def dlpack_info(obj: Any) -> dict[str, Any]: ...
def dlpack_host_array(obj: Any) -> np.ndarray: ...
def dlpack_device_name(device_type: int) -> str: ...
def dlpack_stream(value: Any) -> Tuple[str, Optional[int]]: ...
def cuda_array_interface_stream(value: Any) -> Tuple[str, Optional[int]]: ...
def histogramdd(
    data: list[np.ndarray],
    layout: str,
    weights: Optional[np.ndarray],
    bins: list[Tuple[Optional[int], Optional[Tuple[float, float]], Optional[np.ndarray]]],
    density: bool,
    backend: str,
) -> Tuple[np.ndarray, Optional[np.ndarray], list[np.ndarray], list[int]]: ...
def digitize(x: np.ndarray, bins: np.ndarray, right: bool) -> np.ndarray: ...

class FastCall:
    @property
    def nbins(self) -> int: ...
    def run(self, stream: int, input: int, n: int, weights: int, counts: int, edges: int) -> None: ...
    def copy_edges(self, stream: int, edges: int) -> None: ...

def fast_call(
    device: int,
    dtype: str,
    weights_dtype: Optional[str],
    bins: Tuple[int, Optional[Tuple[float, float]], bool],
    run: Tuple[str, Optional[str], bool],
    edges: bytes,
) -> FastCall: ...
def trace_native() -> list[Tuple[int, int, int, int]]: ...
def estimate_bins(
    a: np.ndarray, rule: str, range: Optional[Tuple[float, float]], half: Optional[str] = None
) -> int: ...

class DeviceJointCall:
    @property
    def nbins(self) -> int: ...
    @property
    def shape(self) -> list[int]: ...
    def edges(self) -> list[np.ndarray]: ...
    def run(self, stream: int, axes: list[Tuple[int, int]], n: int, weights: int, out: int,
            tallies: int) -> None: ...

def device_joint(
    device: int,
    dtype: str,
    weights_dtype: Optional[str],
    bins: list[Tuple[Optional[int], Optional[Tuple[float, float]], Optional[np.ndarray]]],
    strategy: Optional[str],
) -> DeviceJointCall: ...
def device_joint_data_edges(
    dtype: str, nbins: int, extremes: Optional[Tuple[float, float, bool]]
) -> np.ndarray: ...

class DeviceDigitizeCall:
    def run(self, stream: int, input: int, n: int, out: int) -> None: ...

def device_digitize(device: int, dtype: str, bins: np.ndarray, right: bool) -> DeviceDigitizeCall: ...
def device_estimate(array: tuple[int, int, int, int, str], rule: str,
                    range: tuple[float, float] | None
                    ) -> tuple[int, np.ndarray, tuple[float, float] | None]: ...

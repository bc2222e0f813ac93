# The Rust extension (crates/smemkit-py/src); its callers are the package's Python modules.
from typing import Any, Optional, Tuple

import numpy as np

__version__: str

def histogram(
    a: np.ndarray,
    weights: Optional[np.ndarray],
    nbins: Optional[int],
    range: Optional[Tuple[float, float]],
    edges: Optional[np.ndarray],
    out_of_range: str,
    backend: str,
    strategy: Optional[str],
) -> Tuple[np.ndarray, np.ndarray]: ...
def histogram_bin_edges(
    a: np.ndarray, nbins: int, range: Optional[Tuple[float, float]]
) -> np.ndarray: ...
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
    input: int,
    n: int,
    dtype: str,
    weights: int,
    weights_dtype: Optional[str],
    out: int,
    nbins: Optional[int],
    range: Optional[Tuple[float, float]],
    edges: Optional[np.ndarray],
    integer_bins: bool,
    out_of_range: str,
    strategy: Optional[str],
    deterministic: bool,
) -> None: ...
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

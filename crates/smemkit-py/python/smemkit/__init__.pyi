from typing import Any, Literal, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str
__all__: list[str]

Backend = Literal["auto", "cpu", "cuda"]
OutOfRange = Literal["ignore", "clamp", "error"]
Bins = Union[int, str, npt.ArrayLike]

def histogram(
    a: npt.ArrayLike,
    bins: Bins = 10,
    range: Optional[Tuple[float, float]] = None,
    weights: Optional[npt.ArrayLike] = None,
    density: bool = False,
    *,
    backend: Backend = "auto",
    strategy: Optional[str] = None,
    out_of_range: OutOfRange = "ignore",
    deterministic: bool = False,
) -> Tuple[Any, Any]: ...
def histogram_bin_edges(
    a: npt.ArrayLike,
    bins: Bins = 10,
    range: Optional[Tuple[float, float]] = None,
    weights: Optional[npt.ArrayLike] = None,
) -> Any: ...
def bincount(
    x: npt.ArrayLike,
    weights: Optional[npt.ArrayLike] = None,
    minlength: int = 0,
    *,
    backend: Backend = "auto",
    strategy: Optional[str] = None,
    out_of_range: Optional[OutOfRange] = None,
    deterministic: bool = False,
) -> Any: ...

def histogramdd(
    sample: npt.ArrayLike,
    bins: Union[int, Sequence[Union[int, npt.ArrayLike]]] = 10,
    range: Optional[Sequence[Optional[Tuple[float, float]]]] = None,
    density: Optional[bool] = None,
    weights: Optional[npt.ArrayLike] = None,
    *,
    backend: Backend = "auto",
) -> Tuple[np.ndarray, list[np.ndarray]]: ...
def histogram2d(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    bins: Union[int, Sequence[Union[int, npt.ArrayLike]], npt.ArrayLike] = 10,
    range: Optional[Sequence[Optional[Tuple[float, float]]]] = None,
    density: Optional[bool] = None,
    weights: Optional[npt.ArrayLike] = None,
    *,
    backend: Backend = "auto",
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...
def digitize(x: npt.ArrayLike, bins: npt.ArrayLike, right: bool = False) -> np.ndarray: ...
def trace_summary() -> dict[str, Any]: ...

class Plan(dict[str, Any]):
    """The launch plan of a GPU histogram: keys device, bins, dtype, weighted, samples, strategy,
    grid, block, shared_bytes, bins_per_block, reason, sm_count, compute_capability."""

def plan(
    bins: int,
    dtype: npt.DTypeLike = "int32",
    *,
    weighted: bool = False,
    samples: Optional[int] = None,
    strategy: str = "auto",
) -> Plan: ...

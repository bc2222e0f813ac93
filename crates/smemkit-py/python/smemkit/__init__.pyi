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
) -> Tuple[np.ndarray, np.ndarray]: ...
def histogram_bin_edges(
    a: npt.ArrayLike,
    bins: Bins = 10,
    range: Optional[Tuple[float, float]] = None,
    weights: Optional[npt.ArrayLike] = None,
) -> np.ndarray: ...
def bincount(
    x: npt.ArrayLike,
    weights: Optional[npt.ArrayLike] = None,
    minlength: int = 0,
    *,
    backend: Backend = "auto",
    strategy: Optional[str] = None,
) -> np.ndarray: ...

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

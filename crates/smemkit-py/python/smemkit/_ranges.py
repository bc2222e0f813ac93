"""Which arithmetic numpy bins in for a given ``range=``. numpy computes the edges (``linspace``)
and each sample's bin in the type of the range's two values, not only the samples': Python numbers
and float64 or integer scalars are widened to float64, while float32 or float16 scalars (as
``range=(x.min(), x.max())`` of such an array gives) keep numpy in that type, as over the data's
own extremes. Host and GPU paths share this rule."""

from __future__ import annotations

import numpy as np

#: numpy's bins over a range of Python numbers (float64 arithmetic for the range).
WIDE = "wide"
#: numpy's bins over a range held in the samples' own float type: as over the data's extremes.
SAMPLE_TYPE = "sample"
#: numpy's bins of bfloat16 samples over a range of Python ints, which ml_dtypes keeps in
#: bfloat16 (a range of Python floats it widens to float64).
INT_RANGE = "int"
#: numpy's bins of samples it promotes to the range's narrower float type (int8 samples over
#: a float32 range): the samples converted to it (exactly), then as ``SAMPLE_TYPE``.
IN_RANGE_TYPE = "in_range_type"
#: numpy's bins of float64 or wide integer samples over a float32 or float16 range: edges and
#: the range's width in the range's type, each sample's bin in float64.
NARROW = "narrow"


def range_arithmetic(first, last, sample_dtype: np.dtype, half_name) -> str:
    """``WIDE``, ``SAMPLE_TYPE``, ``INT_RANGE``, ``IN_RANGE_TYPE`` or ``NARROW`` for a range
    ``(first, last)`` of samples of ``sample_dtype`` (after numpy's promotion with the range);
    NotImplementedError for the mixes the engines do not follow (float32 samples over a
    float16 range, a numpy scalar beside a Python float it cannot hold): host arrays take those
    through ``_typed_bins``, GPU arrays refuse them.
    ``half_name`` is ``'bfloat16'`` for ml_dtypes' type (which promotes Python floats but not
    Python ints), else anything."""
    range_type = np.result_type(first, last)
    if range_type.kind in "biu":
        if half_name == "bfloat16":
            if not (type(first) is int and type(last) is int):
                raise NotImplementedError(
                    "a range of numpy integer scalars for bfloat16 samples is not supported yet: "
                    "give the range as Python numbers")
            return INT_RANGE
        return WIDE
    if range_type == np.float64:
        if half_name == "bfloat16":
            check_bfloat16_bounds(first, last)
        return WIDE
    if range_type == sample_dtype and sample_dtype in (np.float32, np.float16):
        return SAMPLE_TYPE
    if range_type in (np.float32, np.float16) and sample_dtype.kind in "biuf":
        if not all(_holds(range_type, v) for v in (first, last)):
            # A Python float beside a numpy scalar: numpy rounds it for the edges but compares
            # the samples with it unrounded.
            raise NotImplementedError(
                f"a range mixing {range_type} values with Python numbers {range_type} cannot "
                f"hold, for {sample_dtype} samples, is not supported yet: give both as "
                f"{range_type} or as Python floats")
        compute = np.result_type(range_type, sample_dtype)
        if compute == range_type:
            return IN_RANGE_TYPE
        if compute == np.float64:
            return NARROW
    raise NotImplementedError(
        f"a range of {range_type} values for {sample_dtype} samples is not supported yet (numpy "
        "computes the edges in the range's type and the bins in another): give the range "
        "as Python floats")


def _holds(float_type: np.dtype, value) -> bool:
    """Whether ``value`` is a value of ``float_type`` (numpy scalars of it always are)."""
    if isinstance(value, np.generic) and value.dtype == float_type:
        return True
    return float(float_type.type(value)) == float(value)


def check_range(first: float, last: float) -> None:
    """numpy's checks of a range (``_get_outer_edges``), for ranges the library takes as the
    data's extremes and would report as such."""
    if first > last:
        raise ValueError("max must be larger than min in range parameter.")
    if not (np.isfinite(first) and np.isfinite(last)):
        raise ValueError(f"supplied range of [{first}, {last}] is not finite")


def check_bfloat16_bounds(first, last):
    """NotImplementedError where numpy keeps bfloat16 samples beyond a float range other than as
    the engines do. numpy with ml_dtypes compares bfloat16 samples with Python floats in float32
    (``bfloat16(1.296875) <= 1.296874999999`` is True) and with float64 scalars in float64. The
    two differ only where a bound's float32 rounding lands beyond it on a value bfloat16 holds.
    The engines follow Python floats at the upper bound (the value counts in the last bin, as
    numpy counts it), not float64 scalars there; at the lower one numpy fails on a sample there
    (its bin index is -1) and the engines refuse the bound, not knowing whether one is. Host
    arrays then take ``_typed_bins`` (numpy's own comparisons, and numpy's failure)."""
    import ml_dtypes  # present: the samples are of its type

    def lands_beyond(v, beyond):
        if not isinstance(v, (float, np.floating)):
            return None
        rounded = np.float32(v)
        hit = beyond(float(rounded), float(v)) and float(ml_dtypes.bfloat16(rounded)) == float(
            rounded)
        return float(rounded) if hit else None

    low = lands_beyond(first, np.less)
    if low is not None:
        raise NotImplementedError(
            f"a lower range bound of {float(first)!r} rounds in float32 to {low!r}, a bfloat16 "
            "value below the range, which numpy (ml_dtypes) compares bfloat16 samples with and "
            "keeps (numpy then fails on a sample equal to it): not followed on the GPU; give the "
            "bound as that value or one float32 holds")
    high = lands_beyond(last, np.greater)
    if high is not None and type(last) is not float:
        raise NotImplementedError(
            f"an upper range bound of {type(last).__name__} {float(last)!r} for bfloat16 samples "
            f"rounds in float32 to {high!r}, a bfloat16 value above the range: numpy compares "
            "the samples with a numpy float64 in float64 (dropping that value) and with a Python "
            "float in float32 (keeping it), and the engines follow the Python float: not "
            "followed on the GPU; give the range as Python floats")

"""``smemkit.plan``: the GPU planner's choice as a dict that prints readably."""

from __future__ import annotations

import numpy as np

from . import _native


class Plan(dict):
    """The launch plan of a GPU histogram (a dict; ``print`` shows it as ``smemkit plan`` does)."""

    def __repr__(self) -> str:
        lines = [
            f"smemkit plan: {self['bins']} bins of {self['dtype']}"
            + (", weighted" if self["weighted"] else "")
            + (f", {self['samples']} samples" if self["samples"] is not None else ""),
            f"  device         {self['device']}",
            f"  strategy       {self['strategy']}",
            f"  grid           {self['grid']} blocks x {self['block']} threads",
            f"  shared memory  {self['shared_bytes']} bytes per block",
        ]
        if self["bins_per_block"]:
            lines.append(f"  bins/block     {self['bins_per_block']}")
        lines.append(f"  why            {self['reason']}")
        return "\n".join(lines)

    __str__ = __repr__


def plan(bins, dtype="int32", *, weighted=False, samples=None, strategy="auto") -> Plan:
    """The plan smemkit's GPU engine would run for a histogram of ``bins`` bins of ``dtype``
    samples (a count of bins; ``weighted`` for sums of weights; ``samples``: the input's length,
    when known, sizes the grid). Uses the limits of the GPU in this machine, or an H100's when
    there is none (``device`` says which). ``strategy`` checks a forced strategy
    (``'shared'``, ``'global'``, ``'cluster'``, ``'partition'``, ``'sliced8'``, ``'spill4'``
    ...): a strategy that cannot run the histogram is a ValueError naming why."""
    import operator

    try:
        bins = operator.index(bins)
    except TypeError as e:
        raise TypeError("`bins` must be an integer") from e
    if bins < 1:
        raise ValueError("`bins` must be positive, when an integer")
    name = np.dtype(dtype).name
    if samples is not None:
        samples = operator.index(samples)
        if samples < 0:
            raise ValueError("`samples` must not be negative")
    return Plan(_native.plan(bins, name, bool(weighted), samples, strategy))

"""Named tuples returned by max(dim) and min(dim): (values, indices)."""

from . import _C

max = _C._max_type
min = _C._min_type

__all__ = ["max", "min"]

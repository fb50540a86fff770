"""Named tuples returned by max(dim), min(dim), sort, topk, kthvalue, median(dim), mode,
cummax and cummin: (values, indices), as torch.return_types."""

from . import _C

max = _C._max_type
min = _C._min_type
sort = _C._sort_type
topk = _C._topk_type
kthvalue = _C._kthvalue_type
median = _C._median_type
mode = _C._mode_type
cummax = _C._cummax_type
cummin = _C._cummin_type

__all__ = ["max", "min", "sort", "topk", "kthvalue", "median", "mode", "cummax", "cummin"]

"""repr(tensor) in PyTorch's format (a port of the formatting rules of torch/_tensor_str.py).

Presentation only: the values come from the tensor through tolist(); nothing here computes on
tensors.
"""

import math

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80

_DEFAULT_DTYPES = ("float32", "int64", "bool")


def _flat_values(t):
    """The values the formatter sizes columns by (the shown ones when summarized)."""
    values = []

    def walk(v, summarize):
        if not isinstance(v, list):
            values.append(v)
            return
        if summarize and len(v) > 2 * EDGEITEMS:
            for x in v[:EDGEITEMS] + v[-EDGEITEMS:]:
                walk(x, summarize)
        else:
            for x in v:
                walk(x, summarize)

    walk(t, _flat_values.summarize)
    return values


class _Formatter:
    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        finite = [v for v in values if math.isfinite(v) and v != 0]
        if not finite:
            return
        abs_vals = [abs(v) for v in finite]
        vmin, vmax = min(abs_vals), max(abs_vals)
        for v in finite:
            if v != math.ceil(v):
                self.int_mode = False
                break
        if self.int_mode:
            if vmax / vmin > 1000.0 or vmax > 1.0e8:
                self.sci_mode = True
                for v in finite:
                    self.max_width = max(self.max_width, len(f"{v:.{PRECISION}e}"))
            else:
                for v in finite:
                    self.max_width = max(self.max_width, len(f"{v:.0f}") + 1)
        else:
            if vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4:
                self.sci_mode = True
                for v in finite:
                    self.max_width = max(self.max_width, len(f"{v:.{PRECISION}e}"))
            else:
                for v in finite:
                    self.max_width = max(self.max_width, len(f"{v:.{PRECISION}f}"))

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRECISION}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _vector_str(v, indent, summarize, fmt):
    element_length = fmt.width() + 2
    per_line = max(1, int(math.floor((LINEWIDTH - indent) / element_length)))
    if summarize and len(v) > 2 * EDGEITEMS:
        data = [fmt.format(x) for x in v[:EDGEITEMS]] + [" ..."] + [fmt.format(x) for x in v[-EDGEITEMS:]]
    else:
        data = [fmt.format(x) for x in v]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(v, ndim, indent, summarize, fmt):
    if ndim == 0:
        return fmt.format(v)
    if ndim == 1:
        return _vector_str(v, indent, summarize, fmt)
    if summarize and len(v) > 2 * EDGEITEMS:
        slices = ([_nested_str(x, ndim - 1, indent + 1, summarize, fmt) for x in v[:EDGEITEMS]] + ["..."]
                  + [_nested_str(x, ndim - 1, indent + 1, summarize, fmt) for x in v[-EDGEITEMS:]])
    else:
        slices = [_nested_str(x, ndim - 1, indent + 1, summarize, fmt) for x in v]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t):
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    dtype_name = t.dtype.name
    if t.numel() == 0:
        if t.ndim != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
        if dtype_name != "float32":
            suffixes.append(f"dtype=vkml.{dtype_name}")
        body = "[]"
    else:
        if dtype_name not in _DEFAULT_DTYPES:
            suffixes.append(f"dtype=vkml.{dtype_name}")
        values = t.detach().tolist()
        summarize = t.numel() > THRESHOLD
        _flat_values.summarize = summarize
        flat = _flat_values(values) if t.ndim > 0 else [values]
        fmt = _Formatter(flat, t.is_floating_point())
        body = _nested_str(values, t.ndim, indent, summarize, fmt)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)

"""repr(tensor) in PyTorch's format (a port of the formatting rules of torch/_tensor_str.py).

Presentation only: the values come from the tensor through tolist(); nothing here computes on
tensors.
"""

import math

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE = None  # None: chosen from the values; True/False: forced (vk.set_printoptions)



def _default_dtypes(t):
    # torch leaves out the dtype it would infer: the default float dtype, int64 and bool.
    from . import get_default_dtype
    return (get_default_dtype().name, "int64", "bool")


# The nested lists are walked with a stack, not by recursion: a tensor may have more dims than
# Python's recursion limit.

def _shown(v, summarize):
    """The items of one nested list that are printed; None stands for the elided middle."""
    if summarize and len(v) > 2 * EDGEITEMS:
        return v[:EDGEITEMS] + [None] + v[-EDGEITEMS:]
    return v


def _flat_values(t, summarize):
    """The values the formatter sizes columns by (the shown ones when summarized)."""
    values, stack = [], [t]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(reversed([x for x in _shown(v, summarize) if x is not None]))
        else:
            values.append(v)
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
        # torch's order: the notation first (sci_mode forced by vk.set_printoptions, or chosen
        # from the range), then the widths in that notation.
        self.sci_mode = (vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4
                         if SCI_MODE is None else SCI_MODE)
        for v in finite:
            if self.sci_mode:
                text = f"{v:.{PRECISION}e}"
            elif self.int_mode:
                text = f"{v:.0f}" + " "
            else:
                text = f"{v:.{PRECISION}f}"
            self.max_width = max(self.max_width, len(text))

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
    # One frame per open bracket: [items to print, next item, dims, indent, finished parts]
    stack = [[_shown(v, summarize), 0, ndim, indent, []]]
    while True:
        frame = stack[-1]
        items, i, nd, ind, parts = frame
        if i < len(items):
            frame[1] += 1
            x = items[i]
            if x is None:
                parts.append("...")
            elif nd == 2:
                parts.append(_vector_str(x, ind + 1, summarize, fmt))
            else:
                stack.append([_shown(x, summarize), 0, nd - 1, ind + 1, []])
            continue
        text = "[" + ("," + "\n" * (nd - 1) + " " * (ind + 1)).join(parts) + "]"
        stack.pop()
        if not stack:
            return text
        stack[-1][4].append(text)


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
    # torch's order: size (of an empty tensor), device (when not the CPU), dtype, autograd.
    device = [] if t.device.type == "cpu" else [f"device='{t.device}'"]
    if t.numel() == 0:
        if t.ndim != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
        suffixes += device
        if dtype_name != _default_dtypes(t)[0]:
            suffixes.append(f"dtype=vkml.{dtype_name}")
        body = "[]"
    else:
        suffixes += device
        if dtype_name not in _default_dtypes(t):
            suffixes.append(f"dtype=vkml.{dtype_name}")
        values = t.detach().tolist()
        summarize = t.numel() > THRESHOLD
        flat = _flat_values(values, summarize) if t.ndim > 0 else [values]
        fmt = _Formatter(flat, t.is_floating_point())
        body = _nested_str(values, t.ndim, indent, summarize, fmt)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """torch.set_printoptions: a profile first sets all four, then the given options override;
    sci_mode=None returns to choosing from the values."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r} (default, short, "
                             "full)")
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    if precision is not None:
        PRECISION = int(precision)
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGEITEMS = int(edgeitems)
    if linewidth is not None:
        LINEWIDTH = int(linewidth)
    SCI_MODE = sci_mode

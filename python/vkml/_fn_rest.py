"""The torch namespace's last porting names that compose existing ops (issue #15): torch.convolution
and conv_tbc, the grid sampler's ATen-level entry points (integer mode codes), the functional RNN
forms torch.rnn_tanh / rnn_relu / lstm / gru (padded and packed), AcceleratorError and FatalError,
Stream and Event (vkml has one in-order queue per device), and the small Tensor members is_set_to,
is_xla, module_load and grad_dtype. install() puts them on Tensor and the vkml namespace."""

import time
import weakref

from . import _C

Tensor = _C.Tensor


# ---- exceptions, with torch's bases ----

class AcceleratorError(RuntimeError):
    """An error raised by the accelerator's runtime (torch's is a RuntimeError too)."""


class FatalError(Exception):
    """An error after which the process cannot go on (torch's derives from Exception directly)."""


# ---- convolution ----

def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """torch.convolution: the one entry point behind every convNd and conv_transposeNd, picked by
    the weight's rank (3, 4, 5 for 1-D, 2-D, 3-D) and `transposed`."""
    from .nn import functional as F
    dims = weight.ndim - 2
    if dims not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight, got {weight.ndim}-D")
    if input.ndim != weight.ndim:
        raise RuntimeError(f"convolution: expected a {weight.ndim}-D input for a {weight.ndim}-D weight, "
                           f"got {input.ndim}-D")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[dims - 1]
        return fn(input, weight, bias, _tuple(stride), _tuple(padding), _tuple(output_padding), groups,
                  _tuple(dilation))
    fn = (F.conv1d, F.conv2d, F.conv3d)[dims - 1]
    return fn(input, weight, bias, _tuple(stride), _tuple(padding), _tuple(dilation), groups)


def _tuple(v):
    return tuple(v) if isinstance(v, (list, tuple)) else v


def conv_tbc(input, weight, bias, pad=0):
    """torch.conv_tbc: nn.functional.conv_tbc."""
    from .nn import functional as F
    return F.conv_tbc(input, weight, bias, pad)


# ---- the grid sampler's ATen-level forms: integer codes for the mode and the padding ----

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


def affine_grid_generator(theta, size, align_corners):
    """torch.affine_grid_generator: nn.functional.affine_grid with align_corners required."""
    from .nn import functional as F
    return F.affine_grid(theta, list(size), align_corners)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler: nn.functional.grid_sample with torch's integer codes (mode 0 bilinear,
    1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    from .nn import functional as F
    mode, padding = _code("interpolation_mode", interpolation_mode, _MODES), _code("padding_mode", padding_mode,
                                                                                   _PADDINGS)
    return F.grid_sample(input, grid, mode, padding, align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_2d: grid_sampler for a 4-D input."""
    _rank("grid_sampler_2d", input, 4)
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_3d: grid_sampler for a 5-D input (grid_sample raises NotImplementedError
    for 3-D sampling until it supports it)."""
    _rank("grid_sampler_3d", input, 5)
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def _code(what, value, names):
    if not isinstance(value, int) or not 0 <= value < len(names):
        raise RuntimeError(f"grid_sampler(): {what} must be an int in [0, {len(names) - 1}], got {value!r}")
    return names[value]


def _rank(op, input, ndim):
    if input.ndim != ndim:
        raise RuntimeError(f"{op}(): expected a {ndim}-D input, got {input.ndim}-D")


# ---- the functional RNN forms: torch.rnn_tanh / rnn_relu / lstm / gru over a flat weight list ----

_PADDED = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional", "batch_first")
_PACKED = ("data", "batch_sizes", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional")


class _FlatStack:
    """What nn.RNNBase._run reads of a module (mode, layers, directions, dropout, the weights of
    each layer and direction), taken from torch's flat list: per layer, per direction, w_ih, w_hh,
    then b_ih, b_hh with biases, then w_hr for an LSTM with projections."""

    def __init__(self, op, mode, params, has_biases, num_layers, dropout, train, bidirectional, proj):
        self.mode, self.num_layers, self.bidirectional = mode, int(num_layers), bool(bidirectional)
        self.dropout, self.training = float(dropout), bool(train)
        per = 2 + 2 * bool(has_biases) + bool(proj)
        dirs = 2 if self.bidirectional else 1
        params = list(params)
        if len(params) != per * self.num_layers * dirs:
            raise RuntimeError(f"{op}: expected {per * self.num_layers * dirs} parameters ({per} per layer and "
                               f"direction), got {len(params)}")
        self._by_suffix = {}
        for k in range(self.num_layers * dirs):
            group = params[k * per:(k + 1) * per]
            w_ih, w_hh = group[0], group[1]
            b_ih, b_hh = (group[2], group[3]) if has_biases else (None, None)
            w_hr = group[-1] if proj else None
            self._by_suffix[f"_l{k // dirs}" + ("_reverse" if k % dirs else "")] = (w_ih, w_hh, b_ih, b_hh, w_hr)

    def _weights(self, sfx):
        return self._by_suffix[sfx]


def _bind(op, args, kwargs):
    """Names torch's arguments: the packed overload is the one whose 4th argument is the weight
    list (the padded one has has_biases there)."""
    packed = len(args) > 3 and isinstance(args[3], (list, tuple)) or "batch_sizes" in kwargs
    names = _PACKED if packed else _PADDED
    if len(args) > len(names):
        raise TypeError(f"{op}() takes {len(names)} arguments, got {len(args)}")
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in bound:
            raise TypeError(f"{op}() got an unexpected or repeated argument '{k}'")
        bound[k] = v
    missing = [n for n in names if n not in bound]
    if missing:
        raise TypeError(f"{op}() missing required arguments: {', '.join(missing)}")
    return packed, bound


def _recurrent(op, mode, args, kwargs):
    from .nn.modules.rnn import RNNBase
    packed, a = _bind(op, args, kwargs)
    lstm = mode == "LSTM"
    if lstm:
        if not isinstance(a["hx"], (list, tuple)) or len(a["hx"]) != 2:
            raise RuntimeError(f"{op}: hx must be a pair (h_0, c_0)")
        h0, c0 = a["hx"]
    else:
        h0, c0 = a["hx"], None
    proj = lstm and h0.shape[-1] != c0.shape[-1]
    stack = _FlatStack(op, mode, a["params"], a["has_biases"], a["num_layers"], a["dropout"], a["train"],
                       a["bidirectional"], proj)
    if packed:
        x, batch_sizes = a["data"], [int(b) for b in a["batch_sizes"].tolist()]
        _expect(op, "data", x, 2)
        batch = batch_sizes[0] if batch_sizes else 0
    else:
        x, batch_sizes = a["input"], None
        _expect(op, "input", x, 3)
        if a["batch_first"]:
            x = x.transpose(0, 1)
        batch = x.shape[1]
    dirs = 2 if stack.bidirectional else 1
    _check_state(op, "hx[0]" if lstm else "hx", h0, (stack.num_layers * dirs, batch))
    if lstm:
        _check_state(op, "hx[1]", c0, (stack.num_layers * dirs, batch))
    out, h_n, c_n = RNNBase._run(stack, x, batch_sizes, h0, c0)
    if not packed and a["batch_first"]:
        out = out.transpose(0, 1)
    return (out, h_n, c_n) if lstm else (out, h_n)


def _expect(op, what, t, ndim):
    if t.ndim != ndim:
        raise RuntimeError(f"{op}: {what} must have {ndim} dimensions, got {t.ndim}")


def _check_state(op, what, t, lead):
    if t.ndim != 3 or tuple(t.shape[:2]) != tuple(lead):
        raise RuntimeError(f"{op}: expected {what} of shape ({lead[0]}, {lead[1]}, hidden), got {list(t.shape)}")


def rnn_tanh(*args, **kwargs):
    """torch.rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) -> (output, h_n), or the packed form (data, batch_sizes, hx, params, ...): an
    nn.RNN(nonlinearity='tanh') run on the given weights."""
    return _recurrent("rnn_tanh", "RNN_TANH", args, kwargs)


def rnn_relu(*args, **kwargs):
    """torch.rnn_relu: rnn_tanh with a ReLU."""
    return _recurrent("rnn_relu", "RNN_RELU", args, kwargs)


def lstm(*args, **kwargs):
    """torch.lstm(input, (h_0, c_0), params, ...) -> (output, h_n, c_n), or the packed form; the
    weights include w_hr (projections) when h_0's last size differs from c_0's, as torch's."""
    return _recurrent("lstm", "LSTM", args, kwargs)


def gru(*args, **kwargs):
    """torch.gru: as rnn_tanh, for an nn.GRU."""
    return _recurrent("gru", "GRU", args, kwargs)


# ---- Stream and Event: vkml has one in-order queue per device ----

def _resolve_device(device):
    if device is None:
        from . import accelerator
        return accelerator.current_accelerator() or _C.device("cpu")
    return device if isinstance(device, _C.device) else _C.device(device)


def _device_sync(device):
    if device.type == "vulkan":
        from . import accelerator
        accelerator.synchronize()


class Stream:
    """torch.Stream for vkml. Each device has one in-order queue, so every Stream is that queue:
    wait_stream and wait_event have nothing to order and do nothing, synchronize and query wait for
    the device (query then answers True), and `with stream:` changes nothing."""

    def __init__(self, device=None, *, priority=0):
        self._device = _resolve_device(device)
        self.priority = priority
        self.stream_id = 0

    device = property(lambda self: self._device)
    device_type = property(lambda self: self._device.type)
    device_index = property(lambda self: -1 if self._device.index is None else self._device.index)

    def query(self):
        _device_sync(self._device)
        return True

    def synchronize(self):
        _device_sync(self._device)

    def wait_event(self, event):
        """Nothing to do: work after this call already runs after the event's."""

    def wait_stream(self, stream):
        """Nothing to do: there is one queue per device."""

    def record_event(self, event=None):
        event = Event(self._device) if event is None else event
        event.record(self)
        return event

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"vkml.Stream device_type={self.device_type}, device_index={self.device_index}, stream_id=0"


class Event:
    """torch.Event for vkml. record() marks the point in the device's one queue; with
    enable_timing it waits for the device first, so elapsed_time measures finished work (in ms).
    wait() has nothing to order; query() and synchronize() wait for the device."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        self._device = _resolve_device(device)
        self.enable_timing, self.blocking, self.interprocess = enable_timing, blocking, interprocess
        self.event_id = 0
        self._time = None
        self._recorded = False

    device = property(lambda self: self._device)

    def record(self, stream=None):
        if self.enable_timing:
            _device_sync(self._device)
            self._time = time.perf_counter()
        self._recorded = True

    def query(self):
        _device_sync(self._device)
        return True

    def synchronize(self):
        _device_sync(self._device)

    def wait(self, stream=None):
        """Nothing to do: work after this call already runs after the recorded point."""

    def elapsed_time(self, end_event):
        if not (self._recorded and end_event._recorded):
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        return (end_event._time - self._time) * 1000.0

    def __repr__(self):
        index = -1 if self._device.index is None else self._device.index
        return (f"vkml.Event device_type={self._device.type}, device_index={index}, "
                f"event_flag={int(bool(self.enable_timing))}, event_id=0")


# ---- small Tensor members ----

def _is_set_to(self, tensor):
    """True when both tensors view the same memory the same way (pointer, sizes and strides)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    return (self.data_ptr() == tensor.data_ptr() and tuple(self.shape) == tuple(tensor.shape)
            and tuple(self.stride()) == tuple(tensor.stride()) and self.dtype == tensor.dtype
            and self.device == tensor.device)


def _module_load(self, other, assign=False):
    """How load_state_dict turns `other` into the value for this parameter or buffer: a detached
    copy of other into self, or other itself detached with assign=True."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


# vkml's engine never casts a gradient, so grad_dtype may only be the tensor's dtype or None ("any
# dtype", which vkml's same-dtype gradients satisfy). None is kept per tensor, by id, until the
# tensor is freed.
_ANY_GRAD_DTYPE = set()


def _grad_dtype_get(self):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return None if id(self) in _ANY_GRAD_DTYPE else self.dtype


def _grad_dtype_set(self, dtype):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if dtype is not None and not isinstance(dtype, _C.dtype):
        raise RuntimeError(f"grad_dtype must be a vkml.dtype or None, but got {type(dtype).__name__}")
    if dtype is not None and dtype != self.dtype:
        raise NotImplementedError(f"grad_dtype = {dtype}: vkml's autograd does not cast gradients, so a leaf's "
                                  f"grad_dtype can only be its dtype ({self.dtype}) or None")
    if dtype is None and id(self) not in _ANY_GRAD_DTYPE:
        _ANY_GRAD_DTYPE.add(id(self))
        weakref.finalize(self, _ANY_GRAD_DTYPE.discard, id(self))
    elif dtype is not None:
        _ANY_GRAD_DTYPE.discard(id(self))


def install(namespace):
    """Puts the functions and classes into `namespace` (the vkml module's globals) and the members
    on Tensor."""
    for obj in (AcceleratorError, FatalError, convolution, conv_tbc, affine_grid_generator, grid_sampler,
                grid_sampler_2d, grid_sampler_3d, rnn_tanh, rnn_relu, lstm, gru, Stream, Event):
        namespace[obj.__name__] = obj
    Tensor.is_set_to = _is_set_to
    Tensor.module_load = _module_load
    Tensor.is_xla = property(lambda self: False)
    Tensor.grad_dtype = property(_grad_dtype_get, _grad_dtype_set)

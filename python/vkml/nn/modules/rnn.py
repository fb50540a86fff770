"""vk.nn recurrent layers (issue #16 item 2: rnn): RNN, LSTM, GRU and their cells, with torch's
constructor signatures, parameter names (weight_ih_l0, ..., _reverse, weight_hr_l0) and init.

Each layer projects its whole input at once (one GEMM for every time step), then walks the steps:
per step one GEMM with W_hh and, for the LSTM, one fused op (_C._lstm_cell: the gates'
activations and the new cell state; its gradient is one fused op too). A PackedSequence runs
the same walk with the batch shrinking step by step, as torch's does. An LSTM layer without
projection over a padded batch is one graph node instead (_LstmLayer: both time loops in C++, one
GEMM for W_hh's gradient)."""

import math

from ... import _C
from ...autograd import Function
from .. import functional as F
from .. import init
from ..utils.rnn import PackedSequence
from .module import Module, Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _rnn_step(nonlinearity):
    act = _C.tanh if nonlinearity == "tanh" else _C.relu

    def step(xw, h, c, w_hh, b_hh):
        return act(_C.addmm(xw, h, w_hh)), None  # one GEMM onto the input term
    return step


def _lstm_step(xw, h, c, w_hh, b_hh):
    return _C._lstm_cell(_C.addmm(xw, h, w_hh), c)


def _gru_step(xw, h, c, w_hh, b_hh):
    # torch's form: the reset gate multiplies the hidden part of n after its GEMM (and bias).
    hw = h.matmul(w_hh) if b_hh is None else _C.addmm(b_hh, h, w_hh)
    x_r, x_z, x_n = xw.chunk(3, 1)
    h_r, h_z, h_n = hw.chunk(3, 1)
    r = _C.sigmoid(x_r + h_r)
    z = _C.sigmoid(x_z + h_z)
    n = _C.tanh(x_n + r * h_n)
    return n + z * (h - n), None


def _walk(steps, batch_sizes, h, c, w_hh, b_hh, w_hr, step, reverse):
    """Runs `step` over the per-step inputs (each (batch_sizes[t], G)); returns the outputs in
    input order and the final (h, c) of every sequence (its last real step, for a shrinking
    batch)."""
    full_h, full_c = h, c
    n = len(steps)
    order = range(n - 1, -1, -1) if reverse else range(n)
    outs = [None] * n
    done_h, done_c = [], []
    live = h.shape[0]  # the whole batch runs the first step; reversed, only the longest do
    if reverse and n and batch_sizes[-1] != live:
        live = batch_sizes[-1]
        h, c = h[:live], None if c is None else c[:live]
    for t in order:
        bs = batch_sizes[t]
        if bs != live:
            if not reverse:  # sequences bs..live ended at the step before: their state is final
                done_h.append(h[bs:live])
                h = h[:bs]
                if c is not None:
                    done_c.append(c[bs:live])
                    c = c[:bs]
            else:  # sequences live..bs start here, from their initial state
                h = _C.cat([h, full_h[live:bs]], 0)
                if c is not None:
                    c = _C.cat([c, full_c[live:bs]], 0)
            live = bs
        h, c_new = step(steps[t], h, c, w_hh, b_hh)
        if w_hr is not None:
            h = h.matmul(w_hr)
        c = c_new
        outs[t] = h
    if not reverse and done_h:
        done_h.append(h)
        h = _C.cat(done_h[::-1], 0)
        if c is not None:
            done_c.append(c)
            c = _C.cat(done_c[::-1], 0)
    return outs, h, c


# --- the LSTM layer as one graph node (issue #16 item 2, lstm) ---
class _LstmLayer(Function):
    """A whole LSTM layer (one direction, no projection, equal lengths) as one graph node, so that
    the backward is one reverse-time loop rather than a graph of per-step nodes: per step the fused
    cell gradient and one GEMM for dh, the input gradient is the gates' gradients stacked (no
    per-step slices of the (T, B, 4H) projection), and the W_hh gradient is ONE GEMM over all
    steps instead of T small ones and T - 1 sums. Both loops run in C++ (ops/rnn.cpp). Returns
    (T + 1, B, H): the h of every step, then the final c."""

    @staticmethod
    def forward(ctx, xw, h0, c0, wt, reverse):
        gates, hs, cs = _C._lstm_layer_forward(xw, h0, c0, wt, reverse)
        ctx.inputs, ctx.saved = (xw, h0, c0, wt, reverse), (gates, hs, cs)
        return _C.stack(hs + [cs[0] if reverse else cs[-1]], 0)

    @staticmethod
    def backward(ctx, gy):
        xw, h0, c0, wt, reverse = ctx.inputs
        # With create_graph the saved states (computed unrecorded) do not depend on the inputs:
        # recompute them recorded, so that the gradient is differentiable again (every op of both
        # loops has its own rule).
        states = _C._lstm_layer_forward(xw, h0, c0, wt, reverse) if _C.is_grad_enabled() else ctx.saved
        return _C._lstm_layer_backward(gy, *states, h0, c0, wt, reverse) + (None,)


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        dtype = dtype or _C.dtype.float32
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                for name, shape in shapes:
                    setattr(self, name + sfx, Parameter(_C.empty(*shape, dtype=dtype)))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()
        self._place_on(device)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """torch packs the weights for cuDNN; here there is nothing to do."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in self._flat_weights_names if n.endswith(sfx)]
                for sfx in self._suffixes()]

    def _suffixes(self):
        return [f"_l{layer}" + ("_reverse" if d else "") for layer in range(self.num_layers)
                for d in range(2 if self.bidirectional else 1)]

    def _weights(self, sfx):
        get = lambda name: getattr(self, name + sfx, None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def _name(self):
        return type(self).__name__

    def _check_input(self, input, batch_sizes):
        expected = 2 if batch_sizes is not None else 3
        if input.ndim != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.ndim}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")

    def _check_hidden(self, hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))

    def _run(self, x, batch_sizes, hx, cx):
        """x: (L, N, I) padded input or (T, I) packed data; hx (layers * dirs, N, H_out)."""
        step = (_lstm_step if self.mode == "LSTM" else _gru_step if self.mode == "GRU"
                else _rnn_step("tanh" if self.mode == "RNN_TANH" else "relu"))
        directions = 2 if self.bidirectional else 1
        packed = batch_sizes is not None
        if not packed:
            batch_sizes = [x.shape[1]] * x.shape[0]
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs_by_dir = []
            for d in range(directions):
                k = layer * directions + d
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(f"_l{layer}" + ("_reverse" if d else ""))
                # One GEMM for every step's input projection; the biases go in with it, except
                # b_hh of the GRU, which the reset gate scales.
                bias = None
                if b_ih is not None:
                    bias = b_ih if self.mode == "GRU" else b_ih + b_hh
                xw = F.linear(x, w_ih, bias)
                if self.mode == "LSTM" and not packed and w_hr is None and x.shape[0] > 0:
                    y = _LstmLayer.apply(xw, hx[k], cx[k], w_hh.t(), d == 1)
                    outs_by_dir.append(y[:-1])
                    h_n.append(y[0 if d == 1 else -2])
                    c_n.append(y[-1])
                    continue
                steps = xw.split(batch_sizes, 0) if packed else xw.unbind(0)
                outs, h, c = _walk(steps, batch_sizes, hx[k], None if cx is None else cx[k], w_hh.t(),
                                   b_hh if self.mode == "GRU" else None,
                                   None if w_hr is None else w_hr.t(), step, d == 1)
                outs_by_dir.append(_C.cat(outs, 0) if packed else _C.stack(outs, 0))
                h_n.append(h)
                if c is not None:
                    c_n.append(c)
            x = outs_by_dir[0] if directions == 1 else _C.cat(outs_by_dir, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, _C.stack(h_n, 0), (_C.stack(c_n, 0) if c_n else None)

    def forward(self, input, hx=None):
        lstm = self.mode == "LSTM"
        directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        packed = isinstance(input, PackedSequence)
        batched = True
        sorted_indices = unsorted_indices = None
        if packed:
            x, batch_sizes_t = input.data, input.batch_sizes
            sorted_indices, unsorted_indices = input.sorted_indices, input.unsorted_indices
            batch_sizes = [int(b) for b in batch_sizes_t.tolist()]
            batch = batch_sizes[0]
            self._check_input(x, batch_sizes)
        else:
            batch_sizes = None
            if input.ndim not in (2, 3):
                raise ValueError(f"{self._name()}: Expected input to be 2D or 3D, got {input.ndim}D instead")
            batched = input.ndim == 3
            x = input if batched else input.unsqueeze(1)
            if self.batch_first and batched:
                x = x.transpose(0, 1)
            self._check_input(x, None)
            batch = x.shape[1]
        state_shape = (self.num_layers * directions, batch, real_hidden)
        cell_shape = (self.num_layers * directions, batch, self.hidden_size)
        if hx is None:
            h0 = _C.zeros(*state_shape, dtype=x.dtype, device=x.device)
            c0 = _C.zeros(*cell_shape, dtype=x.dtype, device=x.device) if lstm else None
        else:
            if lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise TypeError("LSTM: hx must be a tuple (h_0, c_0)")
                h0, c0 = hx
            else:
                if not isinstance(hx, _C.Tensor):
                    raise TypeError(f"{self._name()}: hx must be a Tensor, got {type(hx).__name__}")
                h0, c0 = hx, None
            for t in (h0, c0):
                if t is None:
                    continue
                if not batched and t.ndim != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {t.ndim}-D tensor")
                if batched and t.ndim != 3:
                    raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {t.ndim}-D tensor")
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = None if c0 is None else c0.unsqueeze(1)
            if sorted_indices is not None:
                h0 = h0.index_select(1, sorted_indices)
                c0 = None if c0 is None else c0.index_select(1, sorted_indices)
            self._check_hidden(h0, state_shape)
            if c0 is not None:
                self._check_hidden(c0, cell_shape, "Expected hidden[1] size {}, got {}")
        out, h_n, c_n = self._run(x, batch_sizes, h0, c0)
        if packed:
            if unsorted_indices is not None:
                h_n = h_n.index_select(1, unsorted_indices)
                c_n = None if c_n is None else c_n.index_select(1, unsorted_indices)
            out = PackedSequence(out, batch_sizes_t, sorted_indices, unsorted_indices)
        else:
            if self.batch_first and batched:
                out = out.transpose(0, 1)
            if not batched:
                out, h_n = out.squeeze(1), h_n.squeeze(1)
                c_n = None if c_n is None else c_n.squeeze(1)
        return (out, (h_n, c_n)) if lstm else (out, h_n)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:  # RNN(input_size, hidden_size, num_layers, nonlinearity, ...)
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        dtype = dtype or _C.dtype.float32
        self.weight_ih = Parameter(_C.empty(num_chunks * hidden_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(_C.empty(num_chunks * hidden_size, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_C.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(_C.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()
        self._place_on(device)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, hx):
        """(input as (N, I), [hidden states as (N, H)], batched)."""
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        for t in hx:
            if t is not None and t.ndim != input.ndim:
                raise RuntimeError(f"{name}: Expected hidden to be {input.ndim}D, got {t.ndim}D instead")
        if not batched:
            input = input.unsqueeze(0)
            hx = [None if t is None else t.unsqueeze(0) for t in hx]
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        batch = input.shape[0]
        states = []
        for t in hx:
            if t is None:
                t = _C.zeros(batch, self.hidden_size, dtype=input.dtype, device=input.device)
            elif tuple(t.shape) != (batch, self.hidden_size):
                raise RuntimeError(f"hidden has inconsistent shape: got {list(t.shape)}, expected "
                                   f"{[batch, self.hidden_size]}")
            states.append(t)
        return input, states, batched

    def _gates(self, x, h):
        return F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, [hx])
        act = _C.tanh if self.nonlinearity == "tanh" else _C.relu
        h = act(self._gates(x, h))
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        h0, c0 = (None, None) if hx is None else hx
        x, (h, c), batched = self._prepare(input, [h0, c0])
        h, c = _C._lstm_cell(self._gates(x, h), c)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, [hx])
        xw = F.linear(x, self.weight_ih, self.bias_ih)
        h, _ = _gru_step(xw, h, None, self.weight_hh.t(), self.bias_hh)
        return h if batched else h.squeeze(0)

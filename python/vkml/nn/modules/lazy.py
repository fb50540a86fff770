"""vk.nn lazy modules (torch.nn.LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*, LazyInstanceNorm*).

A lazy layer takes its non-lazy layer's arguments minus the size of its input (in_features,
in_channels, num_features), which it reads from its first input. Until then its parameters (and the
norms' running stats) are nn.parameter.UninitializedParameter / UninitializedBuffer. The first call
gives them their shapes in place (the same Parameter objects: an optimizer built before keeps them),
runs the layer's reset_parameters() and turns the module into the non-lazy class (cls_to_become).
load_state_dict before any call takes the shapes from the checkpoint instead."""

import itertools

from ... import _C, Tensor
from ..._grad_mode import no_grad
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d
from .conv_breadth import Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d,
                            InstanceNorm3d)

__all__ = ["LazyModuleMixin"]


def _check_input(module, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{type(module).__name__}: expected a vkml Tensor as input, got {type(input).__name__}")


def _plain_buffer(module, name):
    if name in module._buffers:  # a plain Tensor sharing the materialized buffer's data (see parameter.py)
        module._buffers[name] = module._buffers[name].detach()


class LazyModuleMixin:
    """The lazy part of a lazy layer: a forward pre-hook that infers the parameters' shapes from the first
    input (initialize_parameters, which each layer defines), then becomes cls_to_become."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self):
        """Whether a parameter or buffer of this module (not of its children) is still uninitialized."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
        # removed by its id from this module's own dicts (not through the handle, whose weak references
        # point at the original's dicts in a deepcopy)
        hook_id = module.__dict__.pop("_initialize_hook").id
        module._forward_pre_hooks.pop(hook_id, None)
        module._forward_pre_hooks_with_kwargs.pop(hook_id, None)
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # the uninitialized tensors themselves, as torch's (detach would give an empty tensor)
        for store, skip in ((self._parameters, ()), (self._buffers, self._non_persistent_buffers_set)):
            for name, t in store.items():
                if t is not None and name not in skip:
                    destination[prefix + name] = t if keep_vars or is_lazy(t) else t.detach()

    def _load_from_state_dict(self, state_dict, prefix, strict, missing, unexpected, errors, assign=False):
        """An uninitialized tensor takes the shape of the checkpoint's, then loads it as any other.
        An uninitialized one in the checkpoint as well leaves it as it is (nothing to copy)."""
        both_lazy = set()
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if not is_lazy(t) or key not in state_dict:
                continue
            value = state_dict[key]
            if is_lazy(value):
                both_lazy.add(key)
            elif hasattr(value, "shape"):
                with no_grad():
                    t.materialize(tuple(value.shape))
                _plain_buffer(self, name)
        if both_lazy:
            state_dict = {k: v for k, v in state_dict.items() if k not in both_lazy}
        super()._load_from_state_dict(state_dict, prefix, strict, missing, unexpected, errors, assign)
        missing[:] = [k for k in missing if k not in both_lazy]


class _LazyLayer(LazyModuleMixin):
    """What vkml's lazy layers share: the size read from the input (_inferred), materializing, and
    reset_parameters() skipped while the layer has no real parameters."""

    _inferred = ""  # the constructor argument read from the input; 0 until then

    def reset_parameters(self):
        # the base layer's __init__ calls this on its zero-size placeholders: nothing to do until materialized
        if not self.has_uninitialized_params() and getattr(self, self._inferred) != 0:
            super().reset_parameters()

    def _materialize(self, shapes):
        """Gives each still-uninitialized tensor named in shapes its shape and runs reset_parameters().
        As the non-lazy layers' device= does, the values are made on the CPU and then moved to the
        device the tensor was declared on, so that a seed gives the same values on every device."""
        devices = {}
        with no_grad():
            for name, shape in shapes.items():
                t = getattr(self, name)
                if is_lazy(t):
                    devices[name] = Tensor.detach(t).device
                    t.materialize(shape, device="cpu")
                    _plain_buffer(self, name)
            self.reset_parameters()
            for name, device in devices.items():
                t = getattr(self, name)
                if name in self._parameters:
                    t.data = t.detach().to(device)
                else:
                    self._buffers[name] = t.to(device)

    def _load_from_state_dict(self, state_dict, prefix, strict, missing, unexpected, errors, assign=False):
        super()._load_from_state_dict(state_dict, prefix, strict, missing, unexpected, errors, assign)
        # the inferred size read from the checkpoint's shapes (torch's conv and norm layers leave it 0)
        size = self._inferred_from_tensors()
        if size is not None:
            setattr(self, self._inferred, size)

    def _inferred_from_tensors(self):
        raise NotImplementedError


def _declared(t, ndim):
    return t is not None and not is_lazy(t) and t.ndim == ndim


# ---- Linear ----

class LazyLinear(_LazyLayer, Linear):
    """Linear whose in_features is the last dim of the first input."""

    cls_to_become = Linear
    _inferred = "in_features"

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False, None, dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        _check_input(self, input)
        if input.ndim < 1:
            raise RuntimeError(f"{type(self).__name__}: expected an input of at least 1 dimension to infer "
                               "in_features (got a 0-D tensor)")
        self.in_features = input.shape[-1]
        self._materialize({"weight": (self.out_features, self.in_features), "bias": (self.out_features,)})

    def _inferred_from_tensors(self):
        return self.weight.shape[1] if _declared(self.weight, 2) else None


# ---- convolutions ----

class _LazyConvXdMixin(_LazyLayer):
    _inferred = "in_channels"
    _transposed = False

    def _declare(self, out_channels, bias, device, dtype):
        """The parameters, in place of the zero-size ones the base layer made."""
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def _get_in_channels(self, input):
        n = self._n
        if input.ndim not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.ndim == n + 2 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        _check_input(self, input)
        in_channels = self._get_in_channels(input)
        if in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.out_channels % self.groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.in_channels = in_channels
        pair = ((self.in_channels, self.out_channels // self.groups) if self._transposed
                else (self.out_channels, self.in_channels // self.groups))
        self._materialize({"weight": pair + tuple(self.kernel_size), "bias": (self.out_channels,)})

    def _inferred_from_tensors(self):
        if not _declared(self.weight, self._n + 2):
            return None
        return self.weight.shape[0] if self._transposed else self.weight.shape[1] * self.groups


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """Conv1d whose in_channels is read from the first input (dim 1, or 0 for an unbatched input)."""

    cls_to_become = Conv1d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, None, dtype)
        self._declare(out_channels, bias, device, dtype)


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """Conv2d whose in_channels is read from the first input (dim 1, or 0 for an unbatched input)."""

    cls_to_become = Conv2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, None, dtype)
        self._declare(out_channels, bias, device, dtype)


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """Conv3d whose in_channels is read from the first input (dim 1, or 0 for an unbatched input)."""

    cls_to_become = Conv3d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, None, dtype)
        self._declare(out_channels, bias, device, dtype)


class _LazyConvTransposeMixin(_LazyConvXdMixin):
    _transposed = True


class LazyConvTranspose1d(_LazyConvTransposeMixin, ConvTranspose1d):
    """ConvTranspose1d whose in_channels is read from the first input (dim 1, or 0 unbatched)."""

    cls_to_become = ConvTranspose1d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         None, dtype)
        self._declare(out_channels, bias, device, dtype)


class LazyConvTranspose2d(_LazyConvTransposeMixin, ConvTranspose2d):
    """ConvTranspose2d whose in_channels is read from the first input (dim 1, or 0 unbatched)."""

    cls_to_become = ConvTranspose2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         None, dtype)
        self._declare(out_channels, bias, device, dtype)


class LazyConvTranspose3d(_LazyConvTransposeMixin, ConvTranspose3d):
    """ConvTranspose3d whose in_channels is read from the first input (dim 1, or 0 unbatched)."""

    cls_to_become = ConvTranspose3d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         None, dtype)
        self._declare(out_channels, bias, device, dtype)


# ---- norms ----

class _LazyNormBase(_LazyLayer):
    _inferred = "num_features"

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__(0, eps, momentum, False, False, None, dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        self._has_bias = bool(affine and bias)
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _C.tensor(0, dtype=_C.dtype.int64, device=device)

    def _num_features(self, input):
        return input.shape[1]

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        _check_input(self, input)
        if input.ndim not in self._expected_dims:  # the error the layer's forward gives
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._expected_dims)} input "
                             f"(got {input.ndim}D input)")
        c = self.num_features = self._num_features(input)
        self._materialize({name: (c,) for name in ("weight", "bias", "running_mean", "running_var")})

    def _inferred_from_tensors(self):
        for t in (self.weight, self.running_mean):
            if _declared(t, 1):
                return t.shape[0]
        return None


class _LazyInstanceNormBase(_LazyNormBase):
    def _num_features(self, input):
        # the channels of an unbatched input are its dim 0 (torch reads dim 1 there, which fails)
        return input.shape[0] if input.ndim == self._expected_dims[0] else input.shape[1]


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    """BatchNorm1d whose num_features is dim 1 of the first input."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    """BatchNorm2d whose num_features is dim 1 of the first input."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    """BatchNorm3d whose num_features is dim 1 of the first input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyInstanceNormBase, InstanceNorm1d):
    """InstanceNorm1d whose num_features is read from the first input; affine and track_running_stats
    default to True, as torch's."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyInstanceNormBase, InstanceNorm2d):
    """InstanceNorm2d whose num_features is read from the first input; affine and track_running_stats
    default to True, as torch's."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyInstanceNormBase, InstanceNorm3d):
    """InstanceNorm3d whose num_features is read from the first input; affine and track_running_stats
    default to True, as torch's."""

    cls_to_become = InstanceNorm3d


_LAZY = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
         "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
         "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

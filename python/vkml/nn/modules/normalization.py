"""vk.nn: BatchNorm1d/2d and LayerNorm."""

from ... import _C
from ..._grad_mode import no_grad
from .. import functional as F
from .. import init

from .module import Module, Parameter


class _BatchNorm(Module):
    _expected_dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self._has_bias = bool(affine and bias)
        dtype = dtype or _C.dtype.float32
        if affine:
            self.weight = Parameter(_C.ones(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(_C.zeros(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", _C.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", _C.tensor(0, dtype=_C.dtype.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self._place_on(device)

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        if input.ndim not in self._expected_dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._expected_dims)} input "
                             f"(got {input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(input,
                            self.running_mean if not self.training or self.track_running_stats else None,
                            self.running_var if not self.training or self.track_running_stats else None,
                            self.weight, self.bias, use_batch, momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self._has_bias}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):  # issue #16
    _expected_dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """torch.nn.SyncBatchNorm. torch synchronizes the batch statistics across the processes of a
    distributed run; vkml runs one process (vk.distributed has no process groups), where torch's
    SyncBatchNorm is BatchNorm over any input of 2 or more dims: so is this one."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with every BatchNorm*d in it replaced by a SyncBatchNorm holding the same
        parameters and buffers (the objects themselves, as torch's); a BatchNorm passed itself
        gives a new SyncBatchNorm."""
        def converted(m):
            if not isinstance(m, _BatchNorm):
                return m
            out = cls(m.num_features, m.eps, m.momentum, m.affine, m.track_running_stats, process_group,
                      bias=m.bias is not None)
            if m.affine:
                out.weight, out.bias = m.weight, m.bias
            out.running_mean, out.running_var = m.running_mean, m.running_var
            out.num_batches_tracked = m.num_batches_tracked
            out.training = m.training
            return out

        # An explicit stack of (module, what replaces it), not recursion over the user's tree.
        root = converted(module)
        stack = [(module, root)]
        while stack:
            old, new = stack.pop()
            for name, child in list(old.named_children()):
                replacement = converted(child)
                new.add_module(name, replacement)
                stack.append((child, replacement))
        return root


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        dtype = dtype or _C.dtype.float32
        if elementwise_affine:
            self.weight = Parameter(_C.ones(*self.normalized_shape, dtype=dtype))
            if bias:
                self.bias = Parameter(_C.zeros(*self.normalized_shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self._place_on(device)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


# ---- nn breadth (issue #16) ----

class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self._has_bias = bool(affine and bias)
        dtype = dtype or _C.dtype.float32
        if affine:
            self.weight = Parameter(_C.ones(num_channels, dtype=dtype))
            if bias:
                self.bias = Parameter(_C.zeros(num_channels, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self._place_on(device)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self._has_bias}"


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_C.ones(*self.normalized_shape, dtype=dtype or _C.dtype.float32))
        else:
            self.register_parameter("weight", None)
        self._place_on(device)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _InstanceNorm(_BatchNorm):
    _expected_dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias)

    def forward(self, input):
        if input.ndim not in self._expected_dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._expected_dims)} input "
                             f"(got {input.ndim}D input)")
        unbatched = input.ndim == self._expected_dims[0]
        if unbatched:
            input = input.unsqueeze(0)
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.1, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    _expected_dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    _expected_dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):  # for LazyInstanceNorm3d (torch.nn.InstanceNorm3d)
    _expected_dims = (4, 5)

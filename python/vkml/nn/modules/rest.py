"""vk.nn modules, the rest of torch.nn (issue #16): AdaptiveLogSoftmaxWithLoss, LinearCrossEntropyLoss,
CrossMapLRN2d, FractionalMaxPool2d/3d and the deprecated Container, with torch's constructors,
attributes and parameter names (so torch's state_dicts load)."""

import math
import warnings
from collections import namedtuple

from ... import _C
from .. import _rest
from .._rest import LinearCrossEntropyOptions
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .loss import _WeightedLoss
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss", "LinearCrossEntropyLoss", "LinearCrossEntropyOptions", "CrossMapLRN2d",
           "FractionalMaxPool2d", "FractionalMaxPool3d", "Container"]

# torch's name for the (output, loss) pair AdaptiveLogSoftmaxWithLoss returns
_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class Container(Module):
    """torch's deprecated module holder: keyword arguments become named submodules."""

    def __init__(self, **kwargs):
        warnings.warn("nn.Container is deprecated: nn.Module does all it did; subclass nn.Module instead.",
                      FutureWarning, stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class CrossMapLRN2d(Module):
    """Local response normalisation across channels of a 4-D input (torch's legacy layer: its channel
    window, see nn/_rest.py's cross_map_lrn2d; the gradient is that forward's own)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return _rest.cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class _FractionalMaxPoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        name, n = type(self).__name__, self._n
        self.kernel_size = F._tuple(kernel_size, n, "kernel_size")
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else F._tuple(output_size, n, "output_size")
        self.output_ratio = None if output_ratio is None else F._tuple(output_ratio, n, "output_ratio")
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = F.fractional_max_pool2d if self._n == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _n = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _n = 3


class LinearCrossEntropyLoss(_WeightedLoss):
    """F.linear_cross_entropy with its own Linear: the (C * prod(out_features), in_features) weight is
    stored flat, as torch's, and viewed as (C, *out_features, in_features) in forward."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"LinearCrossEntropyLoss: expected weight shape to be {(num_classes,)}, "
                               f"got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"LinearCrossEntropyLoss: expected label_smoothing to be in range [0, 1], "
                               f"got {label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing, self.options = ignore_index, label_smoothing, options
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes), bias=bias,
                             device=device, dtype=dtype)

    def forward(self, input, target):
        logical = (self.num_classes,) + self.out_features
        weight = self.linear.weight.reshape(logical + (self.linear.in_features,))
        bias = None if self.linear.bias is None else self.linear.bias.reshape(logical)
        return F.linear_cross_entropy(input, weight, target, linear_bias=bias, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")


def _check_cutoffs(cutoffs, n_classes):
    if len(cutoffs) == 0:
        raise ValueError("cutoffs should be a sequence of length larger than 0")
    if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
        raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                         "order, where each value is between 1 and n_classes-1")


class AdaptiveLogSoftmaxWithLoss(Module):
    """Grave et al.'s adaptive softmax: a head over the shortlist classes plus one entry per cluster,
    and per cluster a two-layer projection (in -> in // div^(i+1) -> cluster size) whose log-softmax
    adds to that cluster's head entry. Parameters are named as torch's (head.weight, tail.0.0.weight)."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None,
                 dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        _check_cutoffs(cutoffs, n_classes)
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, device=device, dtype=dtype),
                                        Linear(hidden, size, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _check_forward(self, input, target):
        if target.ndim == 1:
            if input.shape[0] != target.shape[0]:
                raise RuntimeError("AdaptiveLogSoftmaxWithLoss: Input and target should have the same size in "
                                   "the batch dimension.")
            if input.ndim != 2:
                raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss: 1D target tensor expects 2D input tensors, but "
                                   f"found inputs with size {list(input.shape)}")
        elif target.ndim == 0:
            if input.ndim != 1:
                raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss: 0D target tensor expects 1D input tensors, but "
                                   f"found inputs with size {list(input.shape)}")
        else:
            raise RuntimeError("AdaptiveLogSoftmaxWithLoss: 0D or 1D target tensor expected, multi-target not "
                               "supported")

    def _check_targets(self, target):
        """One host read: torch's error for targets outside [0, n_classes)."""
        if target.numel() and bool(((target < 0) | (target >= self.n_classes)).any()):
            raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss: Target values should be in [0, {self.n_classes - 1}], "
                               f"but values in range [{int(target.min())}, {int(target.max())}] were found. ")

    def _cluster_of(self, target):
        """0 for a shortlist target, i for one in cluster i (1-based)."""
        cluster = _C.zeros_like(target)
        for c in self.cutoffs[:-1]:
            cluster = cluster + (target >= c).to(target.dtype)
        return cluster

    def forward(self, input_, target_):
        self._check_forward(input_, target_)
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        self._check_targets(target)
        cluster = self._cluster_of(target)
        head_index = _C.where(cluster == 0, target, cluster + (self.shortlist_size - 1))
        head_logprob = F.log_softmax(self.head(input), 1)
        output = head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        for i in range(1, self.n_clusters + 1):
            # only the rows whose target is in cluster i pay for its projection (their count is a shape)
            rows = (cluster == i).nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            local = target.index_select(0, rows) - self.cutoffs[i - 1]
            logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), 1)
            output = output.index_add(0, rows, logprob.gather(1, local.unsqueeze(1)).squeeze(1))
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, 1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            cluster_logprob = F.log_softmax(projection(input), 1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return _C.cat(parts, 1)

    def _check_2d(self, input, what):
        if input.ndim != 2:
            raise RuntimeError(f"AdaptiveLogSoftmaxWithLoss.{what}: expected a 2-D input (N, in_features), got "
                               f"size {list(input.shape)}")

    def log_prob(self, input):
        """(N, n_classes) log-probabilities of every class."""
        self._check_2d(input, "log_prob")
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class per row: the head's argmax when it is a shortlist class (no tail class can
        beat it), else the argmax of the full log-probabilities, as torch's."""
        self._check_2d(input, "predict")
        head_output = self.head(input)
        best = head_output.argmax(1)
        full = self._full_log_prob(input, head_output).argmax(1)
        return _C.where(best < self.shortlist_size, best, full)

"""vk.nn modules of issues #15/#16 over nn/_more.py's functions: ChannelShuffle, RReLU, LPPool1d/2d/3d,
LocalResponseNorm, MaxUnpool1d/2d/3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d, Dropout3d, FeatureAlphaDropout,
MultiMarginLoss, MultiLabelMarginLoss, TripletMarginWithDistanceLoss (torch's constructors and attributes)."""

from .. import functional as F
from .distance import PairwiseDistance
from .dropout import _DropoutNd
from .loss import _Loss, _WeightedLoss
from .module import Module
from .pooling import _AdaptiveAvgPoolNd, _AdaptiveMaxPoolNd

__all__ = ["ChannelShuffle", "RReLU", "LPPool1d", "LPPool2d", "LPPool3d", "LocalResponseNorm", "MaxUnpool1d",
           "MaxUnpool2d", "MaxUnpool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "Dropout3d", "FeatureAlphaDropout",
           "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss"]


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return getattr(F, self._fn)(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, " \
               f"ceil_mode={self.ceil_mode}"


class LPPool1d(_LPPoolNd):
    _fn = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    _fn = "lp_pool2d"


class LPPool3d(_LPPoolNd):
    _fn = "lp_pool3d"


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class _MaxUnpoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride or kernel_size, padding

    def forward(self, input, indices, output_size=None):
        return getattr(F, self._fn)(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _fn = "max_unpool1d"


class MaxUnpool2d(_MaxUnpoolNd):
    _fn = "max_unpool2d"


class MaxUnpool3d(_MaxUnpoolNd):
    _fn = "max_unpool3d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _fn = "adaptive_avg_pool3d"


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _fn = "adaptive_max_pool3d"


class Dropout3d(_DropoutNd):
    _fn = "dropout3d"


class FeatureAlphaDropout(_DropoutNd):
    _fn = "feature_alpha_dropout"


class MultiMarginLoss(_WeightedLoss):
    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.ndim}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        # torch's default is a PairwiseDistance module (a child in repr and named_modules)
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)

"""torch's top-level spellings of nn functions (issue #15): torch.dropout(input, p, train),
torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled),
torch.embedding(weight, indices), the losses with an integer reduction (0 none, 1 mean, 2 sum), the
recurrent cells with their weights, ... Each is its ATen signature forwarding to vk.nn.functional; the
cudnn flags are accepted and ignored (they only choose an implementation in torch)."""

from . import _C
from .nn import _more
from .nn import functional as F
from .nn.modules.rnn import _gru_step

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _reduction(op, reduction):
    if reduction not in _REDUCTION or isinstance(reduction, bool):
        raise ValueError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")
    return _REDUCTION[reduction]


def _strict(fn, input, *args):
    """An ATen in-place op (torch.dropout_, ...): fn(input, *args) written into input (F's
    inplace=True)."""
    return F._inplace(fn, input, *args, inplace=True)


def _check_p(p):
    # ATen's check: a RuntimeError (F's is a ValueError)
    if p < 0.0 or p > 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p, train):
    _check_p(p)
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    return _strict(dropout, input, p, train)


def alpha_dropout(input, p, train):
    _check_p(p)
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return _strict(alpha_dropout, input, p, train)


def feature_dropout(input, p, train):
    _check_p(p)
    if input.ndim < 2:
        raise RuntimeError(f"feature_dropout: Feature dropout requires at least 2 dimensions in the input, "
                           f"got {input.ndim}")
    return F._nn.feature_dropout(input, p, train, 0)  # one draw per (N, C), at any rank


def feature_dropout_(input, p, train):
    return _strict(feature_dropout, input, p, train)


def feature_alpha_dropout(input, p, train):
    _check_p(p)
    return _more.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return _strict(feature_alpha_dropout, input, p, train)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return F.embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def celu(input, alpha=1.0):
    return F.celu(input, alpha)


def threshold(input, threshold, value):
    return F.threshold(input, threshold, value)


def hardshrink(input, lambd=0.5):
    return F.hardshrink(input, lambd)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def kl_div(input, target, reduction=1, *, log_target=False):
    return F.kl_div(input, target, reduction=_reduction("kl_div", reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction("binary_cross_entropy_with_logits", reduction),
                                              pos_weight=pos_weight)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction("ctc_loss", reduction), zero_infinity)


def constant_pad_nd(input, pad, value=0):
    return F.pad(input, pad, "constant", value)


def adaptive_max_pool1d(input, output_size):
    return F.adaptive_max_pool1d(input, output_size, True)  # torch's top-level one returns the indices too


def _cell_input(op, input, hx, w_ih):
    # torch's cells take (batch, features) only: a 1-D input or state is its IndexError
    for t in (input,) + tuple(hx):
        if t.ndim != 2:
            raise IndexError(f"{op}: expected 2-D input and hidden state (batch, features), got "
                             f"{[list(v.shape) for v in (input,) + tuple(hx)]}")
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"{op}: input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    h, c = hx
    _cell_input("lstm_cell", input, (h, c), w_ih)
    return _C._lstm_cell(F.linear(input, w_ih, b_ih) + F.linear(h, w_hh, b_hh), c)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _cell_input("gru_cell", input, (hx,), w_ih)
    out, _ = _gru_step(F.linear(input, w_ih, b_ih), hx, None, w_hh.t(), b_hh)
    return out


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _cell_input("rnn_tanh_cell", input, (hx,), w_ih)
    return _C.tanh(F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh))


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _cell_input("rnn_relu_cell", input, (hx,), w_ih)
    return _C.relu(F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _more.rrelu(input, lower, upper, training, False, generator)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _more.rrelu_(input, lower, upper, training, generator)


# the same function and arguments as torch.nn.functional's
_SAME = ("conv1d", "rms_norm", "celu_", "selu", "selu_", "threshold_", "prelu", "pixel_shuffle",
         "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "cosine_similarity", "pdist",
         "bilinear", "adaptive_avg_pool1d")

NAMES = ("dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
         "feature_alpha_dropout", "feature_alpha_dropout_", "embedding", "layer_norm", "batch_norm", "group_norm",
         "instance_norm", "celu", "threshold", "hardshrink", "pairwise_distance", "kl_div",
         "binary_cross_entropy_with_logits", "margin_ranking_loss", "hinge_embedding_loss",
         "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss", "ctc_loss", "constant_pad_nd",
         "adaptive_max_pool1d", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "rrelu", "rrelu_")


def install(namespace):
    """Puts the names into vkml's namespace (those it does not have yet) and the Tensor methods
    hardshrink and prelu."""
    for name in NAMES:
        namespace.setdefault(name, globals()[name])
    for name in _SAME:
        namespace.setdefault(name, getattr(F, name))
    Tensor = namespace["Tensor"]
    if not hasattr(Tensor, "hardshrink"):
        Tensor.hardshrink = hardshrink
    if not hasattr(Tensor, "prelu"):
        Tensor.prelu = F.prelu

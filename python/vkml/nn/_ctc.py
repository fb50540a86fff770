"""F.ctc_loss (init/utils/hooks (#16)): the connectionist temporal classification loss, composed of the
core's ops, so its gradients (of any order) come from their rules.

The forward (alpha) recursion runs over time in log space on the extended label sequence (a blank
between labels and at both ends), all sequences of the batch at once: each step is a logsumexp of
the three states a path may come from. Unreachable states hold a large finite negative number
instead of -inf, so that no 0 * inf appears in the gradient; a loss that reaches it (an input too
short for its target) is infinite, as torch's.

The gradient is the true gradient with respect to log_probs. torch's differs by exp(log_probs) (it
assumes log_probs come from log_softmax, and with log_softmax in front both give the same gradient
for the logits)."""

import math

from .. import _C, Tensor

_NEG = -1e30  # "log 0" for unreachable states (finite: see above)
_IMPOSSIBLE = 1e29  # a loss above this went through an unreachable state: it is infinite


def _lengths(x, what, n):
    values = x.tolist() if hasattr(x, "tolist") else list(x) if isinstance(x, (list, tuple)) else x
    values = [int(v) for v in (values if isinstance(values, list) else [values])]
    if len(values) != n:
        raise RuntimeError(f"ctc_loss: {what} must have one entry per batch element ({n}), got {len(values)}")
    if any(v < 0 for v in values):
        raise RuntimeError(f"ctc_loss: {what} must be non-negative, got {values}")
    return values


def _padded_targets(targets, target_lengths, n):
    """(N, S) targets from padded (N, S) or concatenated (sum of lengths) ones."""
    s_max = max(target_lengths, default=0)
    if targets.ndim == 2:
        if targets.shape[0] != n:
            raise RuntimeError(f"ctc_loss: targets of shape {tuple(targets.shape)} do not have a row for each of "
                               f"the {n} batch elements")
        if targets.shape[1] < s_max:
            raise RuntimeError(f"Expected tensor to have size at least {s_max} at dimension 1, but got size "
                               f"{targets.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss)")
        return targets[:, :s_max]
    if targets.ndim != 1:
        raise RuntimeError(f"ctc_loss: targets must be 1-D (concatenated) or 2-D (padded), got shape "
                           f"{tuple(targets.shape)}")
    total = sum(target_lengths)
    if targets.shape[0] < total:
        raise RuntimeError(f"ctc_loss: the concatenated targets have {targets.shape[0]} entries, fewer than the "
                           f"sum of target_lengths ({total})")
    if s_max == 0 or total == 0:
        return _C.zeros((n, s_max), dtype=_C.dtype.int64, device=targets.device)
    # index of each padded position in the concatenation (positions past a length repeat its last one)
    index, offset = [], 0
    for length in target_lengths:
        index.append([offset + min(s, max(length - 1, 0)) for s in range(s_max)])
        offset += length
    return targets.to(_C.dtype.int64)[_C.tensor(index, device=targets.device)]


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """torch.nn.functional.ctc_loss: log_probs (T, N, C) or (T, C), targets (N, S) padded or 1-D
    concatenated (S,) unbatched), lengths as tensors, lists or ints."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        if isinstance(targets, Tensor) and targets.ndim == 1:
            targets = targets.unsqueeze(0)
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {tuple(log_probs.shape)}")
    if not log_probs.is_floating_point():
        raise _C.DTypeError(f"ctc_loss: log_probs must be floating point, got {log_probs.dtype}")
    t_max, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError(f"blank must be in label range (got blank={blank} for {c} classes)")
    in_lens = _lengths(input_lengths, "input_lengths", n)
    tg_lens = _lengths(target_lengths, "target_lengths", n)
    if any(v > t_max for v in in_lens):
        raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {max(in_lens)} "
                           "(while checking arguments for ctc_loss)")
    tg = _padded_targets(targets, tg_lens, n).to(_C.dtype.int64)
    s_max = tg.shape[1]
    length = 2 * s_max + 1
    dev, dt = log_probs.device, log_probs.dtype

    # extended labels: blank, t1, blank, t2, ..., blank
    blanks = _C.full((n, s_max), blank, dtype=_C.dtype.int64, device=dev)
    ext = _C.cat([_C.stack([blanks, tg], 2).reshape(n, 2 * s_max),
                  _C.full((n, 1), blank, dtype=_C.dtype.int64, device=dev)], 1)
    # a path may skip the blank between two different labels
    skip = (ext[:, 2:] != ext[:, :-2]) & (ext[:, 2:] != blank)
    skip = _C.cat([_C.zeros((n, 2), dtype=_C.dtype.bool, device=dev), skip], 1)
    lp = log_probs.gather(2, ext.unsqueeze(0).expand(t_max, n, length))  # (T, N, 2S+1)

    neg2 = _C.full((n, 2), _NEG, dtype=dt, device=dev)
    first = _C.arange(length, device=dev) < 2
    alpha = _C.where(first, lp[0], _C.full((n, length), _NEG, dtype=dt, device=dev))
    running = _C.tensor(in_lens, device=dev).unsqueeze(1)
    for t in range(1, t_max):
        padded = _C.cat([neg2, alpha], 1)
        from_skip = _C.where(skip, padded[:, :-2], _NEG)
        step = _C.stack([alpha, padded[:, 1:-1], from_skip], 2).logsumexp(2) + lp[t]
        alpha = _C.where(running > t, step, alpha)  # a sequence that has ended keeps its alphas

    tl = _C.tensor(tg_lens, device=dev).unsqueeze(1)
    end_blank = alpha.gather(1, 2 * tl)
    end_label = _C.where(tl > 0, alpha.gather(1, (2 * tl - 1).clamp(min=0)), _NEG)
    loss = -_C.cat([end_blank, end_label], 1).logsumexp(1)
    # no frames: the empty target has probability 1, any other none
    no_frames = _C.tensor([v == 0 for v in in_lens], device=dev)
    impossible = ((loss > _IMPOSSIBLE) & ~no_frames) | (no_frames & (tl.squeeze(1) > 0))
    loss = _C.where(no_frames & (tl.squeeze(1) == 0), 0.0, loss)
    loss = _C.where(impossible, 0.0 if zero_infinity else math.inf, loss)
    if reduction == "none":
        return loss[0] if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    return (loss / tl.squeeze(1).clamp(min=1).to(dt)).mean()

"""vk.nn.init: torch.nn.init's in-place initialisers (drawing from vkml's counter-based RNG)."""

import math
import warnings

from .. import _C
from .._grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "zeros_", "ones_", "constant_", "kaiming_uniform_",
           "kaiming_normal_", "xavier_uniform_", "xavier_normal_"]


def calculate_gain(nonlinearity, param=None):
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "sigmoid", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def _fan(tensor, mode):
    mode = mode.lower()
    fan_in, fan_out = _fans(tensor)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")


def _zero_element(tensor):
    """As torch: a layer with a zero size (nn.Linear(0, 3)) has nothing to initialise, and its fan
    may be 0, which the bound would divide by."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if _zero_element(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if _zero_element(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    if fan_in + fan_out == 0 and _zero_element(tensor):  # torch divides by zero here
        return tensor
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    if fan_in + fan_out == 0 and _zero_element(tensor):  # torch divides by zero here
        return tensor
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


# ---- init/utils/hooks (#16): the rest of torch.nn.init ----------------------------------------
# Each initialiser draws (or writes) in place under no_grad and returns the tensor, with torch's
# signatures, checks and error messages. Shapes and index bookkeeping are Python; values come from
# the core's ops (so they run on the tensor's device).

_calculate_fan_in_and_fan_out = _fans


def _calculate_correct_fan(tensor, mode):
    return _fan(tensor, mode)


def _erf(x):
    return math.erf(x)


def _normal_mass(mean, std, a, b):
    """P(a <= X <= b) for X ~ N(mean, std^2): scalar bookkeeping for the sampler below."""
    cdf = lambda x: (1.0 + _erf((x - mean) / (std * math.sqrt(2.0)))) / 2.0  # noqa: E731
    return cdf(b) - cdf(a)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fills tensor with N(mean, std^2) truncated to [a, b] (torch.nn.init.trunc_normal_).

    torch inverts the normal CDF (erfinv); vkml draws by rejection (vkml's float32 erfinv, exact to
    half an ulp, takes 4x torch's time), which gives the same distribution exactly: every value
    outside [a, b] is drawn again until none is.
    When [a, b] holds little of the normal's mass (the far tail), the proposal is uniform over
    [a, b] (clipped to mean +- 12 std) accepted with probability exp(-(x-mean)^2/2std^2) relative
    to its largest value there, so the number of rounds stays small in every case."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    if not a < b:
        raise ValueError(f"trunc_normal_: expected a < b, got a={a}, b={b}")
    if std <= 0:
        raise ValueError(f"trunc_normal_: expected std > 0, got std={std}")
    with no_grad():
        if tensor.numel() == 0:
            return tensor
        lo, hi = max(a, mean - 12 * std), min(b, mean + 12 * std)
        use_normal = _normal_mass(mean, std, a, b) >= 0.25 or lo >= hi
        peak = min(max(mean, lo), hi)  # where the density is largest on [lo, hi]
        todo = None  # the entries still to draw (None: all of them)
        for _ in range(10000):
            if use_normal:
                draw = tensor.new_empty(tensor.shape).normal_(mean, std, generator=generator)
                ok = (draw >= a) & (draw <= b)
            else:
                draw = tensor.new_empty(tensor.shape).uniform_(lo, hi, generator=generator)
                u = tensor.new_empty(tensor.shape).uniform_(0.0, 1.0, generator=generator)
                z, z0 = (draw - mean) / std, (peak - mean) / std
                ok = u * _C.exp((z * z - z0 * z0) * 0.5) <= 1.0
            take = ok if todo is None else ok & todo
            tensor.copy_(_C.where(take, draw, tensor))
            todo = ~ok if todo is None else todo & ~ok
            if not bool(todo.any().item()):
                return tensor
    raise RuntimeError("trunc_normal_: the rejection sampler did not finish (this is a bug)")


def eye_(tensor):
    """Fills the 2-D tensor with the identity matrix (torch.nn.init.eye_)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(_C.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor, groups=1):
    """Fills the 3-, 4- or 5-D tensor with the Dirac delta (a convolution that keeps as many input
    channels as it can, per group), as torch.nn.init.dirac_."""
    dims = tensor.ndim
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    min_dim = min(per_group, sizes[1])
    with no_grad():
        # made on the CPU and copied: indexed assignment into a device tensor reads it on the host
        delta = _C.zeros(tuple(sizes), dtype=tensor.dtype)
        if min_dim:
            outs = [g * per_group + d for g in range(groups) for d in range(min_dim)]
            ins = [d for _ in range(groups) for d in range(min_dim)]
            centre = tuple([s // 2] * len(outs) for s in sizes[2:])
            delta[tuple(_C.tensor(i) for i in (outs, ins) + centre)] = 1
        tensor.copy_(delta)
    return tensor


def _householder_q(a):
    """The Q of a's reduced QR (a is m x n, m >= n), its columns signed so that R's diagonal is
    positive: the same matrix torch's orthogonal_ makes from linalg.qr and sign(diag(R)). Householder
    reflections composed of the core's ops; v is chosen so that R's diagonal is -sign(x0) |x|, whose
    sign is folded in at the end."""
    m, n = a.shape
    a = a.clone()
    vs, signs = [], []
    for k in range(n):
        x = a[k:, k]
        s = _C.where(x[0] >= 0, 1.0, -1.0).to(a.dtype)
        v = x.clone()
        v[0] = x[0] + s * (x * x).sum().sqrt()
        vn = (v * v).sum().sqrt()
        v = _C.where(vn > 0, v / _C.where(vn > 0, vn, 1.0), v)
        a[k:, k:] = a[k:, k:] - 2.0 * v.unsqueeze(1) * (v.unsqueeze(0) @ a[k:, k:])
        vs.append(v)
        signs.append(-s)
    # Q = H_0 H_1 ... H_{n-1} I[:, :n], applied from the last reflection to the first
    q = _C.eye(m, n, dtype=a.dtype, device=a.device)
    for k in reversed(range(n)):
        v = vs[k]
        q[k:, :] = q[k:, :] - 2.0 * v.unsqueeze(1) * (v.unsqueeze(0) @ q[k:, :])
    # R's diagonal is -s |x| (or 0): multiply each column by its sign, as torch's q *= sign(diag(r))
    return q * _C.stack(signs)


def orthogonal_(tensor, gain=1, generator=None):
    """Fills tensor with a (semi-)orthogonal matrix, reshaped to tensor.shape[0] rows, as
    torch.nn.init.orthogonal_ (the Q of a QR of a standard normal matrix, times gain)."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flat = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        if rows < cols:
            flat = flat.t()
        q = _householder_q(flat)
        if rows < cols:
            q = q.t()
        tensor.copy_(q.reshape(tensor.shape))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fills the 2-D tensor from N(0, std^2) with ceil(sparsity * rows) zeros in each column, at
    random rows (torch.nn.init.sparse_)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        if num_zeros and cols:
            # a random permutation of the rows of each column (the ranks of uniform draws): its
            # first num_zeros rows are zeroed, as torch's per-column randperm
            keys = tensor.new_empty((rows, cols)).uniform_(0.0, 1.0, generator=generator)
            ranks = keys.argsort(0).argsort(0)
            tensor.masked_fill_(ranks < num_zeros, 0.0)
    return tensor


def _deprecated(new):
    def old(*args, **kwargs):
        warnings.warn(f"`nn.init.{new.__name__[:-1]}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)
    old.__name__ = new.__name__[:-1]
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)

__all__ += ["trunc_normal_", "eye_", "dirac_", "orthogonal_", "sparse_"]

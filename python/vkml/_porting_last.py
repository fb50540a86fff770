"""The last Python-level torch names of the porting issue (#15): from_file, get_device_module,
thread_safe_generator, lobpcg, unravel_index, and the Tensor members set_, volatile, reinforce
and register_post_accumulate_grad_hook (its hook list is the C++ engine's). install() puts them
on the vkml namespace and on Tensor."""

import os
import warnings
import weakref

from . import _C
from . import linalg as _linalg
from ._grad_mode import no_grad as _no_grad
from .autograd import Function

Tensor = _C.Tensor
_FEPS = {"float32": 1.2e-07, "float64": 2.23e-16}  # torch's lobpcg tolerance base


# ---- from_file ----

def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False):
    """A 1-D tensor of `size` elements of `dtype` read from the start of a file, as
    torch.from_file with shared=False: the tensor is a copy, so writing to it leaves the file as
    it was (as torch's private mapping does). shared=True (writes reaching the file) needs a
    tensor backed by the mapping, which vkml's tensors are not: NotImplementedError."""
    if shared:
        raise NotImplementedError("from_file(): shared=True needs a tensor backed by the mapped "
                                  "file; vkml reads a copy (shared=False)")
    dtype = _C._get_default_dtype() if dtype is None else dtype
    nbytes = int(size) * _C.empty(0, dtype=dtype).element_size()
    try:
        with open(os.fspath(filename), "rb") as f:
            data = f.read(nbytes)
    except OSError as e:
        raise RuntimeError(f"unable to open file <{filename}> in read-only mode: "
                           f"{e.strerror} ({e.errno})") from None
    if len(data) < nbytes:
        raise RuntimeError(f"file <{filename}> size <{os.path.getsize(filename)}> is smaller "
                           f"than the required mapping size <{nbytes}>")
    if nbytes == 0:
        out = _C.empty(0, dtype=dtype)
    else:
        from . import frombuffer  # the vkml namespace, complete when this is called
        out = frombuffer(bytearray(data), dtype=dtype)
    return out if device is None else out.to(device)


# ---- get_device_module, thread_safe_generator ----

def get_device_module(device=None):
    """The module of a device kind, as torch.get_device_module: vkml.cpu, vkml.cuda (which says
    there is no CUDA device) or vkml.vulkan; None is the current accelerator's (Vulkan when there
    is a Vulkan device), else the CPU's."""
    import vkml
    if isinstance(device, _C.device):
        kind = device.type
    elif isinstance(device, str):
        kind = device.split(":")[0]  # (vk.device("cuda") itself would say there is no CUDA)
    elif device is None:
        acc = vkml.accelerator.current_accelerator()
        kind = acc.type if acc is not None else "cpu"
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    module = {"cpu": vkml.cpu, "cuda": vkml.cuda, "vulkan": vkml.vulkan}.get(kind)
    if module is None:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           f"as 'vkml.{kind}'.")
    return module


def thread_safe_generator():
    """The generator of the current DataLoader thread worker, as torch.thread_safe_generator:
    torch returns one only in thread workers and None in the main process and in process
    workers, where the global generator is the right one. vkml's DataLoader workers are
    processes, so this is always None."""
    return None


# ---- unravel_index ----

def unravel_index(indices, shape):
    """The coordinates in a tensor of `shape` of each flat (row-major) index, as
    torch.unravel_index: a tuple of int64 tensors of indices' shape, one per dimension. As in
    torch an index outside [0, numel) wraps around (floor modulo numel); a zero-size shape is
    a ZeroDivisionError-like RuntimeError."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index(): expected 'indices' to be a Tensor, got "
                        f"{type(indices).__name__}")
    if indices.is_floating_point() or indices.dtype == _C.dtype.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    elif not isinstance(shape, (tuple, list)) and not hasattr(shape, "__iter__"):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    shape = tuple(shape)
    for d in shape:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
    if any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape:
        raise RuntimeError("unravel_index(): a shape with a 0 dimension has no coordinates "
                           "(ZeroDivisionError)")
    rest = indices.to(_C.dtype.int64)
    coords = []
    for size in reversed(shape):
        coords.append(_C.remainder(rest, size))  # floor modulo: negative indices wrap
        rest = _C.floor_divide(rest, size)
    return tuple(reversed(coords))


# ---- Tensor.set_, volatile, reinforce ----

def _set_(self, source=None, *args, **kwargs):
    """self takes source's memory, shape and strides (they share the memory afterwards), as
    torch's Tensor.set_(source); set_() makes self an empty tensor. vkml has no Storage objects,
    so set_(storage, offset, size, stride) is a TypeError. Like every in-place change of shape in
    vkml it is refused while grad mode is on and self requires grad; torch has no derivative for
    set_, so a source that requires grad is refused there too."""
    if args or kwargs or not (source is None or isinstance(source, Tensor)):
        raise TypeError("set_(): vkml has no Storage objects; set_ takes a source Tensor or "
                        "nothing")
    if source is None:
        source = _C.empty(0, dtype=self.dtype, device=self.device)
    if source.dtype != self.dtype:
        raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of type "
                           f"{self.dtype}")
    if source.device != self.device:
        raise RuntimeError(f"set_(): source is on {source.device}, self on {self.device}")
    if _C.is_grad_enabled():
        if self.requires_grad and self.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        if self.requires_grad or source.requires_grad:
            raise RuntimeError("set_(): derivative for set_ is not implemented; call it under "
                               "no_grad()")
    self.data = source  # the core's data setter: memory, shape, strides, offset
    # the version counter, as torch's set_ bumps it (a graph that saved self then refuses)
    return _C._inplace_view(self, "set_", lambda x: x, ())


def _volatile_get(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def _volatile_set(self, value):
    warnings.warn("volatile was removed and now has no effect. Use `with vkml.no_grad():` "
                  "instead.", UserWarning, stacklevel=2)


def _register_post_accumulate_grad_hook(self, hook):
    """hook(tensor) after backward() has accumulated this leaf's .grad (not in autograd.grad), as
    torch's; called with this very Python object, so a dict keyed by parameters finds it. Returns
    a handle whose remove() takes the hook off."""
    if not callable(hook):
        raise TypeError(f"register_post_accumulate_grad_hook(): hook must be callable, got "
                        f"{type(hook).__name__}")
    own = weakref.ref(self)

    def call(leaf):
        obj = own()
        hook(leaf if obj is None else obj)

    return self._register_post_accumulate_grad_hook(call)


def _reinforce(self, reward):
    """Removed from torch long ago: raises its RuntimeError, which names the replacement."""
    raise RuntimeError(
        "reinforce() was removed.\nUse a distribution's log_prob instead: sample an action, "
        "then backpropagate loss = -log_prob(action) * reward (torch.distributions.Categorical "
        "in torch; in vkml, log_softmax(logits).gather(-1, action)).")


# ---- lobpcg ----

def _orthonormal_columns(S, B, drop):
    """A B-orthonormal basis of S's columns, from the eigendecomposition of the Gram matrix
    S^T B S; with drop, directions whose squared length is below drop (relative) are left out.
    Columns are scaled to unit length first, so a small residual block is not dropped for being
    small; a second pass (no dropping) repairs what the Gram matrix's rounding left."""
    S = S / _C.clamp(_linalg.vector_norm(S, 2, 0, True), min=1e-300)
    for d_rel in (drop, None):
        BS = S if B is None else _C.matmul(B, S)
        G = _C.matmul(S.mT, BS)
        d, V = _linalg.eigh((G + G.mT) * 0.5)
        if d_rel is not None:
            keep = int(_C.count_nonzero(d > d[-1] * d_rel).item())
            d, V = d[d.shape[0] - keep:], V[:, V.shape[1] - keep:]
        S = _C.matmul(S, V) / _C.sqrt(d)
    return S


def _rayleigh_ritz(A, S, n, largest):
    """The n extreme Ritz pairs of A on the B-orthonormal basis S: largest first, or smallest."""
    H = _C.matmul(S.mT, _C.matmul(A, S))
    theta, C = _linalg.eigh((H + H.mT) * 0.5)  # ascending
    m = theta.shape[0]
    if largest:
        idx = _C.arange(m - 1, m - 1 - n, -1, device=theta.device)
    else:
        idx = _C.arange(0, n, device=theta.device)
    return theta[idx], _C.matmul(S, C[:, idx])


def _lobpcg_one(A, B, X, iK, k, niter, tol, largest):
    """LOBPCG on one matrix: Rayleigh-Ritz on [X, W, P] (W the preconditioned residuals, P the
    change of X orthogonal to the old X), until the first k residuals meet torch's backward-stable
    test |r_i| / (|x_i| (|A| + |E_i| |B|)) < tol, or niter steps (niter = -1: no limit)."""
    n = X.shape[-1]
    drop = 100 * _FEPS[str(A.dtype).split(".")[-1]]
    a_norm = _linalg.matrix_norm(A).item()
    b_norm = 1.0 if B is None else _linalg.matrix_norm(B).item()
    E, X = _rayleigh_ritz(A, _orthonormal_columns(X, B, drop), n, largest)
    P, step = None, 0
    while niter < 0 or step < niter:
        BX = X if B is None else _C.matmul(B, X)
        R = _C.matmul(A, X) - BX * E
        rerr = _linalg.vector_norm(R, 2, 0) / (_linalg.vector_norm(X, 2, 0)
                                                  * (a_norm + _C.abs(E) * b_norm))
        if bool((rerr[:k] < tol).all().item()):
            break
        W = R if iK is None else _C.matmul(iK, R)
        blocks = [X, W] if P is None else [X, W, P]
        E, X_new = _rayleigh_ritz(A, _orthonormal_columns(_C.cat(blocks, 1), B, drop), n, largest)
        BXn = X_new if B is None else _C.matmul(B, X_new)
        P = X_new - _C.matmul(X, _C.matmul(X.mT, BXn))
        X, step = X_new, step + 1
    return E[:k], X[:, :k]


class _Lobpcg(Function):
    @staticmethod
    def forward(ctx, A, B, X, iK, k, niter, tol, largest):
        E, U = _lobpcg_batch(A, B, X, iK, k, niter, tol, largest)
        ctx.save_for_backward(U)
        return E, U

    @staticmethod
    def backward(ctx, gE, gU):
        # dE_i/dA = u_i u_i^T (A symmetric); the eigenvectors' gradient (torch's partial
        # eigenspace formula) is not implemented: a nonzero gradient reaching U is refused.
        (U,) = ctx.saved_tensors
        if bool((gU != 0).any().item()):
            raise NotImplementedError("lobpcg: the gradient through the eigenvectors is not "
                                      "implemented in vkml; the eigenvalues' gradient is")
        gA = _C.matmul(U * gE.unsqueeze(-2), U.mT)
        return gA, None, None, None, None, None, None, None


def _lobpcg_batch(A, B, X, iK, k, niter, tol, largest):
    if A.ndim == 2:
        return _lobpcg_one(A, B, X, iK, k, niter, tol, largest)
    m = A.shape[-1]
    flat_a = A.reshape(-1, m, m)
    flat_b = None if B is None else B.reshape(-1, m, m)
    flat_x = X.reshape(-1, m, X.shape[-1])
    pairs = [_lobpcg_one(flat_a[i], None if flat_b is None else flat_b[i], flat_x[i], iK, k,
                         niter, tol, largest) for i in range(flat_a.shape[0])]
    E = _C.stack([p[0] for p in pairs]).reshape(tuple(A.shape[:-2]) + (k,))
    U = _C.stack([p[1] for p in pairs]).reshape(tuple(A.shape[:-2]) + (m, k))
    return E, U


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """The k largest (or smallest, largest=False) eigenpairs of the symmetric generalized problem
    A x = lambda B x (B positive-definite, identity when None), as torch.lobpcg: (E, X), E in
    order from the extreme one. X is the starting block (n random columns when None, n = k by
    default), iK a preconditioner, niter the most steps (1000; -1: until converged), tol torch's
    default feps ** 0.5 on its backward-stable residual test. method 'ortho' and 'basic' run the
    same iteration (an orthonormal basis from the Gram matrix); the ortho_* parameters tune
    torch's 'ortho' only and are accepted and not used; a tracker is not supported. Batches of
    A are solved one matrix at a time, as torch does. The eigenvalues' gradient with respect to
    A is torch's (A symmetrized); the eigenvectors' is not implemented."""
    if tracker is not None:
        raise NotImplementedError("lobpcg(): tracker is not supported in vkml")
    if method not in (None, "ortho", "basic"):
        raise ValueError(f"lobpcg(): method must be 'ortho' or 'basic', got {method!r}")
    if A.ndim < 2 or A.shape[-2] != A.shape[-1]:
        raise ValueError(f"lobpcg(): A must be square, got shape {tuple(A.shape)}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise ValueError(f"lobpcg(): A and B must have the same shape, got {tuple(A.shape)} vs "
                         f"{tuple(B.shape)}")
    if not A.is_floating_point():
        A = A.to(_C._get_default_dtype())
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) "
                         f"is smaller than 3 x the number of requested eigenpairs (={n})")
    if X is None:
        X = _C.randn(tuple(A.shape[:-2]) + (m, n), dtype=A.dtype, device=A.device)
    elif tuple(X.shape[-2:]) != (m, n):
        raise ValueError(f"lobpcg(): X must have shape {(m, n)}, got {tuple(X.shape)}")
    tol = _FEPS[str(A.dtype).split(".")[-1]] ** 0.5 if tol is None else tol
    niter = 1000 if niter is None else niter
    largest = True if largest is None else largest
    if B is not None and B.requires_grad and _C.is_grad_enabled():
        raise ValueError("lobpcg.backward does not support backward with B != I yet.")
    B = None if B is None else ((B + B.mT) * 0.5).detach()
    if A.requires_grad and _C.is_grad_enabled():
        return _Lobpcg.apply((A + A.mT) * 0.5, B, X.detach(), iK, k, niter, tol, largest)
    with _no_grad():
        return _lobpcg_batch((A + A.mT) * 0.5, B, X, iK, k, niter, tol, largest)


def is_distributed(input):
    """False: a vkml tensor lives in one process (vk.distributed moves copies between ranks);
    torch's answer for every tensor since its old THD backend went."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return False


def install(ns):
    """Puts the names on the vkml namespace `ns` and on Tensor."""
    ns.update(from_file=from_file, get_device_module=get_device_module,
              thread_safe_generator=thread_safe_generator, lobpcg=lobpcg,
              unravel_index=unravel_index, is_distributed=is_distributed)
    Tensor.is_distributed = is_distributed
    Tensor.set_ = _set_
    Tensor.volatile = property(_volatile_get, _volatile_set)
    Tensor.reinforce = _reinforce
    Tensor.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook

"""vkml: tensors with reverse-mode automatic differentiation, shaped like PyTorch.

    import vkml as vk
    x = vk.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    x.grad      # tensor([[2., 4.], [6., 8.]])

Every op runs in the C++ core (vkml._C); this package only arranges names.
"""

import os as _os


def _load_extension():
    """Imports vkml._C; when it was built against the scipy-openblas32 wheel's BLAS and the
    loader cannot find that library next to it (another site-packages), preloads it first."""
    try:
        from . import _C
    except ImportError as e:
        if "libscipy_openblas" not in str(e):
            raise
        import ctypes
        import scipy_openblas32
        lib = _os.path.join(scipy_openblas32.get_lib_dir(), f"lib{scipy_openblas32.get_library()}.so")
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
        from . import _C
    return _C


_load_extension()
from . import _C  # noqa: E402
from ._C import *  # noqa: F401,F403  (ops, creation functions, Tensor, dtype, errors)
from ._C import DTypeError, ShapeError, SizeError, Tensor, dtype
from ._grad_mode import (enable_grad, inference_mode, is_anomaly_enabled, is_grad_enabled,
                         no_grad, set_grad_enabled)
from . import _tensor_str
from . import autograd
from . import utils
from . import return_types
from .serialization import load, save
from . import nn
from . import optim
from . import func  # torch.func's transforms
from ._vmap import vmap
from . import random  # torch.random: seeding, state, fork_rng
from . import testing  # torch.testing: assert_close, make_tensor
from . import profiler  # torch.profiler: op times, record_function, schedules, traces
from . import jit  # torch.jit's names: script / trace return their argument (no TorchScript)
from . import vulkan
# Convolution and pooling are bound once, as torch.nn.functional (3-D and 4-D inputs); the
# top-level names are the same functions, as torch.conv2d and torch.max_pool2d are.
from .nn.functional import avg_pool2d, conv2d, max_pool2d  # noqa: E402
from .nn.functional import fold as col2im, unfold as im2col  # noqa: E402
# conv breadth (issue #16): torch.conv_transpose1d/2d/3d, torch.conv3d, the 1-D and 3-D pools, embedding_renorm_
from .nn.functional import avg_pool1d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d  # noqa: E402
from .nn.functional import max_pool1d, max_pool1d_with_indices, max_pool3d  # noqa: E402
from .nn._conv_pool import embedding_renorm_  # noqa: E402

__version__ = "0.1.0"

# Names of _C that belong under vk.autograd / vk.utils only (torch has no torch.grad).
for _name in ("backward", "grad", "gradcheck", "gradgradcheck", "checkpoint", "Node",
              "RemovableHandle"):
    globals().pop(_name, None)
from ._C import from_op  # noqa: E402  (vk.from_op is part of the API)
# torch's gamma sampler and its derivative (underscored there too): vk.distributions' Gamma family
from ._C import _standard_gamma, _standard_gamma_grad  # noqa: E402,F401

_C._set_package_dir(_os.path.dirname(_os.path.abspath(__file__)))

# ---- dtypes: vk.float32 ... and PyTorch's aliases ----
float32 = dtype.float32
float64 = dtype.float64
int32 = dtype.int32
int64 = dtype.int64
float16 = dtype.float16
bfloat16 = dtype.bfloat16
uint8 = dtype.uint8
int8 = dtype.int8
int16 = dtype.int16
bool_ = dtype.bool
globals().update({"bool": dtype.bool, "float": dtype.float32, "double": dtype.float64,
                  "long": dtype.int64, "int": dtype.int32, "half": dtype.float16,
                  "short": dtype.int16, "byte": dtype.uint8, "char": dtype.int8})

def get_default_dtype():
    """The default floating dtype (float32 unless set_default_dtype changed it); the core holds
    it (core/default_dtype.h)."""
    return _C._get_default_dtype()


def set_default_dtype(d):
    """torch.set_default_dtype: float32 or float64. Creation functions without dtype= and Python
    floats (vk.tensor([1.5])) give it, and integer tensors become it where an op needs a float
    (sqrt, true division); integer and bool creation are unchanged."""
    _C._set_default_dtype(d)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(t):
    return t.is_floating_point()


def numel(t):
    return t.numel()


def op_table():
    """The C++ op table: a list of dicts (name, arity, signature, summary, has_grad, grad_doc)."""
    return [_C.op_info(n) for n in _C.op_names()]


# ---- Tensor: the parts that are presentation or Python protocol, not computation ----


def _format(self, spec=""):
    # As torch: a 0-d Tensor formats its value (f"{loss}" is "6324.0", f"{loss:.2f}" works);
    # anything else (subclasses such as Parameter too) is str(self), and a spec is a TypeError.
    if self.ndim == 0 and type(self) is Tensor:
        return format(self.item(), spec)
    return object.__format__(self, spec)


def _deepcopy(self, memo):
    if id(self) in memo:
        return memo[id(self)]
    import copy
    with no_grad():
        data = self.detach().clone()
    new = Tensor._make_subclass(type(self), data, self.requires_grad)
    memo[id(self)] = new
    if self.grad is not None:
        new.grad = self.grad.detach().clone()
    if hasattr(self, "__dict__"):
        for k, v in self.__dict__.items():
            setattr(new, k, copy.deepcopy(v, memo))
    return new


def _rebuild(cls, array, requires_grad, state):
    t = Tensor._make_subclass(cls, tensor(array), requires_grad)
    if state:
        t.__dict__.update(state)
    return t


def _reduce_ex(self, protocol):
    state = dict(self.__dict__) if hasattr(self, "__dict__") else None
    return (_rebuild, (type(self), self.detach().numpy().copy(), self.requires_grad, state))


# (Not while the type stubs of vkml._C are generated: they describe the extension alone.)
if not _os.environ.get("VKML_STUBGEN"):
    # numpy defers to Tensor for `ndarray <op> Tensor`: the result is a Tensor with a graph.
    Tensor.__array_ufunc__ = None
    Tensor.__array_priority__ = 1000
    Tensor.__repr__ = _tensor_str.tensor_repr
    Tensor.__str__ = _tensor_str.tensor_repr
    Tensor.__format__ = _format
    Tensor.__deepcopy__ = _deepcopy
    Tensor.__reduce_ex__ = _reduce_ex

# ---- composite ops and in-place variants (issue #15 item 4) ----
# The ops themselves are C++ (ops/composite.h, bound in python/src/bind_composite.cpp); here only
# the vk.linalg namespace and the in-place methods: x.<op>_(*args) is _C.<op>(x, *args) written
# into x by the core's one in-place path (_C._inplace: the in-place checks, no graph, the version
# counter bumped), for every op below that has no in-place binding of its own.
from . import linalg  # noqa: E402

_INPLACE_OPS = (
    "abs", "neg", "negative", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal",
    "sign", "sin", "cos", "tanh", "sigmoid", "relu", "erf", "erfc", "floor", "ceil", "round",
    "square", "pow", "sub", "subtract", "div", "divide", "true_divide", "multiply",
    "floor_divide", "remainder", "clip", "lerp", "addcmul", "addcdiv", "masked_fill",
    "nan_to_num", "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
    "bitwise_or", "bitwise_xor", "maximum", "minimum", "addmv", "addr", "baddbmm", "addbmm",
    "clamp_min", "clamp_max", "trunc", "fix", "index_fill", "bitwise_left_shift",
    "bitwise_right_shift", "gcd", "lcm", "nextafter",
)


def _inplace_method(name):
    fn = getattr(_C, name)

    def method(self, *args, **kwargs):
        return _C._inplace(self, name + "_", fn, args, kwargs)

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In place: {name}(self, ...) written into self (see vkml.{name})."
    return method


for _name in _INPLACE_OPS:
    if hasattr(_C, _name) and not hasattr(Tensor, _name + "_"):
        setattr(Tensor, _name + "_", _inplace_method(_name))
Tensor.fill_diagonal_ = lambda self, fill_value, wrap=False: _C._inplace(
    self, "fill_diagonal_", _C._fill_diagonal, (fill_value, wrap), {})
# torch's sub_ and div_ take alpha and rounding_mode: the generic form has them.
Tensor.sub_ = _inplace_method("sub")
Tensor.div_ = _inplace_method("div")
Tensor.clamp_ = _inplace_method("clamp")  # tensor bounds too


# x **= y, x //= y, x &= y, ...: written into x, as torch's (without these Python would rebind x to
# x ** y, and views of x would keep the old values). += -= *= /= are bound in the core module.
def _inplace_operator(name, method_name):
    def operator(self, other):
        return getattr(self, method_name)(other)
    operator.__name__ = operator.__qualname__ = name
    return operator


for _dunder, _method in (("__ipow__", "pow_"), ("__ifloordiv__", "floor_divide_"),
                         ("__imod__", "remainder_"), ("__iand__", "bitwise_and_"),
                         ("__ior__", "bitwise_or_"), ("__ixor__", "bitwise_xor_"),
                         ("__ilshift__", "bitwise_left_shift_"),
                         ("__irshift__", "bitwise_right_shift_")):
    setattr(Tensor, _dunder, _inplace_operator(_dunder, _method))
Tensor.clip_ = _inplace_method("clip")
# ---- end of composite ops ----

# ---- math ops (#15): in-place forms, aliases, aminmax/isin/sgn/positive (vkml/_math.py) ----
from . import _math  # noqa: E402
_math.install(globals())
# ---- end of math ops (#15) ----

# ---- integer and special ops, random fills (#15, randint part; vkml/_randint.py) ----
from . import _randint  # noqa: E402
_randint.install(globals())
# ---- end of randint part (#15) ----
# ---- special functions (#15): in-place forms; torch.special's i0e/i1/i1e (vkml/_bessel.py) ----
from . import _bessel  # noqa: E402
_bessel.install(globals())
# ---- end of special functions (#15) ----
# ---- solvers (#15 linalg): inverse, det, logdet, matrix_power are bound as they are ----
slogdet = linalg.slogdet
triangular_solve = linalg._triangular_solve
Tensor.slogdet = lambda self: linalg.slogdet(self)
Tensor.triangular_solve = linalg._triangular_solve
lu, lu_unpack, lu_solve = linalg._lu, linalg._lu_unpack, linalg._lu_solve
Tensor.lu, Tensor.lu_solve = linalg._lu, linalg._lu_solve
matrix_exp = Tensor.matrix_exp = linalg.matrix_exp
svd = Tensor.svd = linalg._torch_svd
pinverse = Tensor.pinverse = linalg._pinverse
nuclear_norm = linalg._nuclear_norm
Tensor.lstsq, Tensor.solve = linalg._removed("lstsq", "lstsq"), linalg._removed("solve", "solve")
Tensor.symeig, Tensor.eig = linalg._removed("symeig", "eigh"), linalg._removed("eig", "eig")
qr = Tensor.qr = linalg._torch_qr
geqrf = Tensor.geqrf = linalg._geqrf
orgqr = Tensor.orgqr = linalg._orgqr
ormqr = Tensor.ormqr = linalg._ormqr
# ---- end of solvers (#15 linalg) ----

del _name

# ---- porting (issue #15): the names PyTorch programs use beside the ops ----
# vk.Size, vk.finfo/iinfo, math constants, Tensor.type()/new_*(), and the modules cuda, amp, backends,
# accelerator, distributed, nn.parallel, utils.data (see the README's "Porting" section).
import math as _stdmath  # noqa: E402  (vkml._math is the math ops' module)
from . import _porting  # noqa: E402
from ._porting import Size, finfo, iinfo  # noqa: E402
inf = _stdmath.inf
nan = _stdmath.nan
pi = _stdmath.pi
e = _stdmath.e
if not _os.environ.get("VKML_STUBGEN"):
    _porting.install()
from . import accelerator, amp, backends, cuda, distributed  # noqa: E402
from .amp import GradScaler, autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402
from .amp import set_autocast_dtype, set_autocast_enabled  # noqa: E402
from .nn import parallel as _parallel  # noqa: E402  (vk.nn.parallel, vk.nn.DataParallel)
from .utils import data as _data  # noqa: E402  (vk.utils.data)
nn.DataParallel = _parallel.DataParallel


def is_autocast_cpu_enabled():
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def set_autocast_cpu_enabled(enabled):
    set_autocast_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype_):
    set_autocast_dtype("cpu", dtype_)


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")


def clear_autocast_cache():
    """Drops the casts of weights autocast keeps within its outermost region (vk.autocast)."""
    _C._clear_autocast_cache()


def autocast_increment_nesting():
    return _C._autocast_enter_region()


def autocast_decrement_nesting():
    """Leaves one level of autocast nesting; leaving the last clears the cast cache."""
    return _C._autocast_exit_region()


def is_autocast_cache_enabled():
    return _C._autocast_cache_enabled()


def set_autocast_cache_enabled(enabled):
    _C._set_autocast_cache_enabled(True if enabled else False)  # (bool is vk.bool here)


_matmul_precision = "highest"


def set_float32_matmul_precision(precision):
    """Accepted as torch's ('highest', 'high', 'medium'); vkml's float32 matmul is always full
    float32, so this only records the value (an unknown one warns and is ignored, as torch)."""
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision = precision


def get_float32_matmul_precision():
    return _matmul_precision

# ---- shape/index breadth (#15): shape, view, indexing, scatter and dtype functions ----
# Compositions of the op table's ops (vkml/_shape_fns.py, vkml/_index_fns.py); in-place forms
# go through the core's one in-place path (_C._inplace), as the composite ops' do.
from . import _index_fns, _shape_fns  # noqa: E402
from ._shape_fns import *  # noqa: E402,F401,F403
from ._shape_fns import promote_types  # noqa: E402
from ._index_fns import (diagonal_scatter, index_copy, index_put, index_reduce,  # noqa: E402
                         masked_scatter, masked_select, scatter, scatter_reduce, select_scatter, slice_scatter,
                         take, take_along_dim, unique_consecutive)
from ._tensor_str import set_printoptions  # noqa: E402


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """torch.unique; dim= groups equal slices along dim (vkml/_index_fns.py)."""
    if dim is None:
        return _C.unique(input, sorted, return_inverse, return_counts)
    return _index_fns.unique_dim(input, sorted, return_inverse, return_counts, dim)


def index_put_(input, indices, values, accumulate=False):
    return input.index_put_(indices, values, accumulate)


def result_type(tensor1, tensor2):
    """The dtype torch's promotion gives these operands (tensors or Python numbers): the core's
    where() of them, on empty proxies of the same dtype and dim category, computes nothing."""
    def proxy(v):
        if isinstance(v, Tensor):
            return _C.zeros(() if v.ndim == 0 else (0,), dtype=v.dtype)
        return v
    return _C.where(_C.zeros((), dtype=dtype.bool), proxy(tensor1), proxy(tensor2)).dtype




def can_cast(from_, to):
    """torch.can_cast: casting never goes to a lower kind (float -> int, int -> bool)."""
    def kind(d):
        return 0 if d == dtype.bool else 2 if d.is_floating_point else 1
    return kind(from_) <= kind(to)


def typename(obj):
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(type(obj), "__module__", "") or ""
    name = type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


def _tensor_methods():
    S, I = _shape_fns, _index_fns

    def inplace(name, fn):
        def method(self, *args, **kwargs):
            return _C._inplace(self, name, fn, args, kwargs)
        method.__name__ = method.__qualname__ = name
        return method

    methods = {
        "tile": S.tile, "movedim": S.movedim, "moveaxis": S.movedim, "swapdims": S.swapdims,
        "ravel": S.ravel, "tensor_split": S.tensor_split, "hsplit": S.hsplit,
        "vsplit": S.vsplit, "dsplit": S.dsplit, "split_with_sizes": S.split_with_sizes,
        "rot90": S.rot90, "fliplr": S.fliplr, "flipud": S.flipud, "diagflat": S.diagflat,
        "inner": S.inner, "vdot": S.vdot, "cov": S.cov, "corrcoef": S.corrcoef,
        "is_nonzero": S.is_nonzero, "is_same_size": S.is_same_size, "is_signed": S.is_signed,
        "sum_to_size": S.sum_to_size, "ndimension": lambda self: self.ndim,
        "get_device": lambda self: -1 if self.device.type == "cpu" else self.device.index or 0,
        "scatter": I.scatter, "scatter_reduce": I.scatter_reduce, "take": I.take,
        "take_along_dim": I.take_along_dim, "index_copy": I.index_copy,
        "index_put": I.index_put, "masked_select": I.masked_select,
        "masked_scatter": I.masked_scatter, "select_scatter": I.select_scatter,
        "slice_scatter": I.slice_scatter, "diagonal_scatter": I.diagonal_scatter,
        "put": I.put, "index_reduce": I.index_reduce, "unique": unique,
        "unique_consecutive": I.unique_consecutive,
    }
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    inplace_forms = {
        "scatter_": I.scatter, "scatter_reduce_": I.scatter_reduce, "scatter_add_":
        _C.scatter_add, "index_add_": _C.index_add, "index_copy_": I.index_copy,
        "index_put_": I.index_put, "masked_scatter_": I.masked_scatter, "put_": I.put,
        "index_reduce_": I.index_reduce,
    }
    for name, fn in inplace_forms.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, inplace(name, fn))

    def inplace_view(name, fn):
        def method(self, *args):
            return _C._inplace_view(self, name, fn, args)
        method.__name__ = method.__qualname__ = name
        return method

    views = {"t_": Tensor.t, "transpose_": Tensor.transpose, "swapaxes_": Tensor.transpose,
             "swapdims_": Tensor.transpose, "squeeze_": Tensor.squeeze,
             "unsqueeze_": Tensor.unsqueeze}
    for name, fn in views.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, inplace_view(name, fn))


if not _os.environ.get("VKML_STUBGEN"):
    _tensor_methods()
# ---- end of shape/index breadth (#15) ----

# ---- quantile / nanquantile and method forms (#15, vkml/_stats.py) ----
from . import _stats  # noqa: E402

if not _os.environ.get("VKML_STUBGEN"):
    _stats.install(globals())

# ---- torch-namespace nn aliases (#15, vkml/_nn_aliases.py): torch.dropout, torch.batch_norm, ... ----
from . import _nn_aliases  # noqa: E402

if not _os.environ.get("VKML_STUBGEN"):
    _nn_aliases.install(globals())
from . import _nanmedian  # noqa: E402  (torch.nanmedian / Tensor.nanmedian)

if not _os.environ.get("VKML_STUBGEN"):
    _nanmedian.install(globals())
# ---- end torch-namespace nn aliases ----

# ---- porting breadth (#15): unfold, the *_copy functions, unsafe_split/chunk, adjoint/mH/H
# (vkml/_view_copies.py); mvlgamma, histogram, asarray, frombuffer, empty_strided/permuted,
# get_device/is_conj/is_inference (vkml/_porting_breadth.py) ----
from . import _porting_breadth, _view_copies  # noqa: E402

if not _os.environ.get("VKML_STUBGEN"):
    _view_copies.install(globals())
    _porting_breadth.install(globals())
# ---- end porting breadth ----

# ---- torch's process-wide names (#15, vkml/_torch_globals.py): layouts and memory formats (and
# the layout=/memory_format=/pin_memory= arguments), the determinism switches, interop threads ----
from . import _torch_globals  # noqa: E402

if not _os.environ.get("VKML_STUBGEN"):
    _torch_globals.install(globals())
# ---- end torch's process-wide names ----

# ---- the rest of the torch namespace (#15, vkml/_torch_rest.py): gradient, as_strided (a copy),
# histogramdd, nonzero_static, the legacy Tensor.new/resize_ family, apply_/map_/map2_ ----
from . import _torch_rest  # noqa: E402

if not _os.environ.get("VKML_STUBGEN"):
    _torch_rest.install(globals())
# ---- end of the rest of the torch namespace ----

# ---- the last torch-namespace names that compose existing ops (#15, vkml/_fn_rest.py): convolution,
# conv_tbc, the grid sampler's coded forms, the functional RNNs, Stream/Event, Tensor.is_set_to & co ----
from . import _fn_rest  # noqa: E402

if not _os.environ.get("VKML_STUBGEN"):
    _fn_rest.install(globals())
# ---- end of the last torch-namespace names ----

# ---- vk.special (#15, vkml/special.py): torch.special's functions that existing ops compose ----
from . import special  # noqa: E402
# ---- end of vk.special ----

# ---- the last Python-level torch names (#15, vkml/_porting_last.py): from_file,
# get_device_module (and vk.cpu), thread_safe_generator, lobpcg, Tensor.set_/volatile/reinforce ----
from . import cpu  # noqa: E402
from . import _porting_last  # noqa: E402

if not _os.environ.get("VKML_STUBGEN"):
    _porting_last.install(globals())
# ---- end of the last Python-level torch names ----

# ---- the complex- and storage-kind names asked of every tensor (vkml/_real_tensors.py): x.real,
# x.conj(), x.is_complex(), torch.angle, x.is_sparse, ... with torch's answers for real tensors ----
from . import _real_tensors  # noqa: E402

if not _os.environ.get("VKML_STUBGEN"):
    _real_tensors.install(globals())
# ---- end of the complex- and storage-kind names ----

# ---- vk.distributions (vkml/distributions): torch.distributions' common families, kl_divergence
# and constraints, composed of vkml's ops ----
from . import distributions  # noqa: E402
# ---- end of vk.distributions ----

# ---- vk.compile (vkml/_compile.py): torch.compile's signature, returning its argument ----
from ._compile import compile  # noqa: E402,A001
# ---- end of vk.compile ----


def _assert(condition, message):
    """torch._assert: Python's assert as a function (layers call it where tracers need one)."""
    assert condition, message

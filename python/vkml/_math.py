"""The math family's Python-level names (issue #15, "math ops (#15)"): the in-place forms
(x.tan_(), vk.tan_(x), ... for the new ops and the older unary ops that lacked them), torch's
aliases (absolute, greater_equal, ...), the in-place comparisons (x.eq_(y) writes 0/1 in x's
dtype), and aminmax, isin, sgn, positive, composed of the ops bound in C++
(python/src/bind_math.cpp). install() puts them on Tensor and the vkml namespace."""

import collections

from . import _C

Tensor = _C.Tensor
_dtypes = {}  # vk.bool, int32 and float64, set by install() (they are made in vkml/__init__.py)

# (min, max), as torch.return_types.aminmax
aminmax_type = collections.namedtuple("aminmax", ["min", "max"])


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) of input, over dim or all elements, as torch.aminmax."""
    if input.numel() == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity")
    dims = () if dim is None else dim
    return aminmax_type(_C.amin(input, dims, keepdim), _C.amax(input, dims, keepdim))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` is in `test_elements` (either may be a number), as
    torch.isin: a binary search of each element in the sorted test elements, so memory stays
    O(n + m) (comparing every pair took n * m bytes: 2.4 GB for two 49152-element tensors)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() expects at least one of elements and test_elements to be a tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(elements, Tensor):
        elements = _C.tensor(elements, device=like.device)
    if not isinstance(test_elements, Tensor):
        test_elements = _C.tensor(test_elements, device=like.device)
    from . import result_type  # vkml's own namespace, complete by the time isin is called

    common = result_type(elements, test_elements)
    if common == _dtypes["bool"]:
        common = _dtypes["int32"]  # searchsorted orders numbers; False < True as 0 < 1
    elements, haystack = elements.to(common), test_elements.reshape(-1).to(common)
    if haystack.numel() == 0:
        found = _C.zeros_like(elements, dtype=_dtypes["bool"])
    else:
        haystack = haystack.sort().values  # NaNs last
        # The search sees NaNs as +inf (a NaN breaks the order binary search needs); the compare
        # below sees them as NaN, equal to nothing, as in torch.
        keys = _C.where(haystack.isnan(), float("inf"), haystack) if haystack.is_floating_point() else haystack
        at = _C.searchsorted(keys, elements.reshape(-1)).clamp(max=haystack.numel() - 1)
        found = _C.eq(haystack[at], elements.reshape(-1)).reshape(elements.shape)
    return found.logical_not() if invert else found


def sgn(input):
    """sign(input) for real tensors (torch.sgn's complex case does not arise); bool stays bool."""
    return input.clone() if input.dtype == _dtypes["bool"] else _C.sign(input)


def positive(input):
    """input itself, as torch.positive (bool is an error there, as `+` on bool)."""
    if input.dtype == _dtypes["bool"]:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def greater_equal(input, other):
    return _C.ge(input, other)


def less_equal(input, other):
    return _C.le(input, other)


def not_equal(input, other):
    return _C.ne(input, other)


# Methods and functions that are another's name (torch's aliases).
_ALIASES = {"absolute": "abs", "greater_equal": "ge", "less_equal": "le", "not_equal": "ne"}

# x.<name>_(*args): the op's result written into x by _C._inplace (its checks, no graph, the
# version counter bumped); comparisons write 0/1 in x's dtype, as torch's.
_INPLACE = (
    "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh", "asinh",
    "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "lgamma", "digamma", "erfinv",
    "log2", "log10", "exp2", "sinc", "frac", "deg2rad", "rad2deg", "logit", "atan2", "arctan2",
    "fmod", "hypot", "copysign", "xlogy", "heaviside", "ldexp", "sgn", "absolute",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
    "not_equal",
)

# torch's in-place functions of the torch namespace (torch.exp_(x) is x.exp_()).
_NAMESPACE_INPLACE = (
    "abs", "acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "asin",
    "asinh", "atan", "atanh", "ceil", "clamp", "clamp_max", "clamp_min", "clip", "cos", "cosh",
    "deg2rad", "erf", "erfc", "exp2", "exp", "expm1", "fix", "floor", "frac", "ldexp", "log10",
    "log1p", "log2", "log", "logit", "nan_to_num", "neg", "negative", "rad2deg", "reciprocal",
    "relu", "round", "rsqrt", "sigmoid", "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh",
    "trunc", "xlogy", "gcd", "lcm",
)


def _inplace_method(name, fn):
    def method(self, *args, **kwargs):
        return _C._inplace(self, name + "_", fn, args, kwargs)

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In place: {name}(self, ...) written into self (see vkml.{name})."
    return method


def _float_power_(self, exponent):
    """float_power in place: self must be float64, the dtype float_power computes in (torch)."""
    if self.dtype != _dtypes["float64"]:
        raise RuntimeError("the base given to float_power_ has dtype "
                           f"{self.dtype} but the operation's result requires dtype float64")
    return _C._inplace(self, "float_power_", _C.float_power, (exponent,), {})


def _namespace_inplace(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name + "_")(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name + "_"
    fn.__doc__ = f"In place: input.{name}_(...) (see vkml.Tensor.{name}_)."
    return fn


def install(namespace):
    """Puts the names on Tensor and into `namespace` (the vkml module's globals)."""
    _dtypes.update(bool=namespace["bool"], int32=namespace["int32"], float64=namespace["float64"])
    for alias, target in _ALIASES.items():
        setattr(Tensor, alias, getattr(Tensor, target))
        namespace[alias] = getattr(_C, target)
    for name, fn in (("aminmax", aminmax), ("sgn", sgn), ("positive", positive)):
        setattr(Tensor, name, fn)
        namespace[name] = fn
    namespace["isin"] = isin
    for name in _INPLACE:
        fn = namespace.get(name) or getattr(_C, name)
        if not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _inplace_method(name, fn))
    Tensor.float_power_ = _float_power_
    Tensor.polygamma_ = _inplace_method("polygamma", lambda x, n: _C.polygamma(n, x))
    for name in _NAMESPACE_INPLACE:
        if name + "_" not in namespace:
            namespace[name + "_"] = _namespace_inplace(name)

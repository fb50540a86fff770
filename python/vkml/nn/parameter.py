"""vk.nn.parameter (torch.nn.parameter): Parameter, and the uninitialized tensors of the lazy modules.

An UninitializedParameter / UninitializedBuffer holds no data yet: an empty tensor kept only for its
device and dtype (what Module.to and the constructors' device=/dtype= set). materialize(shape) gives
it a shape in place and turns it into what it stands for, so that whoever holds the object (an
optimizer built before the first forward) holds the real parameter afterwards."""

from .. import _C, Tensor
from .modules.module import Parameter

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin", "is_lazy"]

_SHAPE_ERROR = ("Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
                "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. "
                "Call `forward` to initialize the parameters before accessing their attributes.")


class _MaterializedBuffer(Tensor):
    """What a materialized UninitializedBuffer becomes. torch's becomes a plain Tensor; vkml's Tensor is a
    nanobind type, whose instances have another layout than a Python subclass's, so __class__ cannot be
    set to it. The lazy modules put a plain Tensor sharing this one's data in their buffers."""


class UninitializedTensorMixin:
    """What UninitializedParameter and UninitializedBuffer share: materialize(), and no shape until then."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Gives the tensor `shape` (uninitialized values) on `device` with `dtype` (by default the ones it
        was declared with) and turns it, in place, into a Parameter (or a Tensor)."""
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if not all(isinstance(s, int) and s >= 0 for s in shape):
            raise ValueError(f"materialize: the shape must be non-negative ints, got {shape}")
        held = Tensor.detach(self)
        device = held.device if device is None else device
        dtype = held.dtype if dtype is None else dtype
        self.data = _C.empty(*shape, dtype=dtype, device=device)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_SHAPE_ERROR)

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            held = Tensor.detach(self)
            memo[id(self)] = type(self)(self.requires_grad, held.device, held.dtype)
        return memo[id(self)]

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))


def is_lazy(param):
    """Whether param is an UninitializedParameter or an UninitializedBuffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet (a lazy module's, until its first forward)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Tensor._make_subclass(cls, _C.empty(0, dtype=dtype, device=device), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (a lazy norm's running stats, until its first forward)."""

    cls_to_become = _MaterializedBuffer

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = Tensor._make_subclass(cls, _C.empty(0, dtype=dtype, device=device), requires_grad)
        t.persistent, t._is_buffer = persistent, True
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass

    def _rewrap(self, moved):
        """An uninitialized buffer moved or cast stays uninitialized (Module.to assigns what this returns)."""
        held = Tensor.detach(self)
        if moved.device == held.device and moved.dtype == held.dtype:
            return self
        return type(self)(self.requires_grad, moved.device, moved.dtype, getattr(self, "persistent", True))

    def to(self, *args, **kwargs):
        return self._rewrap(Tensor.to(Tensor.detach(self), *args, **kwargs))

    def cpu(self):
        return self.to("cpu")

    def float(self):
        return self.to(_C.dtype.float32)

    def double(self):
        return self.to(_C.dtype.float64)

    def half(self):
        return self.to(_C.dtype.float16)

    def bfloat16(self):
        return self.to(_C.dtype.bfloat16)

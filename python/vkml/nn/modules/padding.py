"""vk.nn: the padding layers (constant, zero, reflection, replication, circular), 1-D to 3-D."""

from .. import functional as F

from .module import Module


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * (2 * self._n)
        if len(self.padding) != 2 * self._n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {2 * self._n} values, "
                             f"got {len(self.padding)}")
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ConstantPad1d(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad2d(ConstantPad1d):
    _n = 2


class ConstantPad3d(ConstantPad1d):
    _n = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ZeroPad1d):
    _n = 2


class ZeroPad3d(ZeroPad1d):
    _n = 3


class ReflectionPad1d(_PadNd):
    _mode = "reflect"


class ReflectionPad2d(_PadNd):
    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    _mode = "replicate"


class ReplicationPad2d(_PadNd):
    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _n, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    _mode = "circular"


class CircularPad2d(_PadNd):
    _n, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    _n, _mode = 3, "circular"

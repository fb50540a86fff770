"""vk.nn: Conv3d, ConvTranspose1d/2d/3d (issue #16), on F.conv3d and F.conv_transpose{1,2,3}d."""

from ... import _C
from .. import functional as F

from .conv import _ConvNd, _ntuple
from .module import Parameter


class Conv3d(_ConvNd):
    _n = 3

    def _conv(self, input, weight, bias, padding):
        return F.conv3d(input, weight, bias, self.stride, padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                 dilation, padding_mode, device, dtype):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        # _ConvNd makes a weight (out, in / groups, *kernel); a transposed conv's is (in, out / groups,
        # *kernel), so it is asked for the swapped pair, and the bias (out) is made here
        super().__init__(out_channels, in_channels, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, None, dtype)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_padding = _ntuple(output_padding, self._n)
        if bias:
            self.bias = Parameter(_C.empty(out_channels, dtype=self.weight.dtype))
        self.reset_parameters()  # torch's: fan_in = weight.shape[1] * prod(kernel) for both
        self._place_on(device)

    def _output_padding(self, input, output_size):
        """torch's: the output_padding that gives output_size (checked to be reachable)."""
        n = self._n
        if output_size is None:
            return self.output_padding
        output_size = list(output_size)
        non_spatial = 2 if input.ndim == n + 2 else 1
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or "
                             f"{non_spatial + n} elements (got {len(output_size)})")
        lows = [(input.shape[d + non_spatial] - 1) * self.stride[d] - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        highs = [lo + s - 1 for lo, s in zip(lows, self.stride)]
        for size, lo, hi in zip(output_size, lows, highs):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {lows} "
                                 f"to {highs} (for an input of {list(input.shape[non_spatial:])})")
        return tuple(size - lo for size, lo in zip(output_size, lows))

    def forward(self, input, output_size=None):
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._n - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding,
                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)


class ConvTranspose2d(_ConvTransposeNd):
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)


class ConvTranspose3d(_ConvTransposeNd):
    _n = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)

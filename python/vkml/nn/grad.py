"""torch.nn.grad: conv2d's gradients as functions, each one core op (vk.conv2d_backward_input /
vk.conv2d_backward_weight), with torch's argument order."""
from .. import _C

__all__ = ["conv2d_input", "conv2d_weight"]


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to an input of shape input_size."""
    return _C.conv2d_backward_input(grad_output, weight, tuple(input_size), stride, padding,
                                    dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to a weight of shape weight_size."""
    return _C.conv2d_backward_weight(grad_output, input, tuple(weight_size), stride, padding,
                                     dilation, groups)

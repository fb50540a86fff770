"""vk.nn: torch.nn's modules over vkml tensors (the math is in vkml._C._nn)."""

from . import functional, grad, init, utils
from .modules import *  # noqa: F401,F403
from .modules import Module, Parameter
from . import parameter  # vk.nn.parameter, as torch.nn.parameter (lazy modules)
from . import attention  # vk.nn.attention: SDPBackend, sdpa_kernel (one kernel per device)
from .parameter import UninitializedBuffer, UninitializedParameter

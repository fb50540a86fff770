"""vk.nn modules: torch.nn.Module's bookkeeping over vkml tensors; the math lives in F (C++).

One file per family, as torch.nn.modules: module.py (Parameter, Module), then the layers."""

from .activation import GELU, ReLU, SiLU, Sigmoid, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv2d
from .dropout import Dropout
from .flatten import Flatten
from .linear import Identity, Linear
from .loss import CrossEntropyLoss, MSELoss
from .module import Module, Parameter
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .pooling import AvgPool2d, MaxPool2d
from .sparse import Embedding

__all__ = ["Parameter", "Module", "Linear", "Conv2d", "MaxPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d",
           "LayerNorm", "Embedding", "Dropout", "ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "Flatten",
           "Identity", "Sequential", "ModuleList", "ModuleDict", "CrossEntropyLoss", "MSELoss"]

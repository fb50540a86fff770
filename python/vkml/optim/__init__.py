"""vk.optim: torch.optim's SGD, Adam, AdamW over fused C++ updates, and lr schedulers."""

from . import lr_scheduler
from .optimizer import Optimizer
from .sgd_adam import SGD, Adam, AdamW

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]

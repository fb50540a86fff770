"""vk.optim: torch.optim's optimizers (SGD, Adam, AdamW over fused C++ updates; Adadelta, Adagrad, RMSprop,
Adamax, NAdam, RAdam, LBFGS composed from vkml ops), the lr schedulers and swa_utils."""

from . import lr_scheduler
from .adaptive import Adadelta, Adagrad, Adamax, NAdam, RAdam, RMSprop
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .sgd_adam import SGD, Adam, AdamW
# Rprop and ASGD (issue #15)
from .rprop_asgd import ASGD, Rprop

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "RMSprop", "Adamax", "NAdam", "RAdam",
           "LBFGS", "lr_scheduler"]
__all__ += ["Rprop", "ASGD"]  # (issue #15)
from .adafactor import Adafactor  # (issue #15)

__all__ += ["Adafactor"]
# Muon, SparseAdam (a refusal: vkml has no sparse gradients), swap_in_optimizer_params_and_state (#15)
from .muon import Muon
from .sparse_adam import SparseAdam
from .swap_in import swap_in_optimizer_params_and_state

__all__ += ["Muon", "SparseAdam", "swap_in_optimizer_params_and_state"]
# stochastic weight averaging and EMA models (torch.optim.swa_utils): AveragedModel, SWALR, update_bn
from . import swa_utils  # noqa: E402

__all__ += ["swa_utils"]

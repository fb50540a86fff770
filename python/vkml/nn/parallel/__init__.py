"""vk.nn.parallel: torch.nn.parallel's wrappers. DistributedDataParallel (distributed.py) averages
gradients across the ranks of vk.distributed. DataParallel, with
no GPU to spread over, is what torch's is without CUDA devices: a wrapper whose forward is the
module's (its state_dict keys start with "module.")."""

from ..modules import Module
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

"""vk.nn.parallel: torch.nn.parallel's wrappers. DistributedDataParallel is importable but raises
NotImplementedError when constructed (vkml has no distributed training yet). DataParallel, with
no GPU to spread over, is what torch's is without CUDA devices: a wrapper whose forward is the
module's (its state_dict keys start with "module.")."""

from ..modules import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DistributedDataParallel(Module):
    def __init__(self, module=None, *args, **kwargs):
        raise NotImplementedError(
            "vkml.nn.parallel.DistributedDataParallel: vkml has no distributed (multi-process) "
            "training yet; train the module itself in one process")


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

"""vk.cuda: what torch.cuda says on a machine without CUDA (vkml has no CUDA backend; its GPU
backend is vk.vulkan). is_available() is False and device_count() 0, so programs that pick
`"cuda" if torch.cuda.is_available() else "cpu"` run on the CPU. Seeding is a no-op, as torch's
is without a CUDA device (vk.manual_seed seeds everything vkml has); synchronize() and
empty_cache() do nothing."""

from . import amp

__all__ = ["is_available", "device_count", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "synchronize", "empty_cache", "is_bf16_supported", "current_device", "set_device",
           "get_device_name", "amp"]

_NO_CUDA = "vkml has no CUDA backend ({what}); use the CPU or the Vulkan device (vkml.vulkan)"


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def manual_seed(seed):
    """No CUDA generator to seed (as torch.cuda.manual_seed without a CUDA device)."""


def manual_seed_all(seed):
    """No CUDA generator to seed (as torch.cuda.manual_seed_all without a CUDA device)."""


def seed():
    pass


def seed_all():
    pass


def synchronize(device=None):
    pass


def empty_cache():
    pass


def current_device():
    raise RuntimeError(_NO_CUDA.format(what="cuda.current_device()"))


def set_device(device):
    raise RuntimeError(_NO_CUDA.format(what=f"cuda.set_device({device!r})"))


def get_device_name(device=None):
    raise RuntimeError(_NO_CUDA.format(what="cuda.get_device_name()"))

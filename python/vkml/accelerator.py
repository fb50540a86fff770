"""vk.accelerator: torch.accelerator for vkml, whose accelerator is the Vulkan device.

is_available() is True when this build has the Vulkan backend and the machine a Vulkan device
(lavapipe, Mesa's Vulkan on the CPU, counts: it is the device vkml's tests run on), so programs
written as `torch.accelerator.current_accelerator() if torch.accelerator.is_available() else
"cpu"` run their tensors on vk.device("vulkan")."""

from . import _C

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "set_device_index", "synchronize"]


def is_available():
    return _C.is_device_available("vulkan")


def device_count():
    return 1 if is_available() else 0


def current_accelerator(check_available=False):
    """vk.device("vulkan") when there is a Vulkan device, else None (as torch without one)."""
    return _C.device("vulkan") if is_available() else None


def current_device_index():
    return 0 if is_available() else -1


def set_device_index(device):
    index = device.index if isinstance(device, _C.device) else int(device)
    if not is_available() or index not in (0, None):
        raise RuntimeError(f"vkml.accelerator.set_device_index({device!r}): vkml uses one Vulkan "
                           "device (index 0)")


def synchronize(device=None):
    """Waits until the Vulkan device has finished the work recorded so far."""
    if is_available():
        from . import vulkan
        vulkan.synchronize()

"""The Vulkan device, as torch.cuda is for CUDA: vkml.vulkan.is_available(), device_name(),
synchronize(). Tensors go there with .to("vulkan") or device="vulkan"."""
from . import _C

__all__ = ["is_available", "device_name", "synchronize"]


def is_available():
    """True when this build has the Vulkan backend and this machine a Vulkan device."""
    return _C.is_device_available("vulkan")


def device_name():
    """The name of the Vulkan device in use; vkml.DeviceError saying why when there is none."""
    return _C._vulkan_device_name()


def synchronize():
    """Waits until the device has finished all work queued so far. In this version every op
    waits for its own work before it returns, so there is never anything left to wait for."""
    if not is_available():
        _C._vulkan_device_name()  # raises the DeviceError that says why

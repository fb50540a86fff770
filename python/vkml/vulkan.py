"""The Vulkan device, as torch.cuda is for CUDA: vkml.vulkan.is_available(), device_name(),
synchronize(), memory_allocated(), memory_reserved(), empty_cache(), memory_stats(). Tensors go
there with .to("vulkan") or device="vulkan".

Ops on the device are recorded as they are called and run in batches: errors are raised at the
call, but the host waits only when it reads a result (item(), tolist(), numpy(), cpu(), printing)
or calls synchronize(). An index out of range (index_select, gather, scatter_add, embedding,
cross_entropy) is found on the device: its IndexError is raised by the next read or synchronize()."""
from . import _C

__all__ = ["is_available", "device_name", "synchronize", "memory_allocated", "memory_reserved",
           "empty_cache", "memory_stats"]


def is_available():
    """True when this build has the Vulkan backend and this machine a Vulkan device."""
    return _C.is_device_available("vulkan")


def device_name():
    """The name of the Vulkan device in use; vkml.DeviceError saying why when there is none."""
    return _C._vulkan_device_name()


def _require():
    if not is_available():
        _C._vulkan_device_name()  # raises the DeviceError that says why


def synchronize(device=None):
    """Waits until the device has finished all the work recorded so far."""
    _require()
    _C._vulkan_synchronize()


def memory_stats(device=None):
    """The device's memory (bytes of live tensors, bytes held from the driver) and the work
    sent to it so far (submissions, dispatches, barriers, host <-> device copies and bytes, and
    how many of those copies went through staging memory)."""
    _require()
    return _C._vulkan_stats()


def memory_allocated(device=None):
    """Bytes of device memory that live tensors use."""
    return memory_stats()["allocated_bytes"]


def memory_reserved(device=None):
    """Bytes of device memory vkml holds from the driver (cached blocks included)."""
    return memory_stats()["reserved_bytes"]


def empty_cache():
    """Hands cached device memory that no tensor uses back to the driver."""
    _require()
    _C._vulkan_empty_cache()

"""vk.cpu: torch.cpu's device-agnostic helpers for the CPU device, what
vk.get_device_module("cpu") returns. There is one CPU device with one in-order queue, so
synchronize() and set_device() do nothing, as torch's; Stream and Event are vkml's (one queue
per device)."""

import contextlib

from . import _C

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream",
           "stream", "set_device", "device_count", "Stream", "StreamContext", "Event"]


def is_available():
    """Always True: vkml runs everywhere on the CPU."""
    return True


def is_initialized():
    return True


def synchronize(device=None):
    """Nothing to wait for: CPU ops finish before they return."""


def current_device():
    return "cpu"


def set_device(device):
    """Nothing to set: there is one CPU device."""


def device_count():
    return 1


def _stream_types():
    from ._fn_rest import Event, Stream
    return Stream, Event


def current_stream(device=None):
    """The CPU's one queue, as a vkml Stream."""
    return _stream_types()[0]("cpu")


class StreamContext(contextlib.AbstractContextManager):
    """`with vk.cpu.stream(s):` changes nothing: the CPU has one queue."""

    def __init__(self, stream):
        self.stream = stream

    def __exit__(self, *exc):
        return False


def stream(stream):
    return StreamContext(stream)


def __getattr__(name):
    # Stream and Event live in vkml/_fn_rest.py, loaded after this module
    if name in ("Stream", "Event"):
        return dict(zip(("Stream", "Event"), _stream_types()))[name]
    raise AttributeError(f"module 'vkml.cpu' has no attribute {name!r}")

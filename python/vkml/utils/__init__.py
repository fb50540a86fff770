"""vkml.utils: gradient checkpointing (`vkml.utils.checkpoint`, also callable itself) and data
loading (`vkml.utils.data`)."""

from . import checkpoint

__all__ = ["checkpoint"]

"""vkml.utils: gradient checkpointing (`vkml.utils.checkpoint`, also callable itself), data
loading (`vkml.utils.data`) and timing (`vkml.utils.benchmark`)."""

from . import benchmark, checkpoint

__all__ = ["benchmark", "checkpoint"]

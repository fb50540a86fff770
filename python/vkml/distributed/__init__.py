"""vk.distributed: importable so that programs written for torch.distributed load; vkml has no
multi-process training yet (the `distributed` layer of the design is a later issue).
is_available() and is_initialized() are False; every function that would start or use a process
group raises RuntimeError when called."""

__all__ = ["is_available", "is_initialized", "is_torchelastic_launched", "init_process_group",
           "destroy_process_group", "get_rank", "get_world_size", "barrier", "all_reduce",
           "all_gather", "broadcast", "reduce", "ReduceOp"]

_MSG = ("vkml.distributed.{fn}(): vkml has no distributed (multi-process) training yet; run "
        "the program in one process")


def is_available():
    return False


def is_initialized():
    return False


def is_torchelastic_launched():
    return False


class ReduceOp:
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


def _unavailable(name):
    def fn(*args, **kwargs):
        raise RuntimeError(_MSG.format(fn=name))
    fn.__name__ = name
    fn.__doc__ = f"Raises RuntimeError: {_MSG.format(fn=name)}."
    return fn


for _name in ("init_process_group", "destroy_process_group", "get_rank", "get_world_size",
              "barrier", "all_reduce", "all_gather", "broadcast", "reduce", "new_group",
              "get_backend"):
    globals()[_name] = _unavailable(_name)
del _name

"""vk.distributed: data-parallel training over MPI, shaped like torch.distributed.

One process group, the world of the MPI job (start it with ``python -m vkml.distributed.run -n N
script.py``, which wraps mpirun). Collectives work in place on contiguous tensors; every rank
gets the same bits (each chunk of a reduction is reduced by one rank, in rank order, then copied
to all). Before moving data the ranks compare what they were asked to do, so mismatched shapes,
dtypes or calls raise on every rank (ShapeError / DTypeError / RuntimeError naming each rank's
side) instead of hanging. A collective that gets no answer within the group's timeout raises
RuntimeError; an exception that ends one rank's program ends the whole job (MPI_Abort), so the
other ranks stop instead of waiting.

is_available() is False when vkml was built without MPI (Debian: libopenmpi-dev or
libmpich-dev)."""

import atexit
import datetime
import os
import pickle
import sys

from .. import _C

__all__ = ["is_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_gloo_available", "is_torchelastic_launched", "init_process_group",
           "destroy_process_group", "get_rank", "get_world_size", "get_backend", "barrier",
           "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "broadcast", "reduce", "gather", "scatter",
           "broadcast_object_list", "all_gather_object", "new_group", "ReduceOp", "Work",
           "GroupMember", "group", "ProcessGroup", "Backend"]

_D = _C._distributed
# The one group vkml has: the MPI job's world. Functions take group=None or this object.
_BACKEND = "mpi"


class ProcessGroup:
    def __repr__(self):
        return "<vkml.distributed.ProcessGroup WORLD>"

    def rank(self):
        return get_rank()

    def size(self):
        return get_world_size()


class GroupMember:
    WORLD = ProcessGroup()
    NON_GROUP_MEMBER = object()


group = GroupMember


class Backend(str):
    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    UNDEFINED = "undefined"

    def __new__(cls, name):
        return str.__new__(cls, name.lower())


class ReduceOp:
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


Work = getattr(_D, "Work", None)


def is_available():
    """True when this build has vk.distributed (vkml was built against MPI)."""
    return bool(_D.available)


def is_mpi_available():
    return is_available()


def is_nccl_available():
    return False


def is_gloo_available():
    return False


def is_torchelastic_launched():
    return False


def is_initialized():
    return is_available() and _D.initialized()


def _require_available(fn):
    if not is_available():
        raise RuntimeError(f"vkml.distributed.{fn}(): this vkml was built without MPI; install "
                           "libopenmpi-dev (or libmpich-dev) and rebuild, or run the program in "
                           "one process")


def _require_group(fn, group=None):
    _require_available(fn)
    if not _D.initialized():
        raise RuntimeError(f"vkml.distributed.{fn}(): Default process group has not been "
                           "initialized, please make sure to call init_process_group.")
    if group is not None and group is not GroupMember.WORLD:
        raise RuntimeError(f"vkml.distributed.{fn}(): vkml has one process group (the world); "
                           f"got {group!r}")


def _seconds(timeout):
    if timeout is None:
        return 1800.0
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


_previous_excepthook = None


def _abort_on_uncaught(kind, value, tb):
    """An exception that ends this rank's program ends the job: without it the other ranks would
    wait in their next collective until the timeout."""
    (_previous_excepthook or sys.__excepthook__)(kind, value, tb)
    if is_initialized() and _D.world_size() > 1:
        sys.stderr.write(f"vkml.distributed: rank {_D.rank()} raised {kind.__name__}; ending every "
                         "rank of the job (MPI_Abort)\n")
        sys.stderr.flush()
        _D.abort(1)


def _finalize_at_exit():
    if is_initialized():
        _D.finalize()


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Joins the MPI job this process was started in (a process started alone is a group of one).
    backend: "mpi"; "gloo" and "nccl" (what torch programs pass) run on MPI too, so that a torch
    script ports by renaming its import. timeout: how long a collective may wait for the other
    ranks (a datetime.timedelta or seconds; default 30 minutes, as torch)."""
    global _previous_excepthook
    _require_available("init_process_group")
    if backend is not None and str(backend).lower() not in ("mpi", "gloo", "nccl", "cpu:gloo",
                                                            "cpu:gloo,cuda:nccl", "undefined"):
        raise ValueError(f"vkml.distributed.init_process_group: unknown backend {backend!r} "
                         "(vkml runs every backend name on MPI: 'mpi', 'gloo', 'nccl')")
    if init_method not in (None, "env://"):
        raise ValueError(f"vkml.distributed.init_process_group: init_method {init_method!r}: the "
                         "MPI launcher (python -m vkml.distributed.run) starts the job")
    if _D.initialized():
        raise RuntimeError("vkml.distributed.init_process_group: trying to initialize the default "
                           "process group twice!")
    _D.init(_seconds(timeout))
    actual_rank, actual_size = _D.rank(), _D.world_size()
    if world_size not in (-1, None) and int(world_size) != actual_size:
        raise ValueError(f"vkml.distributed.init_process_group: world_size={world_size}, but the "
                         f"MPI job has {actual_size} processes")
    if rank not in (-1, None) and int(rank) != actual_rank:
        raise ValueError(f"vkml.distributed.init_process_group: rank={rank}, but MPI made this "
                         f"process rank {actual_rank}")
    if sys.excepthook is not _abort_on_uncaught:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught
    atexit.register(_finalize_at_exit)


def destroy_process_group(group=None):
    """Finishes the queued collectives and MPI. MPI cannot start again in this process."""
    _require_group("destroy_process_group", group)
    _D.finalize()


def get_rank(group=None):
    _require_group("get_rank", group)
    return _D.rank()


def get_world_size(group=None):
    _require_group("get_world_size", group)
    return _D.world_size()


def get_backend(group=None):
    _require_group("get_backend", group)
    return _BACKEND


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None):
    """The world group; vkml has no subgroups (NotImplementedError for a proper subset)."""
    _require_group("new_group")
    if ranks is not None and sorted(ranks) != list(range(_D.world_size())):
        raise NotImplementedError("vkml.distributed.new_group: vkml has one process group, the "
                                  f"world of {_D.world_size()} ranks; got ranks={list(ranks)}")
    return GroupMember.WORLD


def _op(op):
    name = getattr(op, "name", op)  # torch-style enum members carry .name
    name = str(name).lower().replace("reduceop.", "")
    if name == "prod":
        name = "product"
    return name


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    _require_group("all_reduce", group)
    return _D.all_reduce(tensor, _op(op), async_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """The reduction at rank dst (every rank computes it: the others' tensors hold it too)."""
    _require_group("reduce", group)
    _check_rank("reduce", dst)
    return _D.all_reduce(tensor, _op(op), async_op)


def broadcast(tensor, src, group=None, async_op=False):
    _require_group("broadcast", group)
    return _D.broadcast(tensor, int(src), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    _require_group("barrier", group)
    return _D.barrier(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    _require_group("all_gather_into_tensor", group)
    return _D.all_gather(output_tensor, input_tensor, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    _require_group("reduce_scatter_tensor", group)
    return _D.reduce_scatter(output, input, _op(op), async_op)


def _check_rank(fn, r):
    if not 0 <= int(r) < _D.world_size():
        raise IndexError(f"vkml.distributed.{fn}: rank {r} is not in this group of "
                         f"{_D.world_size()}")


def _check_list(fn, tensors, like):
    p = _D.world_size()
    if len(tensors) != p:
        raise ValueError(f"vkml.distributed.{fn}: the list holds {len(tensors)} tensors; the group "
                         f"has {p} ranks")
    for t in tensors:
        if tuple(t.shape) != tuple(like.shape) or t.dtype != like.dtype:
            raise ValueError(f"vkml.distributed.{fn}: every tensor of the list must be "
                             f"{like.dtype}{list(like.shape)}, got {t.dtype}{list(t.shape)}")


class _Then:
    """A Work whose wait() also runs `then` (the copy out of a flat buffer)."""

    def __init__(self, work, then):
        self._work, self._then, self._done = work, then, False

    def wait(self, timeout=None):
        self._work.wait()
        if not self._done:
            self._done = True
            self._then()
        return True

    def is_completed(self):
        return self._work.is_completed()


def _finish(work, then, async_op):
    if async_op:
        return _Then(work, then)
    work.wait()
    then()
    return None


def _gather_into(targets, tensor, async_op):
    """Every rank's tensor into one (p, *shape) buffer, then targets[r] = rank r's (targets None:
    this rank keeps nothing)."""
    from .. import empty, no_grad
    flat = empty((_D.world_size(),) + tuple(tensor.shape), dtype=tensor.dtype,
                 device=tensor.device)
    work = _D.all_gather(flat, tensor.contiguous(), True)

    def then():
        if targets is not None:
            with no_grad():
                for r, out in enumerate(targets):
                    out.copy_(flat[r])
    return _finish(work, then, async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[r] = rank r's tensor."""
    _require_group("all_gather", group)
    _check_list("all_gather", tensor_list, tensor)
    return _gather_into(tensor_list, tensor, async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output = the reduction over ranks of every rank's input_list[rank]."""
    _require_group("reduce_scatter", group)
    from .. import stack
    _check_list("reduce_scatter", input_list, output)
    return _D.reduce_scatter(output, stack(list(input_list)).contiguous(), _op(op), async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """gather_list (on rank dst) gets every rank's tensor."""
    _require_group("gather", group)
    _check_rank("gather", dst)
    if _D.rank() == dst:
        if gather_list is None:
            raise ValueError("vkml.distributed.gather: rank dst needs a gather_list")
        _check_list("gather", gather_list, tensor)
    return _gather_into(gather_list if _D.rank() == dst else None, tensor, async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """tensor = rank src's scatter_list[rank]."""
    _require_group("scatter", group)
    _check_rank("scatter", src)
    from .. import empty, no_grad, stack
    if _D.rank() == src:
        if scatter_list is None:
            raise ValueError("vkml.distributed.scatter: rank src needs a scatter_list")
        _check_list("scatter", scatter_list, tensor)
        flat = stack(list(scatter_list)).contiguous()
    else:
        flat = empty((_D.world_size(),) + tuple(tensor.shape), dtype=tensor.dtype,
                     device=tensor.device)
    work = _D.broadcast(flat, int(src), True)

    def then():
        with no_grad():
            tensor.copy_(flat[_D.rank()])
    return _finish(work, then, async_op)


def _object_bytes(obj):
    """obj pickled into an int64 tensor (the byte count first, then the bytes, zero-padded)."""
    import numpy as np
    from .. import from_numpy
    data = pickle.dumps(obj)
    padded = data + b"\0" * (-len(data) % 8)
    words = np.concatenate([np.array([len(data)], np.int64), np.frombuffer(padded, np.int64)])
    return from_numpy(words.copy())


def _object_from(words):
    import numpy as np
    arr = np.asarray(words.numpy(), dtype=np.int64)
    return pickle.loads(arr[1:].tobytes()[:int(arr[0])])


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """object_list[i] = rank src's object_list[i] (pickled, so trust the sender)."""
    _require_group("broadcast_object_list", group)
    from .. import tensor as make_tensor, zeros, int64
    payload = _object_bytes(list(object_list)) if _D.rank() == src else None
    size = make_tensor([payload.numel() if payload is not None else 0], dtype=int64)
    _D.broadcast(size, int(src), False)
    if payload is None:
        payload = zeros(int(size.item()), dtype=int64)
    _D.broadcast(payload, int(src), False)
    object_list[:] = _object_from(payload)


def all_gather_object(object_list, obj, group=None):
    """object_list[r] = rank r's obj (pickled)."""
    _require_group("all_gather_object", group)
    from .. import tensor as make_tensor, zeros, int64, cat
    p = _D.world_size()
    if len(object_list) != p:
        raise ValueError(f"vkml.distributed.all_gather_object: object_list holds "
                         f"{len(object_list)} entries; the group has {p} ranks")
    mine = _object_bytes(obj)
    sizes = zeros(p, dtype=int64)
    _D.all_gather(sizes, make_tensor([mine.numel()], dtype=int64), False)
    longest = int(sizes.max().item())
    padded = cat([mine, zeros(longest - mine.numel(), dtype=int64)])
    flat = zeros(p * longest, dtype=int64)
    _D.all_gather(flat, padded, False)
    for r in range(p):
        object_list[r] = _object_from(flat[r * longest:(r + 1) * longest])

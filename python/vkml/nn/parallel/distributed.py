"""vk.nn.parallel.DistributedDataParallel: each rank trains a replica of the module on its share
of the batch; after backward every replica holds the average of all ranks' gradients, so the
optimizers take the same step everywhere.

At construction the parameters and buffers are broadcast from rank 0 (a shape that differs on
some rank raises ShapeError on every rank). The gradients are averaged in buckets of about
bucket_cap_mb, filled in reverse parameter order (the order backward produces them): a hook
after each gradient's accumulation marks it ready, and a bucket whose gradients are all ready is
flattened and its all-reduce started on the communication thread while backward goes on. The
buckets start in one fixed order on every rank (MPI matches collectives by order). The last
gradient's hook waits for every bucket and copies the averages back, so backward() returns with
the gradients final and optimizer.step() sees them. Inside no_sync() nothing is reduced (the
gradients accumulate locally; the first backward outside reduces the sum)."""

import contextlib
import weakref

from ... import _C
from ..modules import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    def __init__(self, params):
        self.params = params           # in the order their slices lie in the flat buffer
        self.ready = set()             # ids of the parameters whose gradient is accumulated
        self.flat = None
        self.work = None


class DistributedDataParallel(Module):
    # A benchmark's switch (bench/dist_bench.py): hook and reduce in a group of one too, to measure
    # the wrapper's own cost per step.
    _hook_in_group_of_one = False
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        from ... import distributed as dist
        if not dist.is_initialized():
            raise RuntimeError("DistributedDataParallel: Default process group has not been "
                               "initialized, please make sure to call init_process_group.")
        if process_group is not None and process_group is not dist.GroupMember.WORLD:
            raise RuntimeError("DistributedDataParallel: vkml has one process group (the world)")
        self.module = module
        self.dim = dim
        self.device_ids = device_ids
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self._world = dist.get_world_size()
        params, seen = [], set()
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        self._params = params
        self._sync_module_states()
        cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        # The first bucket (the last layers' gradients, ready first) is small, as torch's 1 MiB,
        # so that communication starts early in backward.
        self._buckets = self._make_buckets(params, min(cap, 1024 * 1024), cap)
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._next = 0                 # the next bucket to start (they start in index order)
        self._unused = set()           # ids of the parameters this forward does not reach
        # The hooks hold this wrapper weakly: a DDP the program dropped (say, to wrap the module
        # anew) neither stays alive through its module's parameters nor reduces their gradients.
        me = weakref.ref(self)

        def grad_ready(p):
            ddp = me()
            if ddp is not None:
                ddp._grad_ready(p)
        # One rank: the average of one gradient is itself; nothing to reduce, nothing to hook.
        self._handles = ([p.register_post_accumulate_grad_hook(grad_ready) for p in params]
                         if self._world > 1 or self._hook_in_group_of_one else [])

    # ---- construction ----
    def _sync_module_states(self):
        from ... import distributed as dist, no_grad
        with no_grad():
            for t in list(self.module.parameters()) + list(self.module.buffers()):
                dist.broadcast(t, src=0)

    @staticmethod
    def _make_buckets(params, first_cap, cap):
        """Reverse parameter order, one dtype and device per bucket, about cap bytes each (the
        first one first_cap)."""
        buckets, current, size = [], [], 0
        for p in reversed(params):
            nbytes = p.numel() * p.element_size()
            limit = first_cap if not buckets else cap
            if current and (size + nbytes > limit or p.dtype != current[0].dtype
                            or p.device != current[0].device):
                buckets.append(_Bucket(current))
                current, size = [], 0
            current.append(p)
            size += nbytes
        if current:
            buckets.append(_Bucket(current))
        return buckets

    # ---- forward ----
    def forward(self, *inputs, **kwargs):
        if any(b.ready for b in self._buckets):
            names = {id(p): n for n, p in self.module.named_parameters()}
            missing = [names.get(id(p), "?") for b in self._buckets for p in b.params
                       if b.ready and id(p) not in b.ready]
            self._reset()
            raise RuntimeError(
                "DistributedDataParallel: Expected to have finished reduction in the prior "
                "iteration before starting a new one: parameters that got no gradient in the last "
                f"backward: {missing}. Pass find_unused_parameters=True, or make every parameter "
                "take part in the loss.")
        if self.broadcast_buffers and self._world > 1:
            from ... import distributed as dist, no_grad
            with no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, src=0)
        out = self.module(*inputs, **kwargs)
        # Only a forward that backward can follow marks anything (an evaluation under no_grad
        # would otherwise "reduce" zeros into every gradient).
        if (self.find_unused_parameters and self.require_backward_grad_sync and self._world > 1
                and _C.is_grad_enabled()):
            self._mark_unused(out)
        return out

    def _mark_unused(self, out):
        """Parameters the output does not reach get a zero gradient in the reduction (another
        rank may use them), found by a walk of the graph (no recursion)."""
        reached, stack, seen = set(), [], set()
        for t in _tensors_in(out):
            if getattr(t, "grad_fn", None) is not None:
                stack.append(t.grad_fn)
        while stack:
            fn = stack.pop()
            var = getattr(fn, "variable", None)
            if var is not None:
                reached.add(var._cdata)  # a new Python object for the same leaf: compare C++
            for nxt, _ in fn.next_functions:
                if nxt is not None and id(nxt) not in seen:
                    seen.add(id(nxt))
                    stack.append(nxt)
        self._unused = {id(p) for p in self._params if p._cdata not in reached}
        for p in [p for p in self._params if id(p) in self._unused]:
            self._grad_ready(p)

    # ---- backward ----
    def _grad_ready(self, p):
        if not self.require_backward_grad_sync:
            return
        bucket = self._bucket_of[id(p)]
        bucket.ready.add(id(p))
        while self._next < len(self._buckets):
            b = self._buckets[self._next]
            if len(b.ready) < len(b.params):
                return
            self._start(b)
            self._next += 1
        self._finish()

    def _start(self, bucket):
        from ... import cat, zeros
        from ... import distributed as dist
        parts = [p.grad.reshape(-1) if p.grad is not None and id(p) not in self._unused
                 else zeros(p.numel(), dtype=p.dtype, device=p.device) for p in bucket.params]
        bucket.flat = cat(parts) if len(parts) > 1 else parts[0].clone()
        # The shapes are equal on every rank by construction: no cross-rank check per bucket.
        bucket.work = dist._D.all_reduce(bucket.flat, "avg", True, False)

    def _finish(self):
        from ... import no_grad
        with no_grad():
            for b in self._buckets:
                b.work.wait()
                offset = 0
                for p in b.params:
                    n = p.numel()
                    avg = b.flat[offset:offset + n].view(p.shape)
                    if p.grad is None:
                        p.grad = avg.clone()
                    else:
                        p.grad.copy_(avg)
                    offset += n
        self._reset()

    def _reset(self):
        for b in self._buckets:
            b.ready.clear()
            b.flat = b.work = None
        self._next = 0
        self._unused = set()

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside; the first backward after it averages them."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def __del__(self):
        for h in getattr(self, "_handles", ()):
            try:
                h.remove()
            except Exception:
                pass


def _tensors_in(out):
    """The tensors of a forward's output: a tensor, or tuples/lists/dicts of them."""
    from ... import Tensor
    found, stack = [], [out]
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            found.append(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
    return found

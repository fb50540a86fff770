"""The rank side of tests/python/test_distributed.py: `mpirun -n P python dist_worker.py SCENARIO
[ARGS]`. Each scenario writes, on every rank, its result as JSON to $DIST_TEST_OUT/<rank>.json
(mpirun may cut long lines of the ranks' merged output) that the test reads back."""

import json
import os
import sys
import time

import numpy as np

import vkml as vk
import vkml.distributed as dist

DTYPES = {"bool": vk.bool, "int32": vk.int32, "int64": vk.int64, "float32": vk.float32,
          "float64": vk.float64, "uint8": vk.uint8, "int8": vk.int8, "int16": vk.int16,
          "float16": vk.float16, "bfloat16": vk.bfloat16}


def as_tensor(x, name):
    """rank_data's array as a vkml tensor of dtype `name` (bfloat16, which numpy lacks, from its
    float32 array, rounded by vkml's cast)."""
    t = vk.from_numpy(x.copy())
    return t.to(vk.bfloat16) if name == "bfloat16" else t


def hex_of(t):
    """The bytes of t as hex (a bfloat16 tensor widened to float32 first: exact)."""
    return (t.float() if t.dtype == vk.bfloat16 else t).numpy().tobytes().hex()


def report(**fields):
    path = os.path.join(os.environ["DIST_TEST_OUT"], f"{fields['rank']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(fields, f)
    os.replace(path + ".tmp", path)


def rank_data(rank, dtype, n):
    """What rank `rank` contributes: the test makes the same arrays to compute the expectation."""
    rng = np.random.default_rng(1000 + rank)
    if dtype == "bool":
        return rng.random(n) < 0.5
    if dtype in ("int32", "int64", "uint8", "int8", "int16"):
        return rng.integers(-50, 50, n).astype(dtype)  # uint8 wraps the negatives
    x = rng.standard_normal(n).astype("float32" if dtype == "bfloat16" else dtype)
    if n > 3:
        x[3] = np.nan if rank == 1 else x[3]  # NaN from one rank reaches every rank
    return x


def collectives():
    """Every collective on every dtype and a few sizes (none, one, not divisible by p, larger)."""
    r, p = dist.get_rank(), dist.get_world_size()
    out = {}
    for name in DTYPES:
        for n in (0, 1, 7, 1001):
            ops = ["sum", "product", "min", "max"] + (["avg"] if name.startswith("float") else [])
            for op in ops:
                t = as_tensor(rank_data(r, name, n), name)
                dist.all_reduce(t, op=getattr(dist.ReduceOp, op.upper()))
                out[f"all_reduce/{name}/{n}/{op}"] = hex_of(t)
            t = as_tensor(rank_data(r, name, n), name)
            dist.broadcast(t, src=p - 1)
            out[f"broadcast/{name}/{n}"] = hex_of(t)
            gathered = vk.zeros(n * p, dtype=DTYPES[name])
            dist.all_gather_into_tensor(gathered, as_tensor(rank_data(r, name, n), name))
            out[f"all_gather/{name}/{n}"] = hex_of(gathered)
            chunks = as_tensor(rank_data(r, name, n * p), name)
            mine = vk.zeros(n, dtype=DTYPES[name])
            dist.reduce_scatter_tensor(mine, chunks, op=dist.ReduceOp.SUM)
            out[f"reduce_scatter/{name}/{n}"] = hex_of(mine)
    report(rank=r, results=out)


def two_byte_moves():
    """broadcast and all_gather of the 2-byte dtypes (they moved 8-byte elements: the values were
    wrong and the buffers overrun)."""
    r, p = dist.get_rank(), dist.get_world_size()
    got = {}
    for name in ("float16", "bfloat16", "int16"):
        t = vk.full((3,), r + 1, dtype=DTYPES[name])
        dist.broadcast(t, src=p - 1)
        out = vk.zeros(3 * p, dtype=DTYPES[name])
        dist.all_gather_into_tensor(out, vk.full((3,), r + 1, dtype=DTYPES[name]))
        got[name] = [t.tolist(), out.tolist()]
    report(rank=r, got=got)


def list_forms():
    """all_gather into a list, reduce_scatter from a list, gather, scatter, async handles,
    objects, barrier, and a tensor on the Vulkan device when there is one."""
    r, p = dist.get_rank(), dist.get_world_size()
    got = {}
    parts = [vk.zeros(2, 3) for _ in range(p)]
    dist.all_gather(parts, vk.full((2, 3), float(r)))
    got["all_gather_list"] = [t.tolist() for t in parts]
    out = vk.zeros(3)
    dist.reduce_scatter(out, [vk.full((3,), float(10 * r + q)) for q in range(p)])
    got["reduce_scatter_list"] = out.tolist()
    target = [vk.zeros(2) for _ in range(p)] if r == 0 else None
    dist.gather(vk.full((2,), float(r)), target, dst=0)
    got["gather"] = [t.tolist() for t in target] if r == 0 else None
    mine = vk.zeros(2)
    dist.scatter(mine, [vk.full((2,), 5.0 + q) for q in range(p)] if r == 1 else None, src=1)
    got["scatter"] = mine.tolist()
    a = vk.full((4,), float(r + 1))
    work = dist.all_reduce(a, async_op=True)
    work.wait()
    got["async"] = a.tolist()
    objs = [None] * p
    dist.all_gather_object(objs, {"rank": r, "text": "x" * (r + 3)})
    got["objects"] = objs
    lst = [r, "from rank %d" % r] if r == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    got["broadcast_object_list"] = lst
    dist.barrier()
    if vk.vulkan.is_available():
        g = vk.full((5,), float(r + 1), device="vulkan")
        dist.all_reduce(g, op=dist.ReduceOp.MAX)
        got["vulkan"] = [str(g.device), g.cpu().tolist()]
    got["reduce"] = None
    t = vk.full((2,), float(r))
    dist.reduce(t, dst=0)
    got["reduce"] = t.tolist() if r == 0 else None
    report(rank=r, got=got)


def mismatch():
    """Calls that differ across ranks raise the same typed error on every rank, and the group
    stays usable (the ranks compared before moving any data)."""
    r = dist.get_rank()
    errors = []
    cases = [
        lambda: dist.all_reduce(vk.ones(2, 3) if r == 0 else vk.ones(3, 3)),
        lambda: dist.all_reduce(vk.ones(4, dtype=vk.float32 if r == 0 else vk.float64)),
        lambda: dist.broadcast(vk.ones(2), src=0) if r == 0 else dist.all_reduce(vk.ones(2)),
        lambda: dist.all_reduce(vk.ones(2), op=dist.ReduceOp.SUM if r == 0 else dist.ReduceOp.MAX),
    ]
    for case in cases:
        try:
            case()
            errors.append(None)
        except Exception as e:  # noqa: BLE001 (the test checks the type)
            errors.append([type(e).__name__, str(e)])
    t = vk.full((3,), float(r))
    dist.all_reduce(t)
    report(rank=r, errors=errors, after=t.tolist())


def local_errors():
    """Errors a rank finds alone (before anything is queued)."""
    r, p = dist.get_rank(), dist.get_world_size()
    found = {}

    def catch(name, fn):
        try:
            fn()
            found[name] = None
        except Exception as e:  # noqa: BLE001
            found[name] = [type(e).__name__, str(e)]
    catch("non_contiguous", lambda: dist.all_reduce(vk.ones(3, 4).t()))
    catch("avg_int", lambda: dist.all_reduce(vk.ones(3, dtype=vk.int64), op=dist.ReduceOp.AVG))
    catch("bad_src", lambda: dist.broadcast(vk.ones(3), src=p))
    catch("gather_size", lambda: dist.all_gather_into_tensor(vk.zeros(5), vk.ones(3)))
    catch("gather_dtype", lambda: dist.all_gather_into_tensor(vk.zeros(3 * p, dtype=vk.float64),
                                                              vk.ones(3)))
    catch("list_length", lambda: dist.all_gather([vk.zeros(2)], vk.ones(2)))
    catch("init_twice", lambda: dist.init_process_group("mpi"))
    catch("bad_op", lambda: dist.all_reduce(vk.ones(2), op="median"))
    catch("subgroup", lambda: dist.new_group([0]))
    t = vk.full((2,), 1.0)
    dist.all_reduce(t)  # still in step after all of that
    report(rank=r, found=found, after=t.tolist())


def make_model(dtype, seed):
    vk.manual_seed(seed)
    return vk.nn.Sequential(vk.nn.Linear(6, 16), vk.nn.Tanh(), vk.nn.Linear(16, 16), vk.nn.GELU(),
                            vk.nn.Linear(16, 3)).to(dtype)


def train_data(dtype):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((20, 64, 6))
    Y = rng.standard_normal((20, 64, 3))
    dtype = "float32" if dtype == "bfloat16" else dtype  # as_tensor rounds it
    return X.astype(dtype), Y.astype(dtype)


def ddp_train(dtype_name, bucket_mb, optimizer):
    """20 steps of DDP, each rank on its half of a batch of 64; the parameters at the end."""
    r, p = dist.get_rank(), dist.get_world_size()
    dtype = DTYPES[dtype_name]
    model = make_model(dtype, seed=123 + r)  # rank 0's weights reach the others at construction
    ddp = vk.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=float(bucket_mb))
    opt = (vk.optim.Adam(ddp.parameters(), lr=1e-2) if optimizer == "adam"
           else vk.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9))
    X, Y = train_data(dtype_name)
    share = 64 // p
    for step in range(20):
        xb = as_tensor(X[step, r * share:(r + 1) * share], dtype_name)
        yb = as_tensor(Y[step, r * share:(r + 1) * share], dtype_name)
        loss = vk.nn.functional.mse_loss(ddp(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    report(rank=r, buckets=len(ddp._buckets),
           params=[q.detach().to(vk.float64).numpy().tobytes().hex() for q in model.parameters()],
           shapes=[list(q.shape) for q in model.parameters()])


def ddp_features():
    """no_sync accumulation, find_unused_parameters, an unused parameter without it, buffers."""
    r, p = dist.get_rank(), dist.get_world_size()
    got = {}
    # no_sync: two micro-batches accumulated locally, then one reduction == one step on both.
    model = make_model(vk.float64, seed=5)
    ddp = vk.nn.parallel.DistributedDataParallel(model)
    X, Y = train_data("float64")
    halves = [(vk.from_numpy(X[0, (2 * r + k) * 16:(2 * r + k + 1) * 16].copy()),
               vk.from_numpy(Y[0, (2 * r + k) * 16:(2 * r + k + 1) * 16].copy())) for k in (0, 1)]
    with ddp.no_sync():
        vk.nn.functional.mse_loss(ddp(halves[0][0]), halves[0][1]).backward()
    local_after_first = [q.grad.clone() for q in model.parameters()]
    vk.nn.functional.mse_loss(ddp(halves[1][0]), halves[1][1]).backward()
    got["no_sync_grads"] = [q.grad.numpy().tobytes().hex() for q in model.parameters()]
    got["no_sync_local_first"] = [g.numpy().tobytes().hex() for g in local_after_first]

    class TwoHeads(vk.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = vk.nn.Linear(3, 2)
            self.b = vk.nn.Linear(3, 2)

        def forward(self, x, use_b):
            return self.b(x) if use_b else self.a(x)

    # find_unused_parameters: rank 0 uses head a, rank 1 head b; each head's gradient is the
    # average of the one rank that used it and a zero.
    vk.manual_seed(3)
    heads = TwoHeads().to(vk.float64)
    dh = vk.nn.parallel.DistributedDataParallel(heads, find_unused_parameters=True)
    x = vk.full((4, 3), float(r + 1), dtype=vk.float64)
    with vk.no_grad():  # an evaluation marks nothing ready and reduces nothing
        dh(x, use_b=(r == 1))
    got["grads_after_no_grad_forward"] = [q.grad for q in heads.parameters()]
    dh(x, use_b=(r == 1)).sum().backward()
    got["unused_grads"] = {n: q.grad.tolist() for n, q in heads.named_parameters()}
    # without find_unused_parameters: the next forward names the parameters that got no grad
    vk.manual_seed(3)
    heads2 = TwoHeads().to(vk.float64)
    d2 = vk.nn.parallel.DistributedDataParallel(heads2)
    d2(x, use_b=False).sum().backward()
    try:
        d2(x, use_b=False)
        got["unused_error"] = None
    except RuntimeError as e:
        got["unused_error"] = str(e)
    # buffers: BatchNorm's running statistics follow rank 0's at every forward
    bn = vk.nn.Sequential(vk.nn.Linear(3, 4), vk.nn.BatchNorm1d(4))
    dbn = vk.nn.parallel.DistributedDataParallel(bn)
    for step in range(3):
        dbn(vk.randn(8, 3) * (r + 1)).sum().backward()
    got["bn_after_train"] = bn[1].running_mean.numpy().tobytes().hex()
    dbn.eval()
    dbn(vk.randn(8, 3))  # the broadcast at this forward makes them rank 0's (eval: no update)
    got["bn_after_eval_forward"] = bn[1].running_mean.numpy().tobytes().hex()
    got["state_keys"] = list(dbn.state_dict())[:3]
    # a wrapper the program drops is freed at once (its hooks hold it weakly), so wrapping the
    # module anew leaves one wrapper reducing its gradients
    import weakref
    m3 = make_model(vk.float64, seed=9)
    dropped = weakref.ref(vk.nn.parallel.DistributedDataParallel(m3))
    again = vk.nn.parallel.DistributedDataParallel(m3)
    vk.nn.functional.mse_loss(again(halves[0][0]), halves[0][1]).backward()
    got["dropped_ddp_freed"] = dropped() is None
    sampler = vk.utils.data.DistributedSampler(list(range(10)), shuffle=False)
    got["sampler"] = list(sampler)
    report(rank=r, got=got)


def raise_on(rank_that_raises):
    """One rank raises while the other waits in a collective: the job must end, not hang."""
    r = dist.get_rank()
    t = vk.ones(4)
    dist.all_reduce(t)
    if r == int(rank_that_raises):
        raise ValueError("this rank failed on purpose")
    for _ in range(1000):
        dist.all_reduce(t)
    report(rank=r, finished=True)


def killed(rank_killed):
    import signal
    r = dist.get_rank()
    t = vk.ones(4)
    dist.all_reduce(t)
    if r == int(rank_killed):
        os.kill(os.getpid(), signal.SIGKILL)
    for _ in range(1000):
        dist.all_reduce(t)
    report(rank=r, finished=True)


def stuck(rank_stuck):
    """One rank stops calling collectives: the others' timeout fires and ends the job."""
    r = dist.get_rank()
    if r == int(rank_stuck):
        time.sleep(120)
    t = vk.ones(4)
    dist.all_reduce(t)
    report(rank=r, finished=True)


def main():
    scenario, args = sys.argv[1], sys.argv[2:]
    timeout = float(os.environ.get("DIST_TEST_TIMEOUT", "60"))
    import datetime
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=timeout))
    globals()[scenario](*args)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

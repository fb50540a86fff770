"""Calls every public function of vkml (vk.*, vk.nn.functional.*, vk.linalg.* when present) and
every Tensor method with big, non-contiguous inputs -- above the size at which the bindings release
the GIL -- then runs backward through what it got, in one thread and in two at once.

Run by tests/python/test_binding_sweep.py in a subprocess (so a crash names the call that made it:
each call is announced on stdout, flushed, before it runs). Argument lists are tried in turn until
one is accepted; typed errors (the bindings' answer to arguments that do not fit) are expected and
counted, any other outcome is a failure. The last line is a JSON summary.
"""

import json
import sys
import threading

import vkml as vk

# Above kReleaseGilElements (32K) and laid out non-contiguously.
ROWS, COLS = 192, 256


def inputs():
    vk.manual_seed(0)
    x = vk.randn(COLS, ROWS).t()                       # (192, 256) float32, transposed view
    y = vk.randn(COLS, ROWS).t()
    xd = vk.randn(COLS, ROWS, dtype=vk.float64).t()
    pos = vk.rand(COLS, ROWS).t() + 0.5                # positive: log, sqrt, pow
    idx = vk.randint(0, ROWS, (COLS, ROWS)).t()        # int64, valid along dim 0 and dim 1
    mask = x > 0
    img = vk.randn(2, 32, 32, 16).permute(0, 3, 1, 2)  # (2, 16, 32, 32) NCHW view, 32K elements
    w4 = vk.randn(8, 16, 3, 3)
    vec = vk.randn(2 * COLS)[::2]                      # (256,) strided
    idx1 = vk.randint(0, ROWS, (2 * COLS,))[::2]       # (256,) strided, valid along either dim
    target = vk.randint(0, COLS, (2 * ROWS,))[::2]     # (192,) class indices for x's rows
    prob = vk.rand(COLS, ROWS).t() * 0.9 + 0.05        # in (0, 1)
    square = vk.randn(COLS, COLS).t()                  # (256, 256)
    spd = (square @ square.t() + COLS * vk.eye(COLS)).t()  # symmetric positive-definite: cholesky
    lu, piv = vk.linalg.lu_factor(square)                  # lu_unpack, lu_solve
    cols = vk.im2col(img, 3)                           # (2, 144, 900)
    pooled, argmax = vk.max_pool2d(img, 2, return_indices=True)
    # Constants that stay without grad in the grad pass (composite ops, issue #15 item 4): the
    # in-place methods need a float self that does not require grad, as torch's do.
    xc = vk.randn(COLS, ROWS).t()
    imgc = vk.randn(16, 32, 32)
    # as_strided and its copy/scatter forms (#15) read the flat memory of a contiguous input
    flat = vk.randn(ROWS * COLS)
    # the last torch-namespace names (#15): conv_tbc's (kernel, in, out) weight for img[:, :, 0] as
    # (time 2, batch 16, channels 32), affine_grid_generator's theta and grid_sampler's grid for img,
    # and the functional RNNs' flat weights (hidden 8) over the same (2, 16, 32) sequence
    tbc = (vk.randn(2, 32, 8), vk.randn(8))
    theta = vk.randn(2, 2, 3)
    grid = vk.rand(2, 8, 8, 2) * 2 - 1
    rnn = {g: [vk.randn(g * 8, 32), vk.randn(g * 8, 8), vk.randn(g * 8), vk.randn(g * 8)] for g in (1, 3, 4)}
    h8 = vk.zeros(1, 16, 8)
    # householder_product / ormqr (#15 linalg): 8 reflectors of the tall x.t(), each tau below
    # 2 / |v|^2 so that I - tau v v^T stays bounded (a random tau makes the product overflow)
    tau8 = vk.rand(8) / 128
    return dict(tau8=tau8, tbc=tbc, theta=theta, grid=grid, rnn=rnn, h8=h8,
                x=x, y=y, xd=xd, pos=pos, idx=idx, mask=mask, img=img, w4=w4, vec=vec, idx1=idx1,
                target=target, prob=prob, square=square, cols=cols, pooled=pooled, argmax=argmax,
                one=vk.tensor(3), xc=xc, imgc=imgc, spd=spd, lu=lu, piv=piv, flat=flat)


def arg_lists(t):
    """Candidate argument lists, most common shapes first."""
    x, y, xd, pos, idx, mask, img, w4, vec = (t[k] for k in
                                              ("x", "y", "xd", "pos", "idx", "mask", "img", "w4",
                                               "vec"))
    return [
        (x,), (pos,), (x, y), (x, 2.0), (x, 1), (x, 0), (x, -1), (x, y, y), (x, y, 0.5),
        (mask, x, y), (x, mask), (x, mask, 1.0), (x, 0, idx), (x, 1, idx), (x, 0, idx, y),
        (x, x.t()), (x, vec), (x, 1, 2), (x, (ROWS * COLS,)), (x, (COLS, ROWS)), (x, [1, 0]),
        (x, 0, 1),
        (x, 0, 5, 3), (x, (1, 1, 1, 1)), (x, 64), (x, [64, 128]), (x, 0, 64),
        (img,), (img, w4), (img, 2), (img, 3, 1, 1), (img, 2, 2), (img, (3, 3)), (img, [16]),
        (xd,), (xd, xd), (idx,), (idx, ROWS), (mask,), (vec,), (vec, vec),
        ((ROWS, COLS),), (ROWS, COLS), (0, 100, (ROWS, COLS)), (ROWS * COLS,),
        ([x, y],), ([x, y], 1),
        # the argument shapes of particular functions, after the generic ones; the scalar one
        # (item, __bool__ ...) and the empty one last
        (x, 0, t["idx1"]), (x, 1, t["idx1"], y), (vec, (ROWS, COLS)), (x, (COLS,)),
        (img, None, None, None, None, True), (t["idx1"], x), (x, t["target"]),
        (t["prob"], t["prob"]), (t["cols"], (32, 32), 3), (vec, x, t["square"]),
        (0.0, 1.0, ROWS * COLS), (x, y, 1), (x, y, (COLS,)), (img, img),
        (x, (ROWS, 2 * COLS), 1, 0, 2 * COLS, 2), (t["pooled"], t["argmax"], tuple(img.shape)),
        (t["prob"], 64),  # multinomial (issue 15 item 3): non-negative weights, 2-d
        (x, {}), (x, "shape"),
        # composite ops (issue #15 item 4): addmv, addr, baddbmm, addbmm, cross, einsum,
        # index_fill, unflatten
        (x[:, 0], x, vec), (x, x[:, 0], vec), (img[0], img[0], img[0]),
        (img[0, 0], img[0], img[0]), (x[:, :3], y[:, :3]), ("ij,jk->ik", x, y.t()),
        (x, 0, t["idx1"], 1.0), (x, 1, (16, 16)),
        (t["xc"],), (t["xc"], t["xc"]), (t["xc"], t["xc"], 0.5), (t["xc"], t["xc"], t["xc"]),
        (t["xc"], mask, 1.0), (t["xc"], 0, t["idx1"], 1.0), (t["xc"][:, 0], t["xc"], t["xc"][0]),
        (t["xc"], t["xc"][:, 0], t["xc"][0]), (t["imgc"], t["imgc"], t["imgc"]),
        (t["imgc"][0], t["imgc"], t["imgc"]),
        (t["idx1"],),  # bincount: a 1-D non-negative integer tensor (sortscan)
        # nn breadth (issue #16): cosine_embedding_loss, conv1d, bilinear
        (x, y, x[:, 0]), (img[:, :, 0], w4[:, :, 0]), (x, y, t["square"].unsqueeze(0)),
        # conv/pool/embedding breadth (issue #16): conv_transpose1d/2d (weight (in, out, k...)), conv3d
        # and embedding_bag (2-D indices: one bag per row), conv_transpose3d, embedding_renorm_
        (img, w4.transpose(0, 1)), (img[:, :, 0], w4[:, :, 0].transpose(0, 1)), (img.unsqueeze(2), w4.unsqueeze(2)),
        (idx, x), (img.unsqueeze(2), w4.transpose(0, 1).unsqueeze(2)), (t["xc"], t["idx1"], 1.0, 2.0),
        # shape/index breadth (#15): scatter_reduce, index_reduce, index_put, masked_scatter,
        # put, select_scatter (and their in-place forms, on xc), promote_types
        (x, 0, idx, y, "amax"), (x, 0, t["idx1"], t["square"], "amax"), (x, (t["idx1"],), 1.0),
        (x, mask, y), (x, idx, y), (x, vec, 0, 0), (t["xc"], 0, idx, y, "amax"),
        (t["xc"], 0, t["idx1"], t["square"], "amax"), (t["xc"], (t["idx1"],), 1.0),
        (t["xc"], mask, y), (t["xc"], idx, y), (vk.float32, vk.int64),
        # ... and with constant values, for the in-place forms in the grad pass
        (t["xc"], 0, idx, t["xc"]), (t["xc"], 0, idx, t["xc"], "amax"),
        (t["xc"], 1, t["idx1"], t["xc"]), (t["xc"], 1, t["idx1"], t["xc"], "amax"),
        (t["xc"], mask, t["xc"]), (t["xc"], idx, t["xc"]), (t["xc"], 0, 1), (t["xc"], 0),
        # torch-namespace nn aliases (#15): torch.dropout(input, p, train) and its family,
        # torch.embedding(weight, indices), F.max_unpool2d of max_pool2d's indices
        (x, 0.5, True), (x, idx), (t["pooled"], t["argmax"], 2),
        # random fills (#15): geometric_(p) wants p in (0, 1), on a tensor that does not require grad
        (t["xc"], 0.5),
        (t["spd"],),  # cholesky (#15 linalg): a symmetric positive-definite matrix
        # lu_unpack(LU, pivots), lu_solve(B, LU, pivots), linalg.lu_solve(LU, pivots, B)
        (t["lu"], t["piv"]), (x.t(), t["lu"], t["piv"]), (t["lu"], t["piv"], x.t()),
        # linalg.cond(A, p), linalg.tensorinv(A, ind), linalg.multi_dot([A, B])
        (t["square"], "fro"), (t["square"], 1), ([x, y.t()],),
        # householder_product(A, tau) / orgqr and ormqr(A, tau, C): 8 reflectors of the tall x.t()
        (x.t(), t["tau8"]), (x.t(), t["tau8"], x.t()),
        # porting breadth (#15): empty_strided(size, stride), empty_permuted(size, physical_layout)
        # and Tensor.new_empty_strided: a size and a same-length stride (or permutation)
        ((ROWS, COLS), (1, 0)), (x, (ROWS, COLS), (1, 0)),
        # ... and mvlgamma_(p): an int p >= 1, on a tensor that does not require grad
        (t["xc"], 2),
        # the rest of torch.nn (#16): F.linear_cross_entropy(input, linear_weight, target), x's rows through
        # a (256, 256) weight onto target's classes
        (x, t["square"], t["target"]),
        # the rest of the torch namespace (#15): as_strided(input, size, stride) of a contiguous
        # input and as_strided_scatter(input, src, size, stride)
        (t["flat"], (ROWS, COLS), (1, ROWS)), (t["flat"], x, (ROWS, COLS), (1, ROWS)),
        # the last torch-namespace names (#15): conv_tbc, convolution (a 2-D one), affine_grid_generator,
        # grid_sampler (bilinear, zeros), rnn_tanh/rnn_relu, gru and lstm over flat weight lists
        (img[:, :, 0], *t["tbc"]), (img, w4, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
        (t["theta"], [2, 16, 32, 32], False), (img, t["grid"], 0, 0, False),
        (img[:, :, 0], t["h8"], t["rnn"][1], True, 1, 0.0, False, False, False),
        (img[:, :, 0], t["h8"], t["rnn"][3], True, 1, 0.0, False, False, False),
        (img[:, :, 0], [t["h8"], t["h8"]], t["rnn"][4], True, 1, 0.0, False, False, False),
        # F.grouped_mm (#15): two 3-D operands are a batched product without offs
        (img[0], img[0].transpose(1, 2)),
        ("add",), (t["one"],), ("cpu",), (),
    ]


# Functions that leave the process or the session changed for the calls after them, or write
# files: exercised by their own tests.
SKIP = {"save", "load", "set_num_threads", "set_default_dtype", "manual_seed", "seed",
        "set_printoptions", "set_grad_enabled", "set_rng_state", "set_anomaly_enabled",
        "_set_grad_enabled", "_set_anomaly_enabled", "_set_package_dir", "detect_anomaly",
        "set_flush_denormal", "use_deterministic_algorithms", "set_deterministic_debug_mode",
        "set_num_interop_threads", "set_warn_always", "set_default_tensor_type",
        # autocast state (#19): enabled, it would change the dtypes of every call after it;
        # tests/python/test_autocast.py exercises them
        "set_autocast_enabled", "set_autocast_cpu_enabled", "set_autocast_dtype",
        "set_autocast_cpu_dtype", "set_autocast_cache_enabled", "autocast_increment_nesting",
        "autocast_decrement_nesting",
        # composite ops (issue #15 item 4): kron(x, y) of two (192, 256) inputs is a 2.4e9-element
        # result (as torch's); tests/python/test_composite_ops.py exercises it
        "kron",
        # shape/index breadth (#15): diagflat of a (192, 256) input is a 49152 x 49152 result
        # (as torch's); tests/python/test_shape_index_breadth.py exercises it
        "diagflat",
        # compile takes a callable (the argument lists have none) and warns once per process;
        # tests/python/test_compile_passthrough.py exercises it
        "compile"}

EXPECTED = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError, KeyError,
            AttributeError, OverflowError, ZeroDivisionError, MemoryError)


def functions():
    """(qualified name, callable) of every public function the sweep calls."""
    found = []
    mods = [("vk", vk), ("F", vk.nn.functional)]
    if hasattr(vk, "linalg"):
        mods.append(("linalg", vk.linalg))
    mods.append(("special", vk.special))  # torch.special's composites (#15)
    for prefix, mod in mods:
        for name in sorted(dir(mod)):
            if name.startswith("_") or name in SKIP:  # private helpers of the package
                continue
            f = getattr(mod, name)
            if callable(f) and not isinstance(f, type) and not isinstance(f, vk.dtype):
                found.append((f"{prefix}.{name}", f))
    for name in sorted(dir(vk.Tensor)):
        if name in SKIP or name in ("__init__", "__new__", "__setattr__", "__delattr__",
                                    "__init_subclass__", "__subclasshook__", "__class__",
                                    "__reduce__", "__reduce_ex__", "__getstate__",
                                    "__setstate__", "__dir__", "__sizeof__", "register_hook",
                                    "backward"):
            continue
        attr = getattr(vk.Tensor, name)
        if callable(attr):
            found.append((f"Tensor.{name}", name))
    return found


def call(fn, t, args, tensor_method, inplace):
    if tensor_method:
        self_ = args[0].clone() if inplace and isinstance(args[0], vk.Tensor) else args[0]
        if not isinstance(self_, vk.Tensor):
            raise TypeError("not a tensor")
        return getattr(self_, fn)(*args[1:])
    if inplace and args and isinstance(args[0], vk.Tensor):  # F.relu_ & co. (nn breadth, #16)
        args = (args[0].clone(),) + tuple(args[1:])
    return fn(*args)


def backward_through(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if isinstance(o, vk.Tensor) and o.requires_grad and o.is_floating_point():
            o.sum().backward()
            return True
    return False


# Methods that write into self: the sweep calls them on a copy, so the shared inputs stay as made.
def writes_self(name):
    return (name.endswith("_") and not name.startswith("__")) or name in (
        "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
        "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__imatmul__",
        "module_load")  # (#15) copies its argument into self, as load_state_dict wants


def sweep(names, log, grad, t=None):
    """One pass over `names`; returns {name: outcome}."""
    t = dict(t) if t is not None else inputs()
    if grad:
        for k in ("x", "y", "xd", "img", "w4", "vec", "prob", "square", "cols", "pooled"):
            t[k] = t[k].detach().requires_grad_()
        t["pos"] = (t["pos"].detach() + 0).requires_grad_()
    outcome = {}
    for qual, fn in names:
        tensor_method = isinstance(fn, str)
        inplace = writes_self(fn if tensor_method else qual.split(".")[-1])
        outcome[qual] = "rejected"
        for i, args in enumerate(arg_lists(t)):
            if log:
                print(f"CALL {qual} #{i} grad={grad}", flush=True)
            try:
                with vk.enable_grad() if grad else vk.no_grad():
                    out = call(fn, t, args, tensor_method, inplace)
                if grad:
                    backward_through(out)
                outcome[qual] = "ok"
                break
            except EXPECTED:
                continue
    return outcome


def main(part=0, parts=1):
    # `binding_sweep.py PART PARTS` sweeps every PARTS-th name from the PART-th (the test runs the
    # parts side by side; each part makes the same inputs, and no call changes them).
    names = functions()[part::parts]
    single = sweep(names, log=True, grad=False)
    with_grad = sweep(names, log=True, grad=True)
    # Two threads at once over the same inputs (the bindings release the GIL for these sizes).
    methods = [(q, f) for q, f in names if isinstance(f, str)]
    shared = inputs()
    errors = []

    def worker():
        try:
            sweep(methods, log=False, grad=False, t=shared)
        except BaseException as e:  # noqa: BLE001 -- reported in the summary
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    summary = {
        "called": len(names),
        "ok": sorted(q for q, o in single.items() if o == "ok"),
        "rejected": sorted(q for q, o in single.items()
                           if o != "ok" and with_grad.get(q) != "ok"),
        "ok_with_grad": sorted(q for q, o in with_grad.items() if o == "ok"),
        "thread_errors": errors,
    }
    print("SUMMARY " + json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*map(int, sys.argv[1:3])))

"""Everyday ops side by side with torch: the time of each op in vkml and in torch, alternating in
one process, and the ratio. Not part of `make bench` (it has no targets); a map of where vkml is
slow, to choose what to speed up next.

    PYTHONPATH=build/python python bench/op_sweep.py [--threads 1] [--backward] [name-filter ...]

--backward times the grad.* rows instead: each op's forward and backward together (the input's
gradient from a fixed output gradient), as a training step runs it.

Shapes: 1M floats for the element-wise rows, (1024, 1024) for reductions and rows, small batches
for the nn rows. Times are the best of 2 x 7 calls (ms)."""

import argparse
import sys
import time

import numpy as np
import torch

import vkml

N = 1 << 20
RNG = np.random.default_rng(0)
X = RNG.uniform(-0.9, 0.9, N).astype(np.float32)    # in every function's domain
P = RNG.uniform(0.1, 3.0, N).astype(np.float32)     # positive
M = RNG.standard_normal((1024, 1024)).astype(np.float32)
IDX = RNG.integers(0, 1024, N).astype(np.int64)
VOCAB = RNG.uniform(0.0, 1.0, (4, 50257)).astype(np.float32)  # next-token weights, GPT-2's vocabulary


def t(lib, a):
    return torch.from_numpy(a.copy()) if lib is torch else vkml.tensor(a)


def unary(name, a=X):
    return lambda L: (lambda x: lambda: getattr(L, name)(x))(t(L, a))


def on(a, f, *more):
    """f(L, x, *more): the op on tensors made from a (and more) in library L."""
    return lambda L: (lambda xs: lambda: f(L, *xs))([t(L, v) for v in (a,) + more])


CASES = {
    **{f"unary.{n}": unary(n) for n in ("abs", "exp", "expm1", "log1p", "sin", "tanh", "sigmoid", "erf",
                                        "erfinv", "sinh", "cosh", "atanh", "asinh", "exp2", "floor", "ceil",
                                        "trunc", "frac", "round", "sign")},
    **{f"unary.{n}": unary(n, P) for n in ("log", "log2", "log10", "sqrt", "rsqrt", "lgamma", "digamma",
                                           "acosh")},
    "pow.scalar": on(P, lambda L, x: L.pow(x, 1.7)),
    "pow.tensor": on(P, lambda L, x, y: L.pow(x, y), X),
    "remainder": on(P, lambda L, x, y: L.remainder(x, y), P + 1),
    "lerp": on(X, lambda L, x, y: L.lerp(x, y, 0.3), P),
    "addcmul": on(X, lambda L, x, y: L.addcmul(x, x, y, value=0.5), P),
    "where": on(X, lambda L, x, y: L.where(x > 0, x, y), P),
    "silu": on(X, lambda L, x: L.nn.functional.silu(x)),
    "mish": on(X, lambda L, x: L.nn.functional.mish(x)),
    "softplus": on(X, lambda L, x: L.nn.functional.softplus(x)),
    "sum.all": on(M, lambda L, x: x.sum()),
    "sum.rows": on(M, lambda L, x: x.sum(1)),
    "sum.cols": on(M, lambda L, x: x.sum(0)),
    "sum.rows64": on(M.reshape(16384, 64), lambda L, x: x.sum(1)),
    "amax.rows": on(M, lambda L, x: x.amax(1)),
    "amax.rows64": on(M.reshape(16384, 64), lambda L, x: x.amax(1)),
    "argmax.rows": on(M, lambda L, x: x.argmax(1)),
    "max.rows": on(M, lambda L, x: x.max(1)),
    "norm": on(M, lambda L, x: x.norm()),
    "var.rows": on(M, lambda L, x: x.var(1)),
    "logsumexp.rows": on(M, lambda L, x: L.logsumexp(x, 1)),
    "cumsum.rows": on(M, lambda L, x: x.cumsum(1)),
    "cumsum.cols": on(M, lambda L, x: x.cumsum(0)),
    "sort.rows": on(M, lambda L, x: x.sort(1)),
    "topk.rows": on(M, lambda L, x: x.topk(5, 1)),
    "transpose.copy": on(M, lambda L, x: x.t().contiguous()),
    "cat": on(M, lambda L, x: L.cat([x, x], 1)),
    "index_select.rows": on(M, lambda L, x, i: x.index_select(0, i), IDX[:1024]),
    "index_select.last": on(M, lambda L, x, i: x.index_select(1, i), IDX[:512]),
    "gather.rows": on(M, lambda L, x, i: x.gather(1, i), IDX.reshape(1024, 1024)),
    "scatter_add.rows": on(M, lambda L, x, i: L.zeros(1024, 1024).scatter_add(1, i, x), IDX.reshape(1024, 1024)),
    "mask_select": on(X, lambda L, x: x[x > 0]),
    "tril": on(M, lambda L, x: L.tril(x)),
    "flip": on(M, lambda L, x: L.flip(x, [1])),
    "arange": lambda L: lambda: L.arange(N),
    "randn": lambda L: lambda: L.randn(1024, 1024),
    "randint": lambda L: lambda: L.randint(0, 10, (1024, 1024)),
    "multinomial.vocab": on(VOCAB, lambda L, p: L.multinomial(p, 1)),  # sampling a token: no replacement
    "standard_gamma": on(P, lambda L, a: L._standard_gamma(a)),  # Gamma / Beta / Dirichlet draws
    "standard_gamma_grad": on(P, lambda L, a, x: L._standard_gamma_grad(a, x), P * 1.1),  # their gradient
    "sort.vocab": on(VOCAB, lambda L, p: L.sort(p, -1, descending=True)),  # top-p sampling's sort
    "interpolate.nearest": on(M.reshape(16, 1, 256, 256)[:4], lambda L, x: L.nn.functional.interpolate(x, scale_factor=2)),
    "interpolate.bilinear": on(M.reshape(16, 1, 256, 256)[:4],
                               lambda L, x: L.nn.functional.interpolate(x, scale_factor=2, mode="bilinear")),
    "adaptive_avg_pool.1x1": on(M.reshape(16, 64, 32, 32), lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 1)),
    "max_pool2d": on(M.reshape(16, 4, 128, 128), lambda L, x: L.nn.functional.max_pool2d(x, 2)),
    "group_norm": on(M.reshape(16, 64, 32, 32), lambda L, x: L.nn.functional.group_norm(x, 8)),
    "smooth_l1_loss": on(X, lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y), P),
    "mse_loss": on(X, lambda L, x, y: L.nn.functional.mse_loss(x, y), P),
    "cdist": on(M[:256, :64], lambda L, x: L.cdist(x, x)),
    "one_hot": on(IDX[:65536] % 100, lambda L, i: L.nn.functional.one_hot(i, 100)),
}


def grad(a, f, *more):
    """Forward and backward of f(L, x, *more) with respect to x (a float array; more are passed as
    they are made), the output's gradient a fixed tensor of its shape: one training step's work."""
    def make(L):
        x = t(L, a).requires_grad_()
        rest = [t(L, v) for v in more]
        g = L.ones_like(f(L, x, *rest)) * 0.5

        def step():
            x.grad = None
            f(L, x, *rest).backward(g)
        return step
    return make


G = lambda L: L.nn.functional  # noqa: E731
IMG = M.reshape(16, 64, 32, 32)
SEQ = M.reshape(64, 128, 128)

GRAD_CASES = {
    **{f"grad.{n}": grad(X, (lambda n: lambda L, x: getattr(L, n)(x))(n)) for n in
       ("exp", "tanh", "sigmoid", "sin", "abs", "erf", "atan")},
    **{f"grad.{n}": grad(P, (lambda n: lambda L, x: getattr(L, n)(x))(n)) for n in ("log", "sqrt", "rsqrt")},
    "grad.gelu": grad(X, lambda L, x: G(L).gelu(x)),
    "grad.silu": grad(X, lambda L, x: G(L).silu(x)),
    "grad.relu": grad(X, lambda L, x: G(L).relu(x)),
    "grad.leaky_relu": grad(X, lambda L, x: G(L).leaky_relu(x, 0.1)),
    "grad.elu": grad(X, lambda L, x: G(L).elu(x)),
    "grad.softplus": grad(X, lambda L, x: G(L).softplus(x)),
    "grad.clamp": grad(X, lambda L, x: x.clamp(-0.5, 0.5)),
    "grad.pow.scalar": grad(P, lambda L, x: x ** 1.7),
    "grad.square": grad(X, lambda L, x: x ** 2),
    "grad.mul.bcast": grad(M, lambda L, x, y: x * y, M[0]),
    "grad.div": grad(M, lambda L, x, y: y / x, M + 5),
    "grad.add.bcast_rhs": grad(M[0], lambda L, x, y: y + x, M),
    "grad.where": grad(X, lambda L, x: L.where(x > 0, x, x * 0.1)),
    "grad.masked_fill": grad(M, lambda L, x: x.masked_fill(x > 1, 0.0)),
    "grad.sum.rows": grad(M, lambda L, x: x.sum(1)),
    "grad.mean.cols": grad(M, lambda L, x: x.mean(0)),
    "grad.sum.rows64": grad(M.reshape(16384, 64), lambda L, x: x.sum(1)),
    "grad.amax.rows": grad(M, lambda L, x: x.amax(1)),
    "grad.max.rows": grad(M, lambda L, x: x.max(1)[0]),
    "grad.var.rows": grad(M, lambda L, x: x.var(1)),
    "grad.norm": grad(M, lambda L, x: x.norm().reshape(1)),
    "grad.logsumexp.rows": grad(M, lambda L, x: L.logsumexp(x, 1)),
    "grad.softmax": grad(M, lambda L, x: x.softmax(1)),
    "grad.log_softmax": grad(M, lambda L, x: x.log_softmax(1)),
    "grad.softmax.rows64": grad(M.reshape(16384, 64), lambda L, x: x.softmax(1)),
    "grad.layer_norm": grad(M, lambda L, x: G(L).layer_norm(x, (1024,))),
    "grad.layer_norm.64": grad(M.reshape(16384, 64), lambda L, x: G(L).layer_norm(x, (64,))),
    "grad.cumsum.rows": grad(M, lambda L, x: x.cumsum(1)),
    "grad.sort.rows": grad(M, lambda L, x: x.sort(1)[0]),
    "grad.topk.rows": grad(M, lambda L, x: x.topk(5, 1)[0]),
    "grad.transpose.copy": grad(M, lambda L, x: x.t().contiguous()),
    "grad.slice.step": grad(M, lambda L, x: x[:, ::2]),
    "grad.cat": grad(M, lambda L, x: L.cat([x, x], 1)),
    "grad.stack": grad(M, lambda L, x: L.stack([x, x], 0)),
    "grad.chunk": grad(M, lambda L, x: x.chunk(4, 1)[1]),
    "grad.flip": grad(M, lambda L, x: L.flip(x, [1])),
    "grad.roll": grad(M, lambda L, x: L.roll(x, 3, 1)),
    "grad.pad": grad(IMG, lambda L, x: G(L).pad(x, (1, 1, 1, 1))),
    "grad.repeat": grad(M[:256], lambda L, x: x.repeat(2, 2)),
    "grad.expand": grad(M[:1], lambda L, x: x.expand(1024, 1024) * 1.0),
    "grad.index_select.rows": grad(M, lambda L, x, i: x.index_select(0, i), IDX[:1024]),
    "grad.gather.rows": grad(M, lambda L, x, i: x.gather(1, i), IDX.reshape(1024, 1024)),
    "grad.index.rows": grad(M, lambda L, x, i: x[i], IDX[:1024]),
    "grad.embedding": grad(M, lambda L, x, i: G(L).embedding(i, x), IDX[:8192].reshape(64, 128)),
    "grad.mask_select": grad(X, lambda L, x: x[x > 0]),
    "grad.tril": grad(M, lambda L, x: L.tril(x)),
    "grad.matmul": grad(M[:256, :512], lambda L, x, w: x @ w, M[:512, :256]),
    "grad.bmm": grad(SEQ[:16], lambda L, x, w: x @ w, SEQ[16:32]),
    "grad.linear": grad(M[:256], lambda L, x, w, b: G(L).linear(x, w, b), M[:512], M[0, :512]),
    "grad.conv1d": grad(M.reshape(16, 64, 1024)[:, :, :256], lambda L, x, w: G(L).conv1d(x, w, padding=1),
                        M[:64].reshape(64, 64, 16)[:, :, :3].copy()),
    "grad.conv_transpose2d": grad(IMG[:, :, :16, :16].copy(), lambda L, x, w: G(L).conv_transpose2d(x, w, stride=2),
                                  M[:64, :32 * 4].reshape(64, 32, 2, 2).copy()),
    "grad.max_pool2d": grad(IMG, lambda L, x: G(L).max_pool2d(x, 2)),
    "grad.avg_pool2d": grad(IMG, lambda L, x: G(L).avg_pool2d(x, 2)),
    "grad.adaptive_avg_pool.1x1": grad(IMG, lambda L, x: G(L).adaptive_avg_pool2d(x, 1)),
    "grad.batch_norm": grad(IMG, lambda L, x: G(L).batch_norm(x, None, None, training=True)),
    "grad.group_norm": grad(IMG, lambda L, x: G(L).group_norm(x, 8)),
    "grad.interpolate.nearest": grad(IMG[:4], lambda L, x: G(L).interpolate(x, scale_factor=2)),
    "grad.interpolate.bilinear": grad(IMG[:4], lambda L, x: G(L).interpolate(x, scale_factor=2, mode="bilinear")),
    "grad.cross_entropy": grad(M[:, :100].copy(), lambda L, x, y: G(L).cross_entropy(x, y).reshape(1),
                               IDX[:1024] % 100),
    "grad.nll_loss": grad(M[:, :100].copy(), lambda L, x, y: G(L).nll_loss(x, y).reshape(1), IDX[:1024] % 100),
    "grad.bce_logits": grad(X, lambda L, x, y: G(L).binary_cross_entropy_with_logits(x, y).reshape(1),
                            (X > 0).astype(np.float32)),
    "grad.mse_loss": grad(X, lambda L, x, y: G(L).mse_loss(x, y).reshape(1), P),
    "grad.l1_loss": grad(X, lambda L, x, y: G(L).l1_loss(x, y).reshape(1), P),
    "grad.smooth_l1_loss": grad(X, lambda L, x, y: G(L).smooth_l1_loss(x, y).reshape(1), P),
    "grad.cdist": grad(M[:256, :64], lambda L, x: L.cdist(x, x)),
    "grad.sdpa": grad(SEQ[:48].reshape(4, 12, 128, 128)[..., :64].copy(),
                      lambda L, q: G(L).scaled_dot_product_attention(q, q, q, is_causal=True)),
}


def best(f, calls=7):
    f()
    out = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        f()
        out = min(out, time.perf_counter() - start)
    return out * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backward", action="store_true",
                    help="the grad.* rows: forward and backward of the op (a training step's work)")
    ap.add_argument("filters", nargs="*", help="run the rows whose name contains one of these")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    vkml.set_num_threads(args.threads)
    rows = []
    for name, make in (GRAD_CASES if args.backward else CASES).items():
        if args.filters and not any(f in name for f in args.filters):
            continue
        fv, ft = make(vkml), make(torch)
        tv = tt = float("inf")
        for _ in range(2):  # alternating, as compare.py
            tv, tt = min(tv, best(fv)), min(tt, best(ft))
        rows.append((tv / tt, name, tv, tt))
    print(f"{'op':24s} {'vkml ms':>9s} {'torch ms':>9s} {'vkml/torch':>10s}")
    for ratio, name, tv, tt in sorted(rows, reverse=True):
        print(f"{name:24s} {tv:9.3f} {tt:9.3f} {ratio:10.2f}")


if __name__ == "__main__":
    sys.exit(main())

"""bench/peers.py's JAX ports of the train.* models and kernels."""

import math

import compare as C  # the vkml/torch builders (matmul, eltwise sizes)
from peer_common import CLIP, GPT_CFG, NotApplicable, cycle, group_of, need, torch_spec, _rng

# ----------------------------------------------------------------------------------------------------------
# JAX: pure functions over a parameter tree, torch's default initialisation ranges.
# ----------------------------------------------------------------------------------------------------------


def _jax():
    need("jax")
    import jax
    import jax.numpy as jnp
    return jax, jnp


class JxInit:
    def __init__(self, np):
        self.np, self.rng = np, np.random.default_rng(1)

    def u(self, shape, fan_in):
        b = 1.0 / math.sqrt(fan_in)
        return self.rng.uniform(-b, b, shape).astype(self.np.float32)

    def linear(self, i, o, bias=True):
        p = {"w": self.u((i, o), i)}
        if bias:
            p["b"] = self.u((o,), i)
        return p

    def conv(self, cin, cout, k, bias=True):
        p = {"w": self.u((cout, cin, k, k), cin * k * k)}
        if bias:
            p["b"] = self.u((cout,), cin * k * k)
        return p

    def norm(self, c):  # BatchNorm / LayerNorm affine parameters
        return {"g": self.np.ones(c, self.np.float32), "b": self.np.zeros(c, self.np.float32)}

    def emb(self, n, d):
        return self.rng.standard_normal((n, d)).astype(self.np.float32)


def jx_linear(p, x):
    y = x @ p["w"]
    return y + p["b"] if "b" in p else y


def jx_conv(p, x, stride=1, pad=0):
    jax, _ = _jax()
    y = jax.lax.conv_general_dilated(x, p["w"], (stride, stride), [(pad, pad), (pad, pad)],
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + p["b"][None, :, None, None] if "b" in p else y


def jx_bn(p, s, x):
    """BatchNorm2d in training mode: batch statistics, and the running ones updated as torch does."""
    jax, jnp = _jax()
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    y = (x - mean[None, :, None, None]) * jax.lax.rsqrt(var + 1e-5)[None, :, None, None]
    n = x.size // x.shape[1]
    new = {"mean": 0.9 * s["mean"] + 0.1 * mean, "var": 0.9 * s["var"] + 0.1 * var * n / (n - 1)}
    return y * p["g"][None, :, None, None] + p["b"][None, :, None, None], new


def jx_bn_state(np, c):
    return {"mean": np.zeros(c, np.float32), "var": np.ones(c, np.float32)}


def jx_maxpool(x, k, s, pad=0):
    jax, jnp = _jax()
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, k, k), (1, 1, s, s),
                                 ((0, 0), (0, 0), (pad, pad), (pad, pad)))


def jx_ln(p, x):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / (var + 1e-5) ** 0.5 * p["g"] + p["b"]


def jx_dropout(key, x, rate):
    jax, jnp = _jax()
    return jnp.where(jax.random.bernoulli(key, 1.0 - rate, x.shape), x / (1.0 - rate), 0.0)


def jx_mlp(np):
    I = JxInit(np)
    params = {"l1": I.linear(64, 256), "l2": I.linear(256, 256), "l3": I.linear(256, 10)}

    def apply(p, s, x, key):
        jax, _ = _jax()
        h = jax.nn.relu(jx_linear(p["l1"], x))
        return jx_linear(p["l3"], jax.nn.relu(jx_linear(p["l2"], h))), s
    return params, {}, apply


def jx_cnn(np):
    I = JxInit(np)
    params = {"c1": I.conv(1, 32, 3), "bn1": I.norm(32), "c2": I.conv(32, 64, 3), "bn2": I.norm(64),
              "fc": I.linear(64 * 4 * 4, 10)}
    state = {"bn1": jx_bn_state(np, 32), "bn2": jx_bn_state(np, 64)}

    def apply(p, s, x, key):
        jax, _ = _jax()
        h, s1 = jx_bn(p["bn1"], s["bn1"], jx_conv(p["c1"], x, pad=1))
        h = jx_maxpool(jax.nn.relu(h), 2, 2)
        h, s2 = jx_bn(p["bn2"], s["bn2"], jx_conv(p["c2"], h, pad=1))
        h = jax.nn.relu(h).reshape(h.shape[0], -1)
        return jx_linear(p["fc"], h), {"bn1": s1, "bn2": s2}
    return params, state, apply


def jx_gpt(np, vocab, context, d, layers, heads):
    I = JxInit(np)
    blocks = [{"ln1": I.norm(d), "qkv": I.linear(d, 3 * d), "proj": I.linear(d, d), "ln2": I.norm(d),
               "fc1": I.linear(d, 4 * d), "fc2": I.linear(4 * d, d)} for _ in range(layers)]
    params = {"tok": I.emb(vocab, d), "pos": I.emb(context, d), "blocks": blocks, "ln_f": I.norm(d),
              "head": I.linear(d, vocab, bias=False)}

    def attn(b, x):
        jax, _ = _jax()
        B, T, C = x.shape
        qkv = jx_linear(b["qkv"], x).reshape(B, T, 3, heads, C // heads)  # (B, T, heads, hd) each
        y = jax.nn.dot_product_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], is_causal=True)
        return jx_linear(b["proj"], y.reshape(B, T, C))

    def apply(p, s, idx, key):
        jax, _ = _jax()
        x = p["tok"][idx] + p["pos"][: idx.shape[1]]
        for b in p["blocks"]:
            x = x + attn(b, jx_ln(b["ln1"], x))
            h = jax.nn.gelu(jx_linear(b["fc1"], jx_ln(b["ln2"], x)), approximate=False)  # nn.GELU(): erf
            x = x + jx_linear(b["fc2"], h)
        return jx_linear(p["head"], jx_ln(p["ln_f"], x)), s
    return params, {}, apply


def jx_mnist(np):
    I = JxInit(np)
    params = {"c1": I.conv(1, 32, 3), "c2": I.conv(32, 64, 3), "fc1": I.linear(9216, 128),
              "fc2": I.linear(128, 10)}

    def apply(p, s, x, key):
        jax, _ = _jax()
        k1, k2 = jax.random.split(key)
        h = jax.nn.relu(jx_conv(p["c2"], jax.nn.relu(jx_conv(p["c1"], x))))
        h = jx_dropout(k1, jx_maxpool(h, 2, 2), 0.25).reshape(x.shape[0], -1)
        h = jx_dropout(k2, jax.nn.relu(jx_linear(p["fc1"], h)), 0.5)
        return jax.nn.log_softmax(jx_linear(p["fc2"], h), axis=1), s
    return params, {}, apply


def jx_resnet18(np, classes=1000):
    I = JxInit(np)
    params = {"stem": I.conv(3, 64, 7, bias=False), "bn": I.norm(64), "fc": I.linear(512, classes)}
    state = {"bn": jx_bn_state(np, 64)}
    plan = []  # (name, cin, cout, stride)
    for i, (cin, cout, stride) in enumerate(((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2))):
        plan += [(f"s{i}b0", cin, cout, stride), (f"s{i}b1", cout, cout, 1)]
    for name, cin, cout, stride in plan:
        params[name] = {"c1": I.conv(cin, cout, 3, False), "bn1": I.norm(cout),
                        "c2": I.conv(cout, cout, 3, False), "bn2": I.norm(cout)}
        state[name] = {"bn1": jx_bn_state(np, cout), "bn2": jx_bn_state(np, cout)}
        if stride != 1 or cin != cout:
            params[name].update(dc=I.conv(cin, cout, 1, False), dbn=I.norm(cout))
            state[name]["dbn"] = jx_bn_state(np, cout)

    def block(p, s, x, stride):
        jax, _ = _jax()
        ns = {}
        h, ns["bn1"] = jx_bn(p["bn1"], s["bn1"], jx_conv(p["c1"], x, stride, 1))
        h, ns["bn2"] = jx_bn(p["bn2"], s["bn2"], jx_conv(p["c2"], jax.nn.relu(h), 1, 1))
        if "dc" in p:
            x, ns["dbn"] = jx_bn(p["dbn"], s["dbn"], jx_conv(p["dc"], x, stride))
        return jax.nn.relu(h + x), ns

    def apply(p, s, x, key):
        jax, _ = _jax()
        ns = {}
        h, ns["bn"] = jx_bn(p["bn"], s["bn"], jx_conv(p["stem"], x, 2, 3))
        h = jx_maxpool(jax.nn.relu(h), 3, 2, 1)
        for name, _, _, stride in plan:
            h, ns[name] = block(p[name], s[name], h, stride)
        return jx_linear(p["fc"], h.mean((2, 3))), ns
    return params, state, apply


def jx_lstm(np, vocab=64, d=64, hidden=128):
    I = JxInit(np)
    params = {"emb": I.emb(vocab, d), "w_ih": I.u((d, 4 * hidden), hidden), "w_hh": I.u((hidden, 4 * hidden), hidden),
              "b_ih": I.u((4 * hidden,), hidden), "b_hh": I.u((4 * hidden,), hidden), "head": I.linear(hidden, vocab)}

    def apply(p, s, idx, key):  # (T, B) ids -> (T * B, vocab); torch's gate order i, f, g, o
        jax, jnp = _jax()
        xs = p["emb"][idx] @ p["w_ih"] + p["b_ih"]  # the input half of every gate, all steps at once
        B = idx.shape[1]

        def cell(hc, xg):
            h, c = hc
            i, f, g, o = jnp.split(xg + h @ p["w_hh"] + p["b_hh"], 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        zero = jnp.zeros((B, hidden), xs.dtype)
        _, out = jax.lax.scan(cell, (zero, zero), xs)
        return jx_linear(p["head"], out).reshape(-1, vocab), s
    return params, {}, apply


JX_MODELS = {"mlp": jx_mlp, "cnn": jx_cnn, "mnist_net": jx_mnist, "resnet18": jx_resnet18, "lstm": jx_lstm,
             "transformer": lambda np: jx_gpt(np, **GPT_CFG["transformer"]),
             "gpt_small": lambda np: jx_gpt(np, **GPT_CFG["gpt_small"])}


def jx_optimizer(name, groups, params):
    """(state, update): torch.optim's SGD / Adam / AdamW / Adadelta update rules, over a tree."""
    jax, jnp = _jax()
    tm, g0 = jax.tree.map, groups[0]
    wd = tm(lambda p: group_of(p.ndim, groups)["weight_decay"], params)
    zeros = lambda: tm(jnp.zeros_like, params)  # noqa: E731
    if name == "SGD":
        lr, mom = g0["lr"], g0["momentum"]

        def update(p, g, s):
            g = tm(lambda g, p, w: g + w * p, g, p, wd)
            if mom:  # torch's first step sets buf = g; momentum * 0 + g is the same
                s = {"buf": tm(lambda b, g: mom * b + g, s["buf"], g)}
                g = s["buf"]
            return tm(lambda p, g: p - lr * g, p, g), s
        return ({"buf": zeros()} if mom else {}), update
    if name in ("Adam", "AdamW"):
        lr, (b1, b2), eps = g0["lr"], g0["betas"], g0["eps"]

        def update(p, g, s):
            if name == "Adam":  # L2 penalty in the gradient (0 here); AdamW decays the weights
                g = tm(lambda g, p, w: g + w * p, g, p, wd)
            t = s["t"] + 1
            m = tm(lambda m, g: b1 * m + (1 - b1) * g, s["m"], g)
            v = tm(lambda v, g: b2 * v + (1 - b2) * g * g, s["v"], g)
            bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t

            def one(p, m, v, w):
                if name == "AdamW":
                    p = p * (1 - lr * w)
                return p - (lr / bc1) * m / (jnp.sqrt(v) / jnp.sqrt(bc2) + eps)
            return tm(one, p, m, v, wd), {"t": t, "m": m, "v": v}
        return {"t": jnp.zeros((), jnp.float32), "m": zeros(), "v": zeros()}, update
    if name == "Adadelta":
        lr, rho, eps = g0["lr"], g0["rho"], g0["eps"]

        def update(p, g, s):
            g = tm(lambda g, p, w: g + w * p, g, p, wd)
            sq = tm(lambda a, g: rho * a + (1 - rho) * g * g, s["sq"], g)
            delta = tm(lambda a, q, g: jnp.sqrt(a + eps) / jnp.sqrt(q + eps) * g, s["acc"], sq, g)
            acc = tm(lambda a, d: rho * a + (1 - rho) * d * d, s["acc"], delta)
            return tm(lambda p, d: p - lr * d, p, delta), {"sq": sq, "acc": acc}
        return {"sq": zeros(), "acc": zeros()}, update
    raise NotApplicable(f"no JAX port of torch.optim.{name}")


def jx_loss(kind, out, y):
    jax, jnp = _jax()
    out = out.reshape(-1, out.shape[-1])
    logp = out if kind == "mnist_net" else jax.nn.log_softmax(out, axis=-1)  # mnist_net ends in log_softmax
    return -jnp.take_along_axis(logp, y.reshape(-1, 1), axis=1).mean()


def jax_train(kind, np):
    """One jitted optimizer step of `kind`: returns step() -> loss (the step's work finished)."""
    jax, jnp = _jax()
    name, groups, data = torch_spec(kind, np)
    params, state, apply = JX_MODELS[kind](np)
    params, state = jax.tree.map(jnp.asarray, (params, state))
    opt_state, update = jx_optimizer(name, groups, params)

    def step(carry, x, y):
        params, opt_state, state, key = carry
        key, sub = jax.random.split(key)

        def loss_fn(p):
            out, new_state = apply(p, state, x, sub)
            return jx_loss(kind, out, y), new_state
        (loss, state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        if kind in CLIP:  # clip_grad_norm_(params, 1.0)
            norm = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree.leaves(grads)))
            grads = jax.tree.map(lambda g: g * jnp.minimum(1.0 / (norm + 1e-6), 1.0), grads)
        params, opt_state = update(params, grads, opt_state)
        return (params, opt_state, state, key), loss
    jstep = jax.jit(step, donate_argnums=(0,))  # donated: the update is in place, as torch's
    batches = cycle([(jnp.asarray(x), jnp.asarray(y)) for x, y in data])
    box = {"carry": (params, opt_state, state, jax.random.PRNGKey(0))}

    def run():
        box["carry"], loss = jstep(box["carry"], *batches())
        jax.block_until_ready(box["carry"])
        return loss
    run.first_loss = run()  # compiles; the first step's loss, for a check against torch's
    return run


def jax_kernel(wid, np):
    jax, jnp = _jax()
    kind, arg = wid.split(".")
    if kind == "matmul":
        n = int(arg)
        a = b = jnp.asarray(_rng(np).standard_normal((n, n), dtype=np.float32))  # compare._randn's arrays
        f = jax.jit(lambda a, b: a @ b)
    else:
        a = b = jnp.asarray(_rng(np).standard_normal(C.E16M, dtype=np.float32))
        f = jax.jit(lambda a, b: a + b) if arg == "add" else jax.jit(lambda a, b: jnp.exp(a))

    def run():
        return f(a, b).block_until_ready()
    run()
    return run


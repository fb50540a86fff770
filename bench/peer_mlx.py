"""bench/peers.py's MLX ports of the train.* models and kernels."""


import compare as C  # the vkml/torch builders (matmul, eltwise sizes)
from peer_common import CLIP, GPT_CFG, NotApplicable, cycle, need, torch_spec, _rng

# ----------------------------------------------------------------------------------------------------------
# MLX on its CPU device: mlx.nn, mlx.optimizers, mx.compile over the whole step. Its convolutions are
# channels-last, so the image batches are transposed to NHWC once (the same numbers and shapes).
# ----------------------------------------------------------------------------------------------------------


def _mlx():
    need("mlx")
    import mlx.core as mx
    mx.set_default_device(mx.cpu)
    return mx


def mlx_models():
    mx = _mlx()
    import mlx.nn as nn

    class Seq(nn.Module):
        def __init__(self, *layers):
            super().__init__()
            self.layers = list(layers)

        def __call__(self, x):
            for f in self.layers:
                x = f(x)
            return x

    flat = lambda x: x.reshape(x.shape[0], -1)  # noqa: E731

    def mlp():
        return Seq(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))

    def cnn():
        return Seq(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm(32), nn.ReLU(), nn.MaxPool2d(2),
                   nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm(64), nn.ReLU(), flat, nn.Linear(64 * 4 * 4, 10))

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln2, self.fc1, self.fc2 = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def attn(self, x):
            B, T, Cd = x.shape
            qkv = self.qkv(x).reshape(B, T, 3, self.heads, Cd // self.heads).transpose(2, 0, 3, 1, 4)
            y = mx.fast.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], scale=(Cd // self.heads) ** -0.5,
                                                     mask="causal")
            return self.proj(y.transpose(0, 2, 1, 3).reshape(B, T, Cd))

        def __call__(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(nn.gelu(self.fc1(self.ln2(x))))  # nn.gelu: erf, as torch's nn.GELU()

    class GPT(nn.Module):
        def __init__(self, vocab, context, d, layers, heads):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(context, d)
            self.blocks = [Block(d, heads) for _ in range(layers)]
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def __call__(self, idx):
            x = self.tok(idx) + self.pos(mx.arange(idx.shape[1]))
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln_f(x))

    class MnistNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 32, 3), nn.Conv2d(32, 64, 3)
            self.drop1, self.drop2 = nn.Dropout(0.25), nn.Dropout(0.5)
            self.pool, self.fc1, self.fc2 = nn.MaxPool2d(2), nn.Linear(9216, 128), nn.Linear(128, 10)

        def __call__(self, x):
            x = self.drop1(self.pool(nn.relu(self.conv2(nn.relu(self.conv1(x))))))
            x = self.drop2(nn.relu(self.fc1(flat(x))))
            x = self.fc2(x)
            return x - mx.logsumexp(x, axis=1, keepdims=True)  # log_softmax

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm(cout)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm(cout)
            self.down = Seq(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm(cout)) \
                if stride != 1 or cin != cout else None

        def __call__(self, x):
            out = self.bn2(self.conv2(nn.relu(self.bn1(self.conv1(x)))))
            return nn.relu(out + (x if self.down is None else self.down(x)))

    def resnet18(classes=1000):
        stages = []
        for cin, cout, stride in ((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)):
            stages += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        return Seq(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
                   *stages, lambda x: x.mean((1, 2)), nn.Linear(512, classes))

    class LSTMLM(nn.Module):  # mlx's LSTM has one bias vector where torch has two (the same sum)
        def __init__(self, vocab=64, d=64, hidden=128):
            super().__init__()
            self.vocab = vocab
            self.emb, self.rnn, self.head = nn.Embedding(vocab, d), nn.LSTM(d, hidden), nn.Linear(hidden, vocab)

        def __call__(self, idx):  # (T, B) -> batch-first for mlx's LSTM -> back to (T, B) order
            h, _ = self.rnn(self.emb(idx.T))
            return self.head(h.transpose(1, 0, 2)).reshape(-1, self.vocab)

    return {"mlp": mlp, "cnn": cnn, "mnist_net": MnistNet, "resnet18": resnet18, "lstm": LSTMLM,
            "transformer": lambda: GPT(**GPT_CFG["transformer"]), "gpt_small": lambda: GPT(**GPT_CFG["gpt_small"])}


def mlx_optimizer(name, groups):
    _mlx()
    import mlx.optimizers as optim

    def one(g):
        if name == "SGD":
            return optim.SGD(g["lr"], momentum=g["momentum"], weight_decay=g["weight_decay"])
        if name == "Adam" and not g["weight_decay"]:
            return optim.Adam(g["lr"], betas=list(g["betas"]), eps=g["eps"], bias_correction=True)
        if name == "AdamW":
            return optim.AdamW(g["lr"], betas=list(g["betas"]), eps=g["eps"], weight_decay=g["weight_decay"],
                               bias_correction=True)
        if name == "Adadelta" and not g["weight_decay"]:
            return optim.AdaDelta(g["lr"], rho=g["rho"], eps=g["eps"])
        raise NotApplicable(f"no MLX port of torch.optim.{name} with {g}")
    if len(groups) == 1:
        return one(groups[0])
    return optim.MultiOptimizer([one(groups[0]), one(groups[1])], [lambda path, p: p.ndim >= 2])


def mlx_train(kind, np):
    mx = _mlx()
    import mlx.nn as nn
    import mlx.optimizers as optim
    from functools import partial
    name, groups, data = torch_spec(kind, np)
    model, opt = mlx_models()[kind](), mlx_optimizer(name, groups)
    model.train()

    def loss_fn(model, x, y):
        out = model(x)
        out = out.reshape(-1, out.shape[-1])
        if kind == "mnist_net":
            return nn.losses.nll_loss(out, y.reshape(-1), reduction="mean")
        return nn.losses.cross_entropy(out, y.reshape(-1), reduction="mean")
    grad_fn = nn.value_and_grad(model, loss_fn)
    state = [model.state, opt.state, mx.random.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x, y):
        loss, grads = grad_fn(model, x, y)
        if kind in CLIP:
            grads, _ = optim.clip_grad_norm(grads, 1.0)
        opt.update(model, grads)
        return loss
    nhwc = lambda x: x.transpose(0, 2, 3, 1) if x.ndim == 4 else x  # noqa: E731
    batches = cycle([(mx.array(nhwc(x)), mx.array(y)) for x, y in data])

    def run():
        loss = step(*batches())
        mx.eval(loss, state)
        return loss
    run.first_loss = run()
    return run


def mlx_kernel(wid, np):
    mx = _mlx()
    kind, arg = wid.split(".")
    shape = (int(arg), int(arg)) if kind == "matmul" else (C.E16M,)
    a = b = mx.array(_rng(np).standard_normal(shape, dtype=np.float32))
    f = mx.compile({"add": lambda a, b: a + b, "exp": lambda a, b: mx.exp(a)}.get(arg, lambda a, b: a @ b))

    def run():
        out = f(a, b)
        mx.eval(out)
        return out
    run()
    return run



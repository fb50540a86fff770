"""bench/peers.py's tinygrad ports of the train.* models and kernels."""


import compare as C  # the vkml/torch builders (matmul, eltwise sizes)
from peer_common import CLIP, GPT_CFG, NotApplicable, cycle, group_of, need, torch_spec, _rng

# ----------------------------------------------------------------------------------------------------------
# tinygrad: tinygrad.nn layers, tinygrad.nn.optim, TinyJit over the whole step.
# ----------------------------------------------------------------------------------------------------------


def _tg():
    need("tinygrad")
    import tinygrad
    return tinygrad


def tg_models():
    tg = _tg()
    nn, Tensor = tg.nn, tg.Tensor

    class Seq:
        def __init__(self, *fs):
            self.fs = list(fs)

        def __call__(self, x):
            return x.sequential(self.fs)

    def mlp():
        return Seq(nn.Linear(64, 256), Tensor.relu, nn.Linear(256, 256), Tensor.relu, nn.Linear(256, 10))

    def cnn():
        return Seq(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm(32), Tensor.relu, lambda x: x.max_pool2d(2),
                   nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm(64), Tensor.relu,
                   lambda x: x.flatten(1), nn.Linear(64 * 4 * 4, 10))

    class Block:
        def __init__(self, d, heads):
            self.heads = heads
            self.ln1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln2, self.fc1, self.fc2 = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def attn(self, x):
            B, T, Cd = x.shape
            qkv = self.qkv(x).reshape(B, T, 3, self.heads, Cd // self.heads).permute(2, 0, 3, 1, 4)
            y = qkv[0].scaled_dot_product_attention(qkv[1], qkv[2], is_causal=True)
            return self.proj(y.transpose(1, 2).reshape(B, T, Cd))

        def __call__(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(self.fc1(self.ln2(x)).gelu(approximate="none"))  # nn.GELU(): erf

    class GPT:
        def __init__(self, vocab, context, d, layers, heads):
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(context, d)
            self.blocks = [Block(d, heads) for _ in range(layers)]
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def __call__(self, idx):
            x = self.tok(idx) + self.pos(Tensor.arange(idx.shape[1]))
            return self.head(self.ln_f(x.sequential(self.blocks)))

    class MnistNet:
        def __init__(self):
            self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, 1), nn.Conv2d(32, 64, 3, 1)
            self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

        def __call__(self, x):
            x = self.conv2(self.conv1(x).relu()).relu().max_pool2d(2).dropout(0.25)
            x = self.fc1(x.flatten(1)).relu().dropout(0.5)
            return self.fc2(x).log_softmax(1)

    class BasicBlock:
        def __init__(self, cin, cout, stride):
            self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm(cout)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm(cout)
            self.down = [nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm(cout)] \
                if stride != 1 or cin != cout else []

        def __call__(self, x):
            out = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
            return (out + x.sequential(self.down)).relu()

    def resnet18(classes=1000):
        stages = []
        for cin, cout, stride in ((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)):
            stages += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        return Seq(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm(64), Tensor.relu,
                   lambda x: x.max_pool2d(3, 2, padding=1), *stages, lambda x: x.mean((2, 3)),
                   nn.Linear(512, classes))

    class LSTMLM:  # tinygrad has LSTMCell; the sequence loop is written out (torch's nn.LSTM, one layer)
        def __init__(self, vocab=64, d=64, hidden=128):
            self.vocab = vocab
            self.emb, self.cell, self.head = nn.Embedding(vocab, d), nn.LSTMCell(d, hidden), nn.Linear(hidden, vocab)

        def __call__(self, idx):
            x, hc, outs = self.emb(idx), None, []
            for t in range(idx.shape[0]):
                hc = self.cell(x[t], hc)
                outs.append(hc[0])
            return self.head(Tensor.stack(*outs)).reshape(-1, self.vocab)

    return {"mlp": mlp, "cnn": cnn, "mnist_net": MnistNet, "resnet18": resnet18, "lstm": LSTMLM,
            "transformer": lambda: GPT(**GPT_CFG["transformer"]), "gpt_small": lambda: GPT(**GPT_CFG["gpt_small"])}


def tg_adadelta(params, lr, rho, eps, wd):
    """torch.optim.Adadelta, which tinygrad.nn.optim lacks, on tinygrad's Optimizer base."""
    tg = _tg()
    from tinygrad.nn.optim import Optimizer

    class Adadelta(Optimizer):
        def __init__(self):
            super().__init__(params, lr, fused=False)
            self.sq, self.acc = self._new_optim_param(), self._new_optim_param()

        def _step(self, ps, grads):
            ret = []
            for i, (t, g) in enumerate(zip(ps, grads)):
                g = g + wd * t.detach() if wd else g
                self.sq[i].assign(rho * self.sq[i] + (1 - rho) * g * g)
                delta = (self.acc[i] + eps).sqrt() / (self.sq[i] + eps).sqrt() * g  # acc: the old value
                self.acc[i].assign(rho * self.acc[i] + (1 - rho) * delta * delta)
                ret.append((self.lr * delta).cast(t.dtype))
            return ret, self.sq + self.acc
    del tg
    return Adadelta()


def tg_optimizer(name, groups, params):
    tg = _tg()
    optim = tg.nn.optim
    parts = {}
    for p in params:  # one tinygrad optimizer per torch param group
        parts.setdefault(id(group_of(p.ndim, groups)), (group_of(p.ndim, groups), []))[1].append(p)
    opts = []
    for g, ps in parts.values():
        if name == "SGD":
            opts.append(optim.SGD(ps, lr=g["lr"], momentum=g["momentum"], weight_decay=g["weight_decay"]))
        elif name in ("Adam", "AdamW"):
            if name == "Adam" and g["weight_decay"]:
                raise NotApplicable("Adam with an L2 weight decay")
            opts.append(optim.AdamW(ps, lr=g["lr"], b1=g["betas"][0], b2=g["betas"][1], eps=g["eps"],
                                    weight_decay=g["weight_decay"] if name == "AdamW" else 0.0))
        elif name == "Adadelta":
            opts.append(tg_adadelta(ps, g["lr"], g["rho"], g["eps"], g["weight_decay"]))
        else:
            raise NotApplicable(f"no tinygrad port of torch.optim.{name}")
    return opts[0] if len(opts) == 1 else optim.OptimizerGroup(*opts)


def tinygrad_train(kind, np):
    tg = _tg()
    from tinygrad.helpers import Context
    Tensor, Device = tg.Tensor, tg.Device
    name, groups, data = torch_spec(kind, np)
    model = tg_models()[kind]()
    params = tg.nn.state.get_parameters(model)
    opt = tg_optimizer(name, groups, params)  # tinygrad keeps the BatchNorm buffers out by itself

    @tg.TinyJit
    def step(x, y):
        with Context(TRAINING=1):  # dropout on, batch statistics, the optimizer allowed
            opt.zero_grad()
            out = model(x)
            if kind in ("transformer", "gpt_small"):
                out, y = out.reshape(-1, out.shape[-1]), y.reshape(-1)
            loss = (out.nll_loss(y) if kind == "mnist_net" else out.sparse_categorical_crossentropy(y)).backward()
            if kind in CLIP:  # clip_grad_norm_(params, 1.0)
                norm = Tensor.stack(*[p.grad.square().sum() for p in opt.params]).sum().sqrt()
                coef = (1.0 / (norm + 1e-6)).minimum(1.0)
                for p in opt.params:
                    p.grad = p.grad * coef
            opt.step()
            return loss.realize()
    batches = cycle([(Tensor(x).realize(), Tensor(y).realize()) for x, y in data])
    dev = Device[Device.DEFAULT]

    def run():
        loss = step(*batches())
        dev.synchronize()  # the CPU device runs kernels on worker threads
        return loss
    run.first_loss = run()
    for _ in range(2):  # TinyJit: a plain call, a captured one, then replays
        run()
    return run


def tinygrad_kernel(wid, np):
    tg = _tg()
    Tensor, dev = tg.Tensor, tg.Device[tg.Device.DEFAULT]
    kind, arg = wid.split(".")
    shape = (int(arg), int(arg)) if kind == "matmul" else (C.E16M,)
    a = Tensor(_rng(np).standard_normal(shape, dtype=np.float32)).realize()
    b = Tensor(_rng(np).standard_normal(shape, dtype=np.float32)).realize()
    op = {"add": lambda a, b: a + b, "exp": lambda a, b: a.exp()}.get(arg, lambda a, b: a @ b)
    f = tg.TinyJit(lambda a, b: op(a, b).realize())

    def run():
        out = f(a, b)
        dev.synchronize()
        return out
    for _ in range(3):
        run()
    return run


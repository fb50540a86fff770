"""The models and training steps of the train.* rows of `make bench` (bench/compare.py) and of the
dist.train.* rows (bench/dist_bench.py): the examples' models at their shapes, built the same way in
vkml and in torch (L is the library module), over pre-built batches."""


def _rng(np):
    return np.random.default_rng(0)


def _t(L, arr, grad=False):
    t = L.tensor(arr)
    return t.requires_grad_() if grad else t


def mlp_model(L):
    nn = L.nn
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn_model(L):  # python/vkml/examples/digits.py, --model cnn
    nn = L.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Flatten(), nn.Linear(64 * 4 * 4, 10))


def gpt_model(L, vocab=96, context=64, d=128, layers=2, heads=4):  # python/vkml/examples/charlm.py
    nn, F = L.nn, L.nn.functional

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(self, x):
            B, T, C = x.shape
            qkv = self.qkv(x).reshape(B, T, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
            return self.proj(y.transpose(1, 2).reshape(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.ln2 = nn.LayerNorm(d), Attn(), nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(context, d)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(L.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln_f(x))
    return GPT()


def mnist_net(L):  # pytorch/examples mnist/main.py's Net (log_softmax + nll_loss, Adadelta)
    nn, F = L.nn, L.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, 1), nn.Conv2d(32, 64, 3, 1)
            self.dropout1, self.dropout2 = nn.Dropout(0.25), nn.Dropout(0.5)
            self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
            x = self.fc1(L.flatten(self.dropout1(x), 1))
            return F.log_softmax(self.fc2(self.dropout2(F.relu(x))), dim=1)
    return Net()


def resnet18(L, classes=1000):  # torchvision's resnet18 (BasicBlock, [2, 2, 2, 2]), written out
    nn = L.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1, self.relu = nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    def stage(cin, cout, stride):
        return nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1))

    return nn.Sequential(
        nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1), stage(64, 64, 1), stage(64, 128, 2), stage(128, 256, 2),
        stage(256, 512, 2), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(512, classes))


def lstm_lm_model(L, vocab=64, d=64, hidden=128):  # tests/programs/lstm_lm.py's shape (issue #16, rnn)
    nn = L.nn

    class LSTMLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.rnn, self.head = nn.Embedding(vocab, d), nn.LSTM(d, hidden), nn.Linear(hidden, vocab)

        def forward(self, idx):  # (T, B) token ids -> (T * B, vocab) logits
            out, _ = self.rnn(self.emb(idx))
            return self.head(out).reshape(-1, vocab)
    return LSTMLM()


def _shard(arr, shard):
    """Part shard[0] of shard[1] equal parts of a batch (its first dimension): one rank's share."""
    rank, parts = shard
    n = arr.shape[0] // parts
    return arr[rank * n:(rank + 1) * n]


def train_parts(kind, L, np, shard=(0, 1)):
    """(model, optimizer, batches) as the examples train; shard=(rank, ranks) keeps that rank's share
    of every batch (bench/dist_bench.py: the same global batch split over data-parallel ranks)."""
    rng = _rng(np)
    if shard != (0, 1) and kind not in ("mlp", "transformer"):
        raise ValueError(f"train_parts: no sharded batches for {kind!r}")
    cut = lambda a: _t(L, _shard(a, shard))  # noqa: E731
    if kind == "mlp":
        model = mlp_model(L)
        opt = L.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
        batches = [(cut(rng.random((64, 64), dtype=np.float32)), cut(rng.integers(0, 10, 64)))
                   for _ in range(8)]
    elif kind == "cnn":
        model = cnn_model(L)
        opt = L.optim.Adam(model.parameters(), lr=2e-3)
        batches = [(_t(L, rng.random((64, 1, 8, 8), dtype=np.float32)), _t(L, rng.integers(0, 10, 64)))
                   for _ in range(8)]
    elif kind == "lstm":  # one step of a small LSTM language model: 32 steps of 16 sequences
        model = lstm_lm_model(L)
        opt = L.optim.SGD(model.parameters(), lr=1.0)
        batches = [(_t(L, rng.integers(0, 64, (32, 16))), _t(L, rng.integers(0, 64, 32 * 16))) for _ in range(4)]
    elif kind == "mnist_net":  # pytorch/examples mnist: batch 64 of 28x28, Adadelta(lr=1.0)
        model = mnist_net(L)
        opt = L.optim.Adadelta(model.parameters(), lr=1.0)
        batches = [(_t(L, rng.random((64, 1, 28, 28), dtype=np.float32)), _t(L, rng.integers(0, 10, 64)))
                   for _ in range(4)]
    elif kind == "resnet18":  # torchvision's resnet18 at 16x3x64x64, SGD with momentum
        model = resnet18(L)
        opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        batches = [(_t(L, rng.standard_normal((16, 3, 64, 64), dtype=np.float32)),
                    _t(L, rng.integers(0, 1000, 16))) for _ in range(2)]
    elif kind == "gpt_small":  # nanoGPT's CPU run: block 64, batch 12, 4 layers, 4 heads, n_embd 64
        model = gpt_model(L, vocab=65, context=64, d=64, layers=4, heads=4)
        opt = L.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
        batches = [(_t(L, rng.integers(0, 65, (12, 64))), _t(L, rng.integers(0, 65, (12, 64))))
                   for _ in range(4)]
    else:
        model = gpt_model(L)
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        opt = L.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.95))
        batches = [(cut(rng.integers(0, 96, (32, 64))), cut(rng.integers(0, 96, (32, 64)))) for _ in range(4)]
    return model, opt, batches


def train_loss(kind, L, logits, y):
    if kind in ("transformer", "gpt_small"):
        logits, y = logits.reshape(-1, logits.shape[-1]), y.reshape(-1)
    if kind == "mnist_net":  # the model ends in log_softmax
        return L.nn.functional.nll_loss(logits, y)
    return L.nn.functional.cross_entropy(logits, y)


def train_setup(kind, L, np, autocast=None):
    """(step function, its model): one optimizer step over pre-built batches, as the examples train;
    autocast="bfloat16": the forward under L.autocast("cpu", dtype=L.bfloat16), as the examples'
    --dtype bfloat16 (float32 parameters and optimizer state)."""
    model, opt, batches = train_parts(kind, L, np)
    params = list(model.parameters())
    state = {"i": 0}
    region = L.autocast("cpu", dtype=getattr(L, autocast or "bfloat16"), enabled=autocast is not None)

    def step():
        x, y = batches[state["i"] % len(batches)]
        state["i"] += 1
        with region:
            loss = train_loss(kind, L, model(x), y)
        opt.zero_grad()
        loss.backward()
        if kind in ("transformer", "gpt_small"):
            L.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
    return step, model

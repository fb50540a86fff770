"""Train a small character-level GPT on Python standard-library source code with vkml, resumably and
deterministically.

    python -m vkml.examples.charlm                  # 2 layers, d_model 128, 4 heads, context 64, 300 steps
    python -m vkml.examples.charlm --steps 1000     # longer
    python -m vkml.examples.charlm --resume         # continue from --out/checkpoint.safetensors
    python -m vkml.examples.charlm --device vulkan  # on the GPU (vkml.vulkan)
    python -m vkml.examples.charlm --dtype bfloat16 # mixed precision (vk.autocast)
    python -m vkml.distributed.run -n 2 -m vkml.examples.charlm   # data-parallel, 2 processes

Model: token + learned position embeddings, N pre-LayerNorm transformer blocks (causal multi-head
self-attention via F.scaled_dot_product_attention(is_causal=True), GELU MLP 4x), final LayerNorm, linear head
(--tie-weights shares it with the token embedding). AdamW, linear warmup then cosine decay (LambdaLR),
gradient clipping with clip_grad_norm_.

Corpus: the source files of a fixed list of standard-library modules (present wherever Python is),
concatenated and cut to the first --corpus-chars characters; vocabulary = sorted set of its characters;
the first 90% trains, the last 10% validates. The unigram entropy of the corpus (in nats) is what a model
without context would reach; validation loss must fall well below it.

Every --ckpt-every steps (and at the end) the run writes ONE atomic checkpoint (model, optimizer, scheduler,
vkml's RNG state, the step, the batch-sampling state, the log), so a run killed at any moment and resumed
ends with parameters bitwise equal to an uninterrupted run with the same flags. The batch of step s is drawn
by numpy's Generator seeded by (seed, s): a pure function of checkpointed values.

Data-parallel (under the launcher with -n > 1, or --distributed): --batch-size stays the GLOBAL batch;
every rank draws the same batch of step s and trains on its share of the rows (DistributedDataParallel
averages the gradients; the logged train loss is the whole batch's). Rank 0 alone prints, validates,
samples and writes the files; the checkpoint does not depend on the number of ranks, so --resume works
with any -n (bitwise equal to an uninterrupted run only at the same -n, and with dropout 0: each rank
draws its dropout masks from the same RNG state).
"""

import argparse
import importlib
import inspect
import json
import math
import os
import sys
import time

import numpy as np

import vkml as vk
from vkml import nn
from vkml.nn import functional as F

from ._dist import Ranks, wanted

# A fixed list of pure-Python stdlib modules, in a fixed order (their text varies a little between Python
# versions, which is fine: the corpus is read at run time and the checkpoint records its fingerprint).
CORPUS_MODULES = ["argparse", "textwrap", "inspect", "dataclasses", "functools", "typing", "collections",
                  "json.decoder", "json.encoder", "pathlib", "string", "fractions", "statistics", "heapq",
                  "bisect", "difflib", "shutil", "tempfile", "random", "enum", "ast", "pprint", "configparser"]
EVAL_SEED = 12345  # the validation batches are fixed, whatever --seed is


def load_corpus(n_chars):
    parts, total = [], 0
    for name in CORPUS_MODULES:
        try:
            path = inspect.getsourcefile(importlib.import_module(name))
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (ImportError, TypeError, OSError):
            continue
        parts.append(text)
        total += len(text)
        if total >= n_chars:
            break
    text = "".join(parts)[:n_chars]
    if len(text) < 10_000:
        sys.exit("charlm: could not read enough standard-library source for a corpus")
    return text


def unigram_entropy(ids, vocab_size):
    p = np.bincount(ids, minlength=vocab_size).astype(np.float64)
    p = p[p > 0] / p.sum()
    return float(-(p * np.log(p)).sum())


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout):
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be a multiple of n_heads"
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        H = self.n_heads
        qkv = self.qkv(x).reshape(B, T, 3, H, C // H).permute(2, 0, 3, 1, 4)  # 3, B, H, T, hd
        q, k, v = qkv[0], qkv[1], qkv[2]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)          # B, H, T, hd
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, d_model, n_heads, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model),
                                 nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class CharGPT(nn.Module):
    def __init__(self, vocab_size, context, d_model, n_layers, n_heads, dropout=0.0, tie_weights=False):
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(context, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList([Block(d_model, n_heads, dropout) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        with vk.no_grad():  # GPT-2's initialisation: N(0, 0.02), residual projections scaled by 1/sqrt(2N)
            for name, p in self.named_parameters():
                if name.endswith("weight") and p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * n_layers) if name.endswith(("proj.weight", "mlp.2.weight")) \
                        else 0.02
                    nn.init.normal_(p, 0.0, std)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)
        if tie_weights:
            self.head.weight = self.tok.weight

    def forward(self, idx):
        B, T = idx.shape
        x = self.drop(self.tok(idx) + self.pos(vk.arange(T, device=idx.device)))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


def lr_lambda(warmup, total, min_ratio=0.1):
    def f(step):  # step = number of optimizer steps taken so far
        if step < warmup:
            return (step + 1) / warmup
        t = min(1.0, (step - warmup) / max(1, total - warmup))
        return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * t))
    return f


def build_optim(model, args):
    decay, no_decay, seen = [], [], set()
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        (decay if p.dim() >= 2 else no_decay).append(p)
    opt = vk.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                          {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    sched = vk.optim.lr_scheduler.LambdaLR(opt, lr_lambda(args.warmup, args.steps))
    return opt, sched


def batch_starts(data, seed, step, batch_size, context):
    """Where the rows of step `step`'s batch start: a pure function of (seed, step), so resuming needs
    nothing else."""
    return np.random.default_rng([seed, step]).integers(0, len(data) - context - 1, size=batch_size)


def get_batch(data, seed, step, batch_size, context, device="cpu", starts=None):
    """The batch of step `step` (or the rows starting at `starts`, a share of it)."""
    if starts is None:
        starts = batch_starts(data, seed, step, batch_size, context)
    x = np.stack([data[s:s + context] for s in starts])
    y = np.stack([data[s + 1:s + context + 1] for s in starts])
    return vk.tensor(x, device=device), vk.tensor(y, device=device)


def evaluate(model, data, batches, batch_size, context, device="cpu"):
    model.eval()
    tot = 0.0
    with vk.no_grad():
        for b in range(batches):
            x, y = get_batch(data, EVAL_SEED, b, batch_size, context, device)
            logits = model(x)
            tot += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item())
    model.train()
    return tot / batches


def sample(model, prompt_ids, n, temperature, seed, context, device="cpu"):
    """Temperature sampling with numpy's Generator seeded by `seed` (vkml's RNG is left untouched)."""
    rng = np.random.default_rng([seed, 0xC0FFEE])
    ids = list(prompt_ids)
    model.eval()
    with vk.no_grad():
        for _ in range(n):
            x = vk.tensor(np.asarray([ids[-context:]], dtype=np.int64), device=device)
            logits = model(x)[0, -1].cpu().numpy().astype(np.float64) / max(temperature, 1e-6)
            p = np.exp(logits - logits.max())
            ids.append(int(rng.choice(len(p), p=p / p.sum())))
    model.train()
    return ids


def write_json_atomic(path, obj):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


CONFIG_KEYS = ["seed", "steps", "batch_size", "context", "d_model", "n_layers", "n_heads", "dropout",
               "tie_weights", "lr", "weight_decay", "warmup", "grad_clip", "corpus_chars", "eval_every",
               "eval_batches", "dtype"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="./runs/charlm")
    ap.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.safetensors")
    ap.add_argument("--stop-after-step", type=int, default=None, metavar="S",
                    help="end this run after step S (its checkpoint written); --resume continues it")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--n-layers", type=int, default=2)
    ap.add_argument("--n-heads", type=int, default=4)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--tie-weights", action="store_true", help="share the head's weight with the token embedding")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=None, help="warmup steps (default: steps // 10)")
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--corpus-chars", type=int, default=300_000)
    ap.add_argument("--eval-every", type=int, default=50, help="steps between validation losses / log lines")
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--ckpt-every", type=int, default=None, help="steps between checkpoints (default: eval-every)")
    ap.add_argument("--sample-chars", type=int, default=300)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    ap.add_argument("--device", default="cpu", help="cpu (default) or vulkan")
    ap.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32",
                    help="mixed precision: the forward under vk.autocast in this dtype (parameters and "
                         "optimizer state stay float32; float16 adds a GradScaler)")
    ap.add_argument("--distributed", action="store_true",
                    help="join an MPI job (the default under python -m vkml.distributed.run -n N, N > 1)")
    args = ap.parse_args(argv)
    ranks = Ranks(wanted(args.distributed))
    device_type = str(args.device).split(":")[0]
    autocast = vk.autocast(device_type, dtype=getattr(vk, args.dtype), enabled=args.dtype != "float32")
    scaler = vk.amp.GradScaler(device_type, enabled=args.dtype == "float16")
    if args.warmup is None:
        args.warmup = max(1, args.steps // 10)
    ckpt_every = args.ckpt_every or args.eval_every

    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, "checkpoint.safetensors")
    text = load_corpus(args.corpus_chars)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.fromiter((stoi[c] for c in text), dtype=np.int64, count=len(text))
    n_train = int(0.9 * len(data))
    train, val = data[:n_train], data[n_train:]
    H0 = unigram_entropy(data, len(chars))
    ranks.print(f"corpus: {len(text):,} characters of stdlib source ({len(chars)} distinct; "
                f"{len(train):,} train / {len(val):,} val); unigram entropy {H0:.4f} nats "
                f"(uniform: {math.log(len(chars)):.4f})")

    vk.manual_seed(args.seed)
    model = CharGPT(len(chars), args.context, args.d_model, args.n_layers, args.n_heads, args.dropout,
                    args.tie_weights).to(args.device)  # made on the CPU: same init everywhere
    opt, sched = build_optim(model, args)
    n_params = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    config = {k: getattr(args, k) for k in CONFIG_KEYS}
    config["corpus_vocab"] = "".join(chars)
    log, start, pending = [], 0, []  # pending: train losses since the last log line
    ck = ranks.load(ckpt_path) if args.resume else None
    if ck is not None:
        if ck["config"] != config:
            diff = {k: (ck["config"].get(k), v) for k, v in config.items() if ck["config"].get(k) != v}
            sys.exit(f"--resume: the checkpoint was written with other settings (checkpoint, now): {diff}")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        if ck.get("scaler"):
            scaler.load_state_dict(ck["scaler"])
        vk.set_rng_state(tuple(ck["rng_state"]))
        log, start, pending = ck["log"], ck["sampling"]["next_step"], list(ck["pending_losses"])
        ranks.print(f"resumed from {ckpt_path} at step {start}/{args.steps}")
    elif args.resume:
        ranks.print(f"--resume: no checkpoint at {ckpt_path}; starting afresh")
    ranks.print(f"model: {n_params:,} parameters ({args.n_layers} layers, d_model {args.d_model}, {args.n_heads} "
                f"heads, context {args.context}); batch {args.batch_size}, {args.steps} steps")
    net = ranks.wrap(model)  # what trains; `model` (unwrapped) is what is saved and validated
    ranks.announce(args.batch_size)

    def checkpoint(next_step):
        if not ranks.main:
            return
        ck = {"config": config, "model": model.state_dict(), "optimizer": opt.state_dict(),
              "scheduler": sched.state_dict(), "scaler": scaler.state_dict(),
              "rng_state": vk.get_rng_state().tolist(),
              "sampling": {"kind": "numpy.default_rng([seed, step]).integers", "seed": args.seed,
                           "next_step": next_step},
              "pending_losses": list(pending), "log": log}
        vk.save(ck, ckpt_path)  # atomic: temp file, fsync, rename
        write_json_atomic(os.path.join(args.out, "log.json"), log)

    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    bar = tqdm(total=args.steps, initial=start, desc="charlm", file=sys.stderr, dynamic_ncols=True,
               disable=args.no_progress) if tqdm and ranks.main else None
    model.train()
    params = [p for g in opt.param_groups for p in g["params"]]
    t0, t_steps = time.time(), 0.0
    stop = min(args.steps, args.stop_after_step or args.steps)
    for step in range(start, stop):
        ts = time.perf_counter()
        rows, weight = ranks.share(batch_starts(train, args.seed, step, args.batch_size, args.context))
        x, y = get_batch(train, args.seed, step, args.batch_size, args.context, args.device, starts=rows)
        with autocast:
            logits = net(x)
            loss = F.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1))
        opt.zero_grad()
        scaler.scale(loss if weight == 1.0 else loss * weight).backward()
        if args.grad_clip > 0:
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(params, args.grad_clip)
        scaler.step(opt)
        scaler.update()
        sched.step()
        if ranks.distributed:  # the whole batch's mean loss: the shares' means, weighted by their size
            pending.append(ranks.sum([float(loss.item()) * weight / ranks.world])[0])
        else:
            pending.append(float(loss.item()))
        t_steps += time.perf_counter() - ts
        if bar:
            bar.update(1)
            bar.set_postfix(loss=f"{pending[-1]:.3f}")
        done = step + 1
        if (done % args.eval_every == 0 or done == args.steps) and ranks.main:  # rank 0 validates, logs
            vl = evaluate(model, val, args.eval_batches, args.batch_size, args.context, args.device)
            rec = dict(step=done, train_loss=sum(pending) / len(pending), val_loss=vl,
                       lr=opt.param_groups[0]["lr"])
            log.append(rec)
            pending = []
            msg = (f"step {done:5d}/{args.steps}  train loss {rec['train_loss']:.4f}  val loss {vl:.4f}  "
                   f"(unigram entropy {H0:.4f})  lr {rec['lr']:.2e}")
            (bar.write(msg, file=sys.stdout) if bar else print(msg))
            sys.stdout.flush()
        if done % ckpt_every == 0 or done == stop:
            checkpoint(done)
    if bar:
        bar.close()

    ranks.finish()
    if stop < args.steps:
        ranks.print(f"stopped after step {stop}/{args.steps}; --resume continues")
        return None
    if not ranks.main:
        return None
    n_run = args.steps - start
    if n_run:
        print(f"{n_run} steps in {time.time() - t0:.1f} s here: {1000 * t_steps / n_run:.1f} ms/step "
              f"(training steps only)")
    vl = log[-1]["val_loss"] if log else evaluate(model, val, args.eval_batches, args.batch_size, args.context,
                                                      args.device)
    vk.save(model.state_dict(), os.path.join(args.out, "model.safetensors"))
    print(f"final val loss {vl:.4f} nats/char vs unigram entropy {H0:.4f} "
          f"({vl / H0:.1%} of it; {vl / math.log(2):.3f} bits/char)")
    if args.sample_chars > 0:
        prompt = "def "
        ids = sample(model, [stoi[c] for c in prompt], args.sample_chars, args.temperature, args.seed, args.context,
                     args.device)
        print(f"sample (temperature {args.temperature}, prompt {prompt!r}):")
        print("-" * 60)
        print("".join(chars[i] for i in ids))
        print("-" * 60)
    return vl, H0


if __name__ == "__main__":
    main()

"""Train an MLP or a small CNN on scikit-learn's 8x8 digits with vkml, resumably and deterministically.

    python -m vkml.examples.digits                 # MLP, SGD with momentum
    python -m vkml.examples.digits --model cnn     # conv-BN-ReLU-pool x2, Adam
    python -m vkml.examples.digits --resume        # continue from --out/checkpoint.safetensors
    python -m vkml.examples.digits --device vulkan # on the GPU (vkml.vulkan)
    python -m vkml.examples.digits --dtype bfloat16  # mixed precision (vk.autocast)
    python -m vkml.distributed.run -n 2 -m vkml.examples.digits   # data-parallel, 2 processes

Every epoch ends with ONE atomic checkpoint (model, optimizer, scheduler, vkml's RNG state, the epoch,
the shuffling state and the history), so a run killed at any moment and resumed ends with parameters
bitwise equal to an uninterrupted run with the same seed. Shuffling uses numpy's Generator seeded by
(seed, epoch): a pure function of checkpointed values; initialisation draws from vkml's counter-based RNG
(its state is checkpointed too).

Data-parallel (under the launcher with -n > 1, or --distributed): --batch-size stays the GLOBAL batch;
each rank trains on its share of every batch (DistributedDataParallel averages the gradients), so the
run follows the one-process run up to rounding. Rank 0 alone prints and writes the files; the checkpoint
does not depend on the number of ranks, so --resume works with any -n. The CNN's BatchNorm uses each
rank's share for its batch statistics (there is no SyncBatchNorm), so only the MLP matches one process.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

import vkml as vk
from vkml import nn
from vkml.nn import functional as F

from ._dist import Ranks, wanted

SPLIT_SEED = 0  # the 80/20 split is fixed, whatever --seed is


def load_data():
    from sklearn.datasets import load_digits
    d = load_digits()
    X = (d.data / 16.0).astype(np.float32)  # pixel values are 0..16: scaled to [0, 1]
    y = d.target.astype(np.int64)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(y))
    n_train = int(round(0.8 * len(y)))
    tr, te = order[:n_train], order[n_train:]
    return X[tr], y[tr], X[te], y[te]


def build_model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),   # 32x4x4
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),                  # 64x4x4
        nn.Flatten(), nn.Linear(64 * 4 * 4, 10))


def build_optim(kind, model, epochs):
    if kind == "mlp":
        opt = vk.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    else:
        opt = vk.optim.Adam(model.parameters(), lr=2e-3)
    sched = vk.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    return opt, sched


def shuffle_order(seed, epoch, n):
    return np.random.default_rng([seed, epoch]).permutation(n)


def inputs(kind, X, device="cpu"):
    x = vk.tensor(X, device=device)
    return x if kind == "mlp" else x.reshape(-1, 1, 8, 8)


def evaluate(model, kind, X, y, device="cpu"):
    model.eval()
    with vk.no_grad():
        logits = model(inputs(kind, X, device))
        loss = float(F.cross_entropy(logits, vk.tensor(y, device=device)).item())
        pred = logits.argmax(1).cpu().numpy()
    model.train()
    return loss, float((pred == y).mean()), pred


def confusion_matrix(y, pred, k=10):
    cm = np.zeros((k, k), dtype=np.int64)
    np.add.at(cm, (y, pred), 1)
    return cm


def write_json_atomic(path, obj):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def plot(path, history):
    loss = [h["train_loss"] for h in history], [h["test_loss"] for h in history]
    acc = [h["train_acc"] for h in history], [h["test_acc"] for h in history]
    tmp = f"{path}.tmp.{os.getpid()}.png"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
        a.plot(loss[0], label="train")
        a.plot(loss[1], label="test")
        a.set_title("loss")
        a.set_xlabel("epoch")
        a.legend()
        b.plot(acc[0], label="train")
        b.plot(acc[1], label="test")
        b.set_title("accuracy")
        b.set_xlabel("epoch")
        b.legend()
        fig.tight_layout()
        fig.savefig(tmp, format="png")
        plt.close(fig)
    except ImportError:
        from ._png import plot_panels
        plot_panels(tmp, [list(loss), list(acc)])  # blue: train, orange: test
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--epochs", type=int, default=None, help="default: 30 (mlp), 20 (cnn)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="./runs/digits")
    ap.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.safetensors")
    ap.add_argument("--stop-after-epoch", type=int, default=None, metavar="K",
                    help="end this run after epoch K (its checkpoint written); --resume continues it")
    ap.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    ap.add_argument("--device", default="cpu", help="cpu (default) or vulkan")
    ap.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32",
                    help="mixed precision: the forward under vk.autocast in this dtype (parameters and "
                         "optimizer state stay float32; float16 adds a GradScaler)")
    ap.add_argument("--distributed", action="store_true",
                    help="join an MPI job (the default under python -m vkml.distributed.run -n N, N > 1)")
    args = ap.parse_args(argv)
    epochs = args.epochs or (30 if args.model == "mlp" else 20)
    ranks = Ranks(wanted(args.distributed))
    device_type = str(args.device).split(":")[0]
    autocast = vk.autocast(device_type, dtype=getattr(vk, args.dtype), enabled=args.dtype != "float32")
    scaler = vk.amp.GradScaler(device_type, enabled=args.dtype == "float16")

    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, "checkpoint.safetensors")
    Xtr, ytr, Xte, yte = load_data()

    vk.manual_seed(args.seed)
    model = build_model(args.model).to(args.device)  # made on the CPU (same seed, same init)
    opt, sched = build_optim(args.model, model, epochs)
    history, start = [], 0
    ck = ranks.load(ckpt_path) if args.resume else None
    if ck is not None:
        cfg = ck["config"]
        if (cfg["model"], cfg["seed"], cfg["epochs"], cfg["batch_size"], cfg.get("dtype", "float32")) != \
                (args.model, args.seed, epochs, args.batch_size, args.dtype):
            sys.exit(f"--resume: the checkpoint was written with {cfg}; pass the same "
                     "--model/--seed/--epochs/--dtype")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        if ck.get("scaler"):
            scaler.load_state_dict(ck["scaler"])
        vk.set_rng_state(tuple(ck["rng_state"]))
        history, start = ck["history"], ck["epoch"] + 1
        ranks.print(f"resumed from {ckpt_path} after epoch {ck['epoch'] + 1}/{epochs}")
    elif args.resume:
        ranks.print(f"--resume: no checkpoint at {ckpt_path}; starting afresh")
    net = ranks.wrap(model)  # what trains; `model` (unwrapped) is what is saved
    ranks.announce(args.batch_size)

    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    n, bs = len(ytr), args.batch_size
    nb = (n + bs - 1) // bs
    Xtr_v, ytr_v = inputs(args.model, Xtr, args.device), vk.tensor(ytr, device=args.device)
    t0 = time.time()
    stop = min(epochs, args.stop_after_epoch or epochs)
    for epoch in range(start, stop):
        model.train()
        order = shuffle_order(args.seed, epoch, n)
        bar = tqdm(total=nb, desc=f"epoch {epoch + 1}/{epochs}", leave=False, file=sys.stderr,
                   disable=args.no_progress or tqdm is None) if tqdm and ranks.main else None
        tot_loss, correct = 0.0, 0
        for b in range(nb):
            rows, weight = ranks.share(order[b * bs:(b + 1) * bs])
            idx = vk.tensor(rows, device=args.device)
            xb, yb = Xtr_v[idx], ytr_v[idx]
            with autocast:
                logits = net(xb)
                loss = F.cross_entropy(logits, yb)
            opt.zero_grad()
            scaler.scale(loss if weight == 1.0 else loss * weight).backward()
            scaler.step(opt)
            scaler.update()
            if weight:  # a share weighted 0 is a stand-in row (see Ranks.share): not counted
                tot_loss += float(loss.item()) * len(idx)
                correct += int((logits.argmax(1) == yb).sum().item())
            if bar:
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.4f}")
        if bar:
            bar.close()
        sched.step()
        tot_loss, correct = ranks.sum([tot_loss, correct])
        if not ranks.main:
            continue
        te_loss, te_acc, _ = evaluate(model, args.model, Xte, yte, args.device)
        rec = dict(epoch=epoch + 1, train_loss=tot_loss / n, train_acc=correct / n, test_loss=te_loss,
                   test_acc=te_acc, lr=opt.param_groups[0]["lr"])
        history.append(rec)
        print(f"epoch {epoch + 1:3d}/{epochs}  train loss {rec['train_loss']:.4f} acc {rec['train_acc']:.4f}  "
              f"test loss {te_loss:.4f} acc {te_acc:.4f}", flush=True)
        ck = {"config": {"model": args.model, "seed": args.seed, "epochs": epochs, "batch_size": bs,
                         "dtype": args.dtype},
              "epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict(),
              "scheduler": sched.state_dict(), "scaler": scaler.state_dict(),
              "rng_state": vk.get_rng_state().tolist(),
              "shuffle": {"kind": "numpy.default_rng([seed, epoch]).permutation", "seed": args.seed,
                          "next_epoch": epoch + 1},
              "history": history}
        vk.save(ck, ckpt_path)  # atomic: temp file, fsync, rename
        write_json_atomic(os.path.join(args.out, "log.json"), history)
        plot(os.path.join(args.out, "curves.png"), history)

    ranks.finish()
    if stop < epochs:
        ranks.print(f"stopped after epoch {stop}/{epochs}; --resume continues")
        return None
    if not ranks.main:
        return None
    _, acc, pred = evaluate(model, args.model, Xte, yte, args.device)
    vk.save(model.state_dict(), os.path.join(args.out, "model.safetensors"))
    print(f"final test accuracy {acc:.4f} ({len(yte)} images; {time.time() - t0:.1f} s of training here)")
    print("confusion matrix (rows: true digit, columns: predicted):")
    cm = confusion_matrix(yte, pred)
    print("     " + " ".join(f"{j:4d}" for j in range(10)))
    for i in range(10):
        print(f"{i:4d} " + " ".join(f"{v:4d}" for v in cm[i]))
    return acc


if __name__ == "__main__":
    main()

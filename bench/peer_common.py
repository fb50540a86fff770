"""What bench/peers.py's ports share: which peers exist, their errors, and what each port reads off
the torch model that bench/train_models.py builds (batches, optimizer settings)."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from train_models import _rng, train_parts  # noqa: E402,F401  (_rng: re-exported, the ports' seeds)

PEERS = ("jax", "tinygrad", "mlx")
LIBS = ("vkml", "torch") + PEERS
MODULE = {"jax": "jax", "tinygrad": "tinygrad", "mlx": "mlx.core"}
TRAIN = ("mlp", "cnn", "transformer", "gpt_small", "mnist_net", "resnet18", "lstm")
IDS = [f"train.{k}" for k in TRAIN] + ["matmul.1024", "matmul.2048", "eltwise.add", "eltwise.exp"]
GPT_CFG = {"transformer": dict(vocab=96, context=64, d=128, layers=2, heads=4),   # train_models.gpt_model
           "gpt_small": dict(vocab=65, context=64, d=64, layers=4, heads=4)}
CLIP = ("transformer", "gpt_small")  # train_setup clips the gradient norm to 1.0 for these


class PeerNotInstalled(ImportError):
    """The peer's package cannot be imported here: its rows read "not installed"."""


class NotApplicable(Exception):
    """The peer lacks a piece of this workload: its row reads "n/a: <reason>"."""


def installed(peer):
    try:
        return importlib.util.find_spec(MODULE[peer]) is not None
    except (ImportError, ValueError):  # a parent package missing (mlx for mlx.core)
        return False


def need(peer):
    if not installed(peer):
        raise PeerNotInstalled(f"{peer} not installed")


def versions():
    from importlib import metadata
    out = {}
    for dist in ("torch", "jax", "jaxlib", "tinygrad", "mlx"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out

# ----------------------------------------------------------------------------------------------------------
# What every port shares with the torch model: the batches and the optimizer's settings, read off the
# torch objects that bench/train_models.py builds (so a change there cannot leave a port behind).
# ----------------------------------------------------------------------------------------------------------


def torch_spec(kind, np):
    import torch
    _, opt, batches = train_parts(kind, torch, np)
    groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    data = [(x.numpy(), y.numpy().astype(np.int32)) for x, y in batches]  # int32: JAX's default width
    return type(opt).__name__, groups, data


def group_of(ndim, groups):
    """train_parts' transformer has two groups: matrices (dim >= 2, decayed) and the rest."""
    return groups[0] if len(groups) == 1 or ndim >= 2 else groups[1]


def cycle(items):
    state = {"i": 0}

    def nxt():
        item = items[state["i"] % len(items)]
        state["i"] += 1
        return item
    return nxt



def loss_value(loss):
    import numpy as np
    return float(np.asarray(loss.numpy() if hasattr(loss, "numpy") else loss))


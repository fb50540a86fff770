# A regression MLP trained with gradient accumulation, AdamW and a step LR schedule; halfway it
# saves a checkpoint (model, optimizer, scheduler, step), builds everything again, loads it and
# goes on. The losses after the resume continue those before it.
# tolerance: 1e-10
import math
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ACCUMULATE = 4
STEPS = 12


def init_weights(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            fan_in = p.shape[-1] if p.dim() > 1 else p.shape[0]
            pattern = torch.sin(torch.arange(p.numel(), dtype=p.dtype) * 0.7 + i)
            p.copy_(pattern.reshape(p.shape) / math.sqrt(fan_in))


class Regressor(nn.Module):
    def __init__(self, d_in, hidden):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        x = F.gelu(self.fc1(x))
        x = torch.tanh(self.fc2(x)) + x
        return self.out(x).squeeze(-1)


def build():
    model = Regressor(8, 32).double()
    init_weights(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    return model, optimizer, scheduler


def train(model, optimizer, scheduler, data, first, last):
    xs, ys = data
    for step in range(first, last):
        optimizer.zero_grad()
        total = 0.0
        for micro in range(ACCUMULATE):
            rows = slice((step * ACCUMULATE + micro) % 16 * 8, (step * ACCUMULATE + micro) % 16 * 8 + 8)
            loss = F.mse_loss(model(xs[rows]), ys[rows]) / ACCUMULATE
            loss.backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        print(f"step {step} loss {total!r}")


def main():
    rng = np.random.RandomState(0)
    x = rng.randn(128, 8)
    y = np.sin(x @ rng.randn(8)) + 0.1 * x[:, 0] ** 2
    data = (torch.tensor(x), torch.tensor(y))

    model, optimizer, scheduler = build()
    train(model, optimizer, scheduler, data, 0, STEPS // 2)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "step": STEPS // 2}, path)
        del model, optimizer, scheduler
        model, optimizer, scheduler = build()
        state = torch.load(path)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    train(model, optimizer, scheduler, data, state["step"], STEPS)
    return 0


if __name__ == "__main__":
    sys.exit(main())

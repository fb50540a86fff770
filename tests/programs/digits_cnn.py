# The classic MNIST example's shape on scikit-learn's 8x8 digits: a small CNN (conv, max-pool,
# dropout off, two linear layers, log_softmax + nll_loss), SGD with momentum and StepLR, test
# accuracy at each epoch's end, in float32.
# tolerance: 1e-4
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits


def init_weights(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            fan_in = p[0].numel() if p.dim() > 1 else p.shape[0]
            pattern = torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.91 + 0.3 * i)
            p.copy_(pattern.reshape(p.shape) / math.sqrt(fan_in))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(16 * 3 * 3, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def main():
    digits = load_digits()
    x = torch.tensor(digits.images[:, None, :, :] / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.long)
    train_x, train_y, test_x, test_y = x[:256], y[:256], x[1500:1700], y[1500:1700]

    model = Net()
    init_weights(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    step = 0
    for epoch in range(3):
        model.train()
        for start in range(0, 256, 32):
            data, target = train_x[start:start + 32], train_y[start:start + 32]
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            print(f"step {step} loss {loss.item()!r}")
            step += 1
        scheduler.step()
        model.eval()
        with torch.no_grad():
            out = model(test_x)
            test_loss = F.nll_loss(out, test_y, reduction="sum").item() / len(test_y)
            correct = out.argmax(dim=1, keepdim=True).eq(test_y.view_as(out[:, :1])).sum().item()
        print(f"epoch {epoch} test loss {test_loss:.4f} accuracy {correct}/{len(test_y)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

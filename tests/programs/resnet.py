# A small ResNet as torchvision writes it (BasicBlock: conv-bn-relu-conv-bn plus a 1x1 conv
# shortcut when the shape changes, AdaptiveAvgPool2d, fc), trained with SGD + momentum + weight
# decay and cosine annealing on 8x8 digits, then evaluated (BatchNorm's running statistics), in
# float32.
# tolerance: 2e-4
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits


def init_weights(model):
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            if "bn" in name or "shortcut.1" in name:
                p.fill_(1.0 if name.endswith("weight") else 0.0)
                continue
            fan_in = p[0].numel() if p.dim() > 1 else p.shape[0]
            pattern = torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 1.3 + i)
            p.copy_(pattern.reshape(p.shape) * math.sqrt(2.0 / fan_in))


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, num_blocks=(1, 1), num_classes=10):
        super().__init__()
        self.in_planes = 8
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = self._make_layer(8, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(16, num_blocks[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)

    def _make_layer(self, planes, num_blocks, stride):
        layers = []
        for s in [stride] + [1] * (num_blocks - 1):
            layers.append(BasicBlock(self.in_planes, planes, s))
            self.in_planes = planes
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer2(self.layer1(out))
        out = torch.flatten(self.avgpool(out), 1)
        return self.fc(out)


def main():
    digits = load_digits()
    x = torch.tensor(digits.images[:, None] / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target)
    model = ResNet()
    init_weights(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=12)
    for step in range(12):
        inputs, targets = x[step * 32:(step + 1) * 32], y[step * 32:(step + 1) * 32]
        model.train()
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        scheduler.step()
        print(f"step {step} loss {loss.item()!r}")
    model.eval()
    with torch.no_grad():
        test_loss = criterion(model(x[1600:1700]), y[1600:1700])
    print(f"step 12 loss {test_loss.item()!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

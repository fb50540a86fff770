# The structure of pytorch/examples' mnist/main.py on 8x8 digits: a Dataset subclass, DataLoader
# for train and test (batch_size, no shuffling so that both frameworks see the same batches),
# Dropout in the model (off: p=0 here, it would draw from the RNG), Adadelta, StepLR(gamma=0.7),
# train()/test() functions with log intervals, in float32.
# tolerance: 1e-4
import argparse
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from sklearn.datasets import load_digits
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class Digits(Dataset):
    def __init__(self, train=True):
        d = load_digits()
        rows = slice(0, 320) if train else slice(1500, 1660)
        self.images = (d.images[rows] / 16.0).astype(np.float32)
        self.targets = d.target[rows]

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        image = torch.from_numpy(self.images[i]).unsqueeze(0)
        return (image - 0.3) / 0.4, int(self.targets[i])


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.0)
        self.dropout2 = nn.Dropout(0.0)
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def init_weights(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            fan_in = p[0].numel() if p.dim() > 1 else p.shape[0]
            pattern = torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.61 + i)
            p.copy_(pattern.reshape(p.shape) / math.sqrt(fan_in))


def train(args, model, device, train_loader, optimizer, epoch, counter):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        print(f"step {counter[0]} loss {loss.item()!r}")
        counter[0] += 1
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


def test(model, device, test_loader):
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    print("Test set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)".format(
        test_loss, correct, len(test_loader.dataset), 100. * correct / len(test_loader.dataset)))


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--log-interval", type=int, default=5)
    args = parser.parse_args([])
    use_cuda = torch.cuda.is_available()
    torch.manual_seed(1)
    device = torch.device("cuda" if use_cuda else "cpu")
    train_kwargs = {"batch_size": args.batch_size}
    test_kwargs = {"batch_size": 64}
    train_loader = DataLoader(Digits(train=True), **train_kwargs)
    test_loader = DataLoader(Digits(train=False), **test_kwargs)

    model = Net().to(device)
    init_weights(model)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    counter = [0]
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch, counter)
        test(model, device, test_loader)
        scheduler.step()
    return 0


if __name__ == "__main__":
    sys.exit(main())

# Polynomial regression with L-BFGS and a strong-Wolfe line search, the closure form of
# torch.optim.LBFGS, in float64.
# tolerance: 1e-9
import sys

import numpy as np
import torch


def features(x, degree):
    return torch.stack([x ** i for i in range(1, degree + 1)], dim=1)


def main():
    rng = np.random.RandomState(7)
    x = torch.tensor(np.linspace(-1, 1, 64))
    y = torch.tensor(np.sin(3 * np.linspace(-1, 1, 64)) + 0.05 * rng.randn(64))
    model = torch.nn.Linear(5, 1).double()
    with torch.no_grad():
        model.weight.copy_(torch.linspace(-0.5, 0.5, 5).reshape(1, 5))
        model.bias.fill_(0.1)
    inputs = features(x, 5)
    optimizer = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=20, history_size=10,
                                  line_search_fn="strong_wolfe")
    for step in range(6):
        def closure():
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(inputs).squeeze(1), y)
            loss.backward()
            return loss
        loss = optimizer.step(closure)
        print(f"step {step} loss {loss.item()!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

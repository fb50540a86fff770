"""Gaussian-process regression from scratch, as GP tutorials write it: an RBF kernel whose
diagonal takes the noise in place (`K.diagonal().add_(...)`, a write through a view of a result
that requires grad), a Cholesky factor, and the kernel's hyperparameters fitted by Adam on the
negative log marginal likelihood; then the posterior mean written column by column into a buffer
(`pred[:, j].copy_(...)`) and fitted to a second target."""
# tolerance: 1e-9
import math

import numpy as np
import torch

rng = np.random.default_rng(0)
X = torch.tensor(rng.uniform(-3.0, 3.0, size=(24, 1)))
Y = torch.tensor(np.stack([np.sin(X.numpy()[:, 0]), np.cos(X.numpy()[:, 0])], 1)
                 + 0.1 * rng.normal(size=(24, 2)))

log_lengthscale = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
log_scale = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
log_noise = torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)
mix = torch.tensor([[1.0, 0.2], [0.1, 0.8]], dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([log_lengthscale, log_scale, log_noise, mix], lr=0.05)


def kernel(a, b):
    d2 = (a - b.T) ** 2
    return log_scale.exp() ** 2 * torch.exp(-0.5 * d2 / log_lengthscale.exp() ** 2)


def negative_log_likelihood():
    K = kernel(X, X)
    K.diagonal().add_(log_noise.exp() ** 2 + 1e-6)  # K + noise^2 I, in place
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(Y, L)
    n = Y.shape[0]
    nll = 0.5 * (Y * alpha).sum() + Y.shape[1] * (L.diagonal().log().sum()
                                                    + 0.5 * n * math.log(2 * math.pi))
    # the posterior mean at the inputs, one output column at a time, into a buffer
    pred = torch.zeros(n, 2, dtype=torch.float64)
    Ks = kernel(X, X)
    for j in range(2):
        pred[:, j].copy_(Ks @ alpha[:, j])
    fit = ((pred @ mix - Y) ** 2).mean()
    return nll + fit


for step in range(25):
    opt.zero_grad()
    loss = negative_log_likelihood()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.12f}")

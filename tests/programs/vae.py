# A variational autoencoder on 8x8 digit-like images (the reparameterisation trick with noise
# drawn ahead by numpy), trained with Adam: reconstruction BCE + KL divergence, in float32.
# tolerance: 2e-5
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def init_weights(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            fan_in = p.shape[-1] if p.dim() > 1 else p.shape[0]
            pattern = torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i)
            p.copy_(pattern.reshape(p.shape) / math.sqrt(fan_in))


class VAE(nn.Module):
    def __init__(self, d_in=64, hidden=48, latent=6):
        super().__init__()
        self.enc = nn.Linear(d_in, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec1 = nn.Linear(latent, hidden)
        self.dec2 = nn.Linear(hidden, d_in)

    def encode(self, x):
        h = F.relu(self.enc(x))
        return self.mu(h), self.logvar(h)

    def decode(self, z):
        return torch.sigmoid(self.dec2(F.relu(self.dec1(z))))

    def forward(self, x, eps):
        mu, logvar = self.encode(x)
        z = mu + eps * torch.exp(0.5 * logvar)
        return self.decode(z), mu, logvar


def loss_function(recon, x, mu, logvar):
    bce = F.binary_cross_entropy(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (bce + kld) / x.shape[0]


def main():
    rng = np.random.RandomState(1)
    images = (rng.rand(96, 64) < 0.3).astype(np.float32) * 0.9 + 0.05
    noise = rng.randn(30, 32, 6).astype(np.float32)
    data = torch.from_numpy(images)

    model = VAE()
    init_weights(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    for step in range(30):
        batch = data[(step % 3) * 32:(step % 3) * 32 + 32]
        optimizer.zero_grad()
        recon, mu, logvar = model(batch, torch.from_numpy(noise[step]))
        loss = loss_function(recon, batch, mu, logvar)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item()!r}")
    model.eval()
    with torch.no_grad():
        sample = model.decode(torch.zeros(4, 6))
    print(f"step 30 loss {float(sample.mean())!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

# PyTorch's DCGAN example, scaled down: a ConvTranspose2d generator (noise -> 16x16 image) with
# BatchNorm2d and ReLU, a Conv2d discriminator with LeakyReLU, BCELoss, two Adam optimizers, and the
# example's alternating steps (D on real and detached fake, then G), on scikit-learn's digits
# upscaled to 16x16, in float64. The noise is drawn ahead by numpy.
# tolerance: 1e-10
import math
import sys

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits

nz, ngf, ndf, nc = 8, 8, 8, 1


def init_weights(model, phase):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            fan_in = p[0].numel() if p.dim() > 1 else p.shape[0]
            pattern = torch.sin(torch.arange(p.numel(), dtype=torch.float64) * 0.73 + 0.4 * i + phase)
            if p.dim() == 1:  # BatchNorm's weight near 1 and bias near 0, as the example's init
                p.copy_(1.0 + 0.02 * pattern if i % 2 == 0 else 0.02 * pattern)
            else:
                p.copy_(pattern.reshape(p.shape) / math.sqrt(fan_in))


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),    # 4x4
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),   # 8x8
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),        # 16x16
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),                  # 8x8
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),             # 4x4
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),               # 1x1
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def main():
    images = load_digits().images[:96] / 8.0 - 1.0                    # in [-1, 1]
    images = np.kron(images, np.ones((2, 2)))[:, None, :, :]           # 16x16
    rng = np.random.RandomState(3)
    batch, steps = 16, 6
    noise = rng.standard_normal((steps, batch, nz, 1, 1))

    netG, netD = Generator().double(), Discriminator().double()
    init_weights(netG, 0.0)
    init_weights(netD, 1.0)
    criterion = nn.BCELoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
    real_label, fake_label = 1.0, 0.0

    for i in range(steps):
        real = torch.tensor(images[(i * batch) % 96:(i * batch) % 96 + batch], dtype=torch.float64)
        # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        label = torch.full((batch,), real_label, dtype=torch.float64)
        output = netD(real)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        fake = netG(torch.tensor(noise[i]))
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) update G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()
        print(f"step {i} loss {(errD + errG).item()!r}")
        print(f"[{i}/{steps}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} "
              f"D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

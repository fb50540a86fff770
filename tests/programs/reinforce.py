# A REINFORCE policy as pytorch/examples' reinforcement_learning/reinforce.py writes it -- a
# Categorical over the policy's probabilities, -log_prob * normalised return -- on a small
# deterministic environment in numpy instead of gym (actions drawn by numpy from the policy's
# probabilities), the model run through torch.compile, and an EMA of its weights kept with
# torch.optim.swa_utils; an exact Normal policy term and a KL to a fixed prior ride along.
# tolerance: 1e-4
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, Normal, kl_divergence
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn


def init_weights(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            fan_in = p.shape[-1] if p.dim() > 1 else p.shape[0]
            pattern = torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i)
            p.copy_(pattern.reshape(p.shape) / math.sqrt(fan_in))


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 64)
        self.affine2 = nn.Linear(64, 2)
        self.log_std = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        h = F.relu(self.affine1(x))
        return F.softmax(self.affine2(h), dim=1), h.mean(1)


def env_step(state, action):
    """A pole on a cart, linearised: the action pushes left or right."""
    a = np.array([[1.0, 0.05, 0.0, 0.0], [0.0, 1.0, -0.1, 0.0], [0.0, 0.0, 1.0, 0.05], [0.0, 0.0, 0.6, 1.0]])
    push = np.array([0.0, 0.1, 0.0, -0.15]) * (1.0 if action == 1 else -1.0)
    nxt = a @ state + push
    return nxt, 1.0 - min(1.0, abs(nxt[2]) * 4.0)


policy = Policy()
init_weights(policy)
model = torch.compile(policy, backend="eager")
ema = AveragedModel(policy, multi_avg_fn=get_ema_multi_avg_fn(0.9))
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
prior = Normal(torch.zeros(1), torch.ones(1))
rng = np.random.default_rng(0)
gamma, eps = 0.99, np.finfo(np.float32).eps.item()

for episode in range(12):
    state = rng.uniform(-0.05, 0.05, 4)
    log_probs, rewards, values = [], [], []
    for t in range(25):
        probs, value = model(torch.tensor(state, dtype=torch.float32).unsqueeze(0))
        m = Categorical(probs)
        action = int(rng.random() > probs[0, 0].item())  # the draw, from numpy
        log_probs.append(m.log_prob(torch.tensor([action])))
        values.append(value)
        state, reward = env_step(state, action)
        rewards.append(reward)
    R, returns = 0.0, []
    for r in rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_loss = torch.cat([-lp * r for lp, r in zip(log_probs, returns)]).sum()
    value_dist = Normal(torch.cat(values), policy.log_std.exp())
    value_loss = -value_dist.log_prob(returns).mean()
    kl = kl_divergence(Normal(policy.log_std, torch.ones(1)), prior).sum()
    loss = policy_loss + 0.1 * value_loss + 0.01 * kl
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ema.update_parameters(policy)
    print(f"step {episode} loss {loss.item():.6f}")
    probe = torch.tensor([[0.01, -0.02, 0.03, 0.0]])
    print(f"step {100 + episode} loss {ema(probe)[0][0, 0].item():.6f}")

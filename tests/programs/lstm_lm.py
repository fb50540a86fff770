# The word-level language model of PyTorch's examples (word_language_model: RNNModel with an
# Embedding encoder, a 2-layer nn.LSTM and a Linear decoder), trained with truncated
# backpropagation through time as its main.py does: batchify, get_batch, repackage_hidden, NLLLoss
# over log_softmax, clip_grad_norm_ and manual SGD on p.data, in float64. The corpus is token ids
# from numpy's seeded generator; dropout is 0 (nothing random inside a step). Issue #16 item 2.
# tolerance: 1e-10
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def main():
    ntokens, bsz, bptt, lr, clip = 40, 4, 8, 2.0, 0.25
    rng = np.random.default_rng(0)
    # A corpus with structure to learn: each token mostly follows from the one before.
    ids = [0]
    for _ in range(400):
        ids.append((ids[-1] * 7 + 3) % ntokens if rng.random() < 0.8 else int(rng.integers(ntokens)))
    train_data = batchify(torch.tensor(ids, dtype=torch.long), bsz)

    model = RNNModel("LSTM", ntokens, 16, 24, 2, dropout=0.0).double()
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float64) * 0.37 + i)
                    .reshape(p.shape) * 0.2)
    criterion = nn.NLLLoss()

    model.train()
    hidden = model.init_hidden(bsz)
    step = 0
    for epoch in range(2):
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i, bptt)
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            print(f"step {step} loss {loss.item()!r}")
            step += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

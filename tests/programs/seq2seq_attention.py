# A sequence-to-sequence Transformer as PyTorch's translation tutorial writes it: token embeddings
# scaled by sqrt(d_model) plus a sinusoidal positional-encoding buffer, nn.Transformer (batch_first)
# with the causal target mask from generate_square_subsequent_mask and key padding masks for the
# source and the target, a linear generator; teacher forcing, cross_entropy ignoring the padding,
# Adam, gradient clipping. It learns to reverse digit sequences of varying length; then greedy
# decoding. float64.
# tolerance: 1e-8
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, BOS, EOS = 0, 1, 2
VOCAB = 13  # the specials, then the digits 0-9 as tokens 3..12
MAX_LEN = 6


def init_weights(model):
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            if "norm" in name:
                p.fill_(1.0 if name.endswith("weight") else 0.0)
                continue
            fan_in = p.shape[-1] if p.dim() > 1 else p.shape[0]
            pattern = torch.sin(torch.arange(p.numel(), dtype=torch.float64) * 0.61 + i)
            p.copy_(pattern.reshape(p.shape) * (1.0 / math.sqrt(fan_in)))


def make_batch(rng, batch):
    """Source digits (padded), the reversed target after BOS (decoder input) and before EOS (labels)."""
    src = np.full((batch, MAX_LEN), PAD, dtype=np.int64)
    tgt_in = np.full((batch, MAX_LEN + 1), PAD, dtype=np.int64)
    tgt_out = np.full((batch, MAX_LEN + 1), PAD, dtype=np.int64)
    for i, n in enumerate(rng.randint(3, MAX_LEN + 1, size=batch)):
        seq = rng.randint(3, VOCAB, size=n)
        src[i, :n] = seq
        tgt_in[i, 0] = BOS
        tgt_in[i, 1:n + 1] = seq[::-1]
        tgt_out[i, :n] = seq[::-1]
        tgt_out[i, n] = EOS
    return torch.tensor(src), torch.tensor(tgt_in), torch.tensor(tgt_out)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=32):
        super().__init__()
        position = torch.arange(0, max_len, dtype=torch.float64).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, :x.size(1)]


class Seq2SeqTransformer(nn.Module):
    def __init__(self, d_model=32, nhead=4, num_layers=2, dim_feedforward=64):
        super().__init__()
        self.d_model = d_model
        self.src_tok_emb = nn.Embedding(VOCAB, d_model)
        self.tgt_tok_emb = nn.Embedding(VOCAB, d_model)
        self.positional_encoding = PositionalEncoding(d_model)
        self.transformer = nn.Transformer(d_model=d_model, nhead=nhead, num_encoder_layers=num_layers,
                                          num_decoder_layers=num_layers, dim_feedforward=dim_feedforward,
                                          dropout=0.0, batch_first=True)
        self.generator = nn.Linear(d_model, VOCAB)

    def embed(self, emb, tokens):
        return self.positional_encoding(emb(tokens) * math.sqrt(self.d_model))

    def forward(self, src, tgt):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), dtype=torch.float64)
        src_padding_mask = torch.zeros(src.shape, dtype=torch.float64).masked_fill(src == PAD, float("-inf"))
        tgt_padding_mask = torch.zeros(tgt.shape, dtype=torch.float64).masked_fill(tgt == PAD, float("-inf"))
        out = self.transformer(self.embed(self.src_tok_emb, src), self.embed(self.tgt_tok_emb, tgt),
                               tgt_mask=tgt_mask, src_key_padding_mask=src_padding_mask,
                               tgt_key_padding_mask=tgt_padding_mask, memory_key_padding_mask=src_padding_mask)
        return self.generator(out)

    @torch.no_grad()
    def greedy_decode(self, src):
        src_padding_mask = src == PAD
        memory = self.transformer.encoder(self.embed(self.src_tok_emb, src), src_key_padding_mask=src_padding_mask)
        ys = torch.full((src.size(0), 1), BOS, dtype=torch.long)
        for _ in range(MAX_LEN + 1):
            tgt_mask = nn.Transformer.generate_square_subsequent_mask(ys.size(1), dtype=torch.float64)
            out = self.transformer.decoder(self.embed(self.tgt_tok_emb, ys), memory, tgt_mask=tgt_mask,
                                           memory_key_padding_mask=src_padding_mask)
            next_token = self.generator(out[:, -1]).argmax(dim=-1, keepdim=True)
            ys = torch.cat([ys, next_token], dim=1)
        return ys[:, 1:]


def main():
    rng = np.random.RandomState(7)
    model = Seq2SeqTransformer().double()
    init_weights(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.98), eps=1e-9)
    model.train()
    for step in range(16):  # Adam turns the rounding noise of zero-gradient directions (the key
        # projection's bias cannot change softmax) into full steps: further on, the runs drift apart
        src, tgt_in, tgt_out = make_batch(rng, 16)
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        print(f"step {step} loss {loss.item()!r}")
    model.eval()
    src, _, tgt_out = make_batch(rng, 8)
    pred = model.greedy_decode(src)
    assert pred.shape == (8, MAX_LEN + 1) and int(pred.min()) >= 0 and int(pred.max()) < VOCAB
    known = tgt_out != PAD
    print("token accuracy:", float((pred == tgt_out)[known].double().mean()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

# PyTorch's text classification tutorial (AG_NEWS with nn.EmbeddingBag) on a synthetic corpus: each
# class draws its tokens mostly from its own band of the vocabulary; variable-length texts are
# batched as one flat token tensor with offsets; EmbeddingBag (mean) + Linear, CrossEntropyLoss,
# SGD with StepLR and gradient clipping, then an evaluation pass, in float64.
# tolerance: 1e-10
import math
import sys

import numpy as np
import torch
from torch import nn

VOCAB, EMBED, CLASSES = 60, 16, 4


def make_corpus(rng, n):
    texts, labels = [], []
    for _ in range(n):
        label = int(rng.randint(CLASSES))
        length = int(rng.randint(3, 12))
        own = rng.randint(label * 15, label * 15 + 15, size=length)
        noise = rng.randint(0, VOCAB, size=length)
        texts.append(np.where(rng.rand(length) < 0.7, own, noise))
        labels.append(label)
    return texts, labels


def collate_batch(texts, labels):
    label_list = torch.tensor(labels, dtype=torch.int64)
    text_list = [torch.tensor(t, dtype=torch.int64) for t in texts]
    offsets = torch.tensor([0] + [len(t) for t in texts[:-1]]).cumsum(dim=0)
    return label_list, torch.cat(text_list), offsets


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):  # the tutorial's uniform(-0.5, 0.5), as a fixed pattern
        with torch.no_grad():
            for i, p in enumerate(self.parameters()):
                pattern = torch.sin(torch.arange(p.numel(), dtype=torch.float64) * 1.37 + i)
                p.copy_(0.5 * pattern.reshape(p.shape))

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


def main():
    rng = np.random.RandomState(7)
    train_texts, train_labels = make_corpus(rng, 128)
    test_texts, test_labels = make_corpus(rng, 64)
    model = TextClassificationModel(VOCAB, EMBED, CLASSES).double()
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    batch, step = 16, 0
    for epoch in range(3):
        model.train()
        for start in range(0, len(train_texts), batch):
            label, text, offsets = collate_batch(train_texts[start:start + batch],
                                                 train_labels[start:start + batch])
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            print(f"step {step} loss {loss.item()!r}")
            step += 1
        scheduler.step()
        model.eval()
        total_acc, total_count = 0, 0
        with torch.no_grad():
            for start in range(0, len(test_texts), batch):
                label, text, offsets = collate_batch(test_texts[start:start + batch],
                                                     test_labels[start:start + batch])
                predicted_label = model(text, offsets)
                total_acc += (predicted_label.argmax(1) == label).sum().item()
                total_count += label.size(0)
        print(f"epoch {epoch} accuracy {total_acc / total_count:.3f} lr {scheduler.get_last_lr()[0]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

# The "classifying names with a character-level RNN" tutorial's network: an RNN cell written by
# hand from nn.Linear (input and hidden concatenated, LogSoftmax output), trained one name at a
# time with NLLLoss and manual SGD on p.data (p.data.add_(p.grad.data, alpha=-lr)), in float64.
# tolerance: 1e-10
import string
import sys

import torch
import torch.nn as nn

ALL_LETTERS = string.ascii_letters + " .,;'"
N_LETTERS = len(ALL_LETTERS)
NAMES = {"English": ["Abbott", "Baker", "Carter", "Dawson"], "French": ["Beaumont", "Chevalier",
         "Dubois", "Fontaine"], "Italian": ["Abbadelli", "Bianchi", "Colombo", "Esposito"]}
CATEGORIES = list(NAMES)


def line_to_tensor(line):
    tensor = torch.zeros(len(line), 1, N_LETTERS, dtype=torch.float64)
    for li, letter in enumerate(line):
        tensor[li][0][ALL_LETTERS.find(letter)] = 1
    return tensor


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = torch.tanh(self.i2h(combined))
        output = self.softmax(self.i2o(combined))
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size, dtype=torch.float64)


def main():
    rnn = RNN(N_LETTERS, 24, len(CATEGORIES)).double()
    with torch.no_grad():
        for i, p in enumerate(rnn.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float64) * 0.3 + i)
                    .reshape(p.shape) * 0.1)
    criterion = nn.NLLLoss()
    learning_rate = 0.05
    pairs = [(c, n) for c in CATEGORIES for n in NAMES[c]]
    step = 0
    for epoch in range(3):
        for category, name in pairs:
            category_tensor = torch.tensor([CATEGORIES.index(category)], dtype=torch.long)
            line_tensor = line_to_tensor(name)
            hidden = rnn.initHidden()
            rnn.zero_grad()
            for i in range(line_tensor.size()[0]):
                output, hidden = rnn(line_tensor[i], hidden)
            loss = criterion(output, category_tensor)
            loss.backward()
            for p in rnn.parameters():
                p.data.add_(p.grad.data, alpha=-learning_rate)
            print(f"step {step} loss {loss.item()!r}")
            step += 1
    guess = CATEGORIES[output.topk(1)[1][0].item()]
    print("last guess:", guess)
    return 0


if __name__ == "__main__":
    sys.exit(main())

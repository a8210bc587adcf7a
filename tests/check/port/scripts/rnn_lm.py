"""A word-level LSTM language model; the hidden state is carried across batches."""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
vocab, bsz, bptt = 50, 4, 8


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].reshape(-1)
    return data, target


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, input, hidden):
        emb = self.encoder(input)
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(output).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz):
        return (
            torch.zeros(self.nlayers, bsz, self.nhid),
            torch.zeros(self.nlayers, bsz, self.nhid),
        )


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


corpus = torch.randint(0, vocab, (200,))
train_data = batchify(corpus, bsz)
model = RNNModel(vocab, 16, 32, 2)
criterion = nn.NLLLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)

for epoch in range(2):
    model.train()
    total_loss = 0.0
    hidden = model.init_hidden(bsz)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        hidden = repackage_hidden(hidden)
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(torch.log_softmax(output, dim=-1), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        total_loss += loss.item()
    print(f"epoch {epoch} ppl {math.exp(total_loss / (batch + 1)):.4f}")

model.eval()
with torch.no_grad():
    hidden = model.init_hidden(bsz)
    data, targets = get_batch(train_data, 0)
    output, hidden = model(data, hidden)
    print("eval loss", round(criterion(torch.log_softmax(output, -1), targets).item(), 5))

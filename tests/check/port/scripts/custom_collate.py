"""Variable-length sequences padded by a custom collate_fn; a mask is built in the loop."""

import torch
from torch import nn
from torch.utils.data import DataLoader


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        length = int(torch.randint(2, 7, (1,), generator=g))
        seq = torch.randn(length, 4, generator=g)
        out.append((seq, int(seq.sum() > 0)))
    return out


def pad_collate(items):
    seqs, labels = zip(*items)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = nn.utils.rnn.pad_sequence(list(seqs), batch_first=True)
    return padded, lengths, torch.tensor(labels)


class MeanPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 6)
        self.out = nn.Linear(6, 2)

    def forward(self, x, mask):
        h = torch.tanh(self.proj(x)) * mask.unsqueeze(-1)
        return self.out(h.sum(1) / mask.sum(1, keepdim=True))


torch.manual_seed(0)
loader = DataLoader(make_data(40, 3), batch_size=8, collate_fn=pad_collate)
model = MeanPool()
opt = torch.optim.SGD(model.parameters(), lr=0.2)
for epoch in range(2):
    total, count = 0.0, 0
    for padded, lengths, labels in loader:
        steps = torch.arange(padded.size(1))
        mask = (steps[None, :] < lengths[:, None]).float()
        loss = nn.functional.cross_entropy(model(padded, mask), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
        count += 1
    print(f"epoch {epoch} mean loss {total / count:.6f}")

model.eval()
correct = 0
with torch.no_grad():
    for padded, lengths, labels in loader:
        mask = (torch.arange(padded.size(1))[None, :] < lengths[:, None]).float()
        correct += (model(padded, mask).argmax(1) == labels).sum().item()
print("train accuracy", correct / 40)

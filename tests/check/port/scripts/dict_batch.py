"""A model fed dict batches (as datasets of records give them), with positions built in forward."""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Records(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(n)
        self.tokens = torch.randint(1, 20, (n, 6), generator=g)
        self.labels = torch.randint(0, 3, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"tokens": self.tokens[i], "label": self.labels[i], "index": i}


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.pos = nn.Embedding(6, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, tokens, mask=None):
        positions = torch.arange(tokens.size(1))
        h = self.embed(tokens) + self.pos(positions)
        if mask is not None:
            h = h * mask.unsqueeze(-1)
        return self.head(h.mean(dim=1))


torch.manual_seed(0)
loader = DataLoader(Records(48), batch_size=12, shuffle=True)
model = Tagger()
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(2):
    model.train()
    for batch in loader:
        logits = model(batch["tokens"], mask=(batch["tokens"] > 2).float())
        loss = loss_fn(logits, batch["label"])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch}: last loss {loss.item():.6f}, last index {batch['index'][-1].item()}")

model.eval()
hits = 0
with torch.no_grad():
    for batch in DataLoader(Records(24), batch_size=8):
        inputs = {"tokens": batch["tokens"]}
        pred = model(**inputs).argmax(-1)
        hits += int((pred == batch["label"]).sum())
print("eval hits", hits)

"""A CPU-only training script, as tutorials write it: `torchport port` makes it run on the GPU.

    torchport port --diff examples/port_cpu_script.py

The README's "Port a CPU script to the GPU" shows that diff. Run it with
`python examples/port_cpu_script.py` (a few seconds on a CPU).
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
features = torch.randn(512, 20)
labels = (features[:, :5].sum(dim=1) > 0).long()
train = DataLoader(TensorDataset(features[:384], labels[:384]), batch_size=32, shuffle=True)
test = DataLoader(TensorDataset(features[384:], labels[384:]), batch_size=128)

model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(dim=1) == y).sum()
    return correct / len(loader.dataset)


for epoch in range(5):
    model.train()
    for x, y in train:
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: test accuracy {evaluate(model, test):.3f}")

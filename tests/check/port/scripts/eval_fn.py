"""Training and evaluation functions that take the model and the loader as arguments."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train_one_epoch(model, loader, optimizer, loss_fn):
    model.train()
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * xb.size(0)
    return total / len(loader.dataset)


def evaluate(model, loader, loss_fn):
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for xb, yb in loader:
            out = model(xb)
            loss_sum += loss_fn(out, yb).item() * xb.size(0)
            correct += (out.argmax(1) == yb).sum().item()
    n = len(loader.dataset)
    return loss_sum / n, correct / n


torch.manual_seed(0)
features = torch.randn(96, 5)
labels = (features[:, 0] > 0).long()
train_dl = DataLoader(TensorDataset(features[:64], labels[:64]), batch_size=16, shuffle=True)
valid_dl = DataLoader(TensorDataset(features[64:], labels[64:]), batch_size=32)

net = nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
for epoch in range(3):
    train_loss = train_one_epoch(net, train_dl, opt, criterion)
    val_loss, val_acc = evaluate(net, valid_dl, criterion)
    print(f"{epoch}: train {train_loss:.6f} valid {val_loss:.6f} acc {val_acc:.3f}")

"""A script with main() and a model built by a function (the usual project layout)."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def build_model(width):
    return nn.Sequential(nn.Linear(4, width), nn.ReLU(), nn.Linear(width, 1))


def make_loader(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 4, generator=g)
    y = x.sum(dim=1, keepdim=True) * 0.5
    return DataLoader(TensorDataset(x, y), batch_size=8)


def main():
    torch.manual_seed(0)
    model = build_model(16)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = make_loader(40, 1)
    for step in range(3):
        for inputs, targets in loader:
            loss = nn.functional.mse_loss(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
    model.eval()
    with torch.no_grad():
        probe = torch.ones(2, 4)
        print("probe", [round(v, 5) for v in model(probe).flatten().tolist()])


if __name__ == "__main__":
    main()

"""cuda_train.py ported to the CPU by hand: the output torchport run --device cpu must match."""

import sys

import torch
from torch import nn

torch.manual_seed(0)
device = torch.device("cpu")

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
model.load_state_dict(torch.load(sys.argv[1], map_location="cpu"))
x = torch.randn(16, 4, device=device)
y = torch.full((16, 1), 0.5)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")

for step in range(3):
    with torch.autocast("cpu"):
        loss = nn.functional.mse_loss(model(x).float(), y)
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    print(f"step {step} loss {loss.item():.8f}")

print(torch.randn(2, 2).tolist())
print(model(torch.ones(1, 4)).item())

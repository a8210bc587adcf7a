"""train_mlp.py ported by hand: runs on whatever device the machine has."""

import torch
import torch.nn as nn

if torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")

torch.manual_seed(0)

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
x, y = x.to(device), y.to(device)
bias = torch.zeros(1, device=device)

for step in range(30):
    opt.zero_grad()
    loss = ((model(x) + bias - y) ** 2).mean()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(step, f"{loss.item():.4f}")

if torch.accelerator.is_available():
    torch.accelerator.synchronize()
if x.device.type != "cpu":
    print("on accelerator")
print("final", f"{loss.item():.4f}", "devices", torch.accelerator.device_count() >= 0)

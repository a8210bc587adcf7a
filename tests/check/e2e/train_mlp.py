"""Train a small MLP on synthetic data: written for a CUDA machine only."""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.cuda.manual_seed_all(0)

device = torch.device("cuda")
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
x, y = x.cuda(), y.to("cuda")
bias = torch.zeros(1).to(device)

for step in range(30):
    opt.zero_grad()
    loss = ((model(x) + bias - y) ** 2).mean()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(step, f"{loss.item():.4f}")

torch.cuda.synchronize()
if x.is_cuda:
    print("on accelerator")
print("final", f"{loss.item():.4f}", "devices", torch.cuda.device_count() >= 0)

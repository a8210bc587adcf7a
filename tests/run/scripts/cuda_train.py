"""A training script written for CUDA only; torchport run must run it unchanged elsewhere."""

import sys

import torch
from torch import nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if not torch.cuda.is_available():
    raise SystemExit("this script needs a GPU")

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).cuda()
model.load_state_dict(torch.load(sys.argv[1], map_location="cuda"))
x = torch.randn(16, 4, device=device)
y = torch.cuda.FloatTensor(16, 1).fill_(0.5)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()

for step in range(3):
    with torch.cuda.amp.autocast():
        loss = nn.functional.mse_loss(model(x).float(), y)
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    torch.cuda.synchronize()
    print(f"step {step} loss {loss.item():.8f}")

print(torch.randn(2, 2).cuda().tolist())
print(model(torch.ones(1, 4).to("cuda:0")).item())

"""amp_checkpoint.py ported by hand: runs on whatever device the machine has."""

import sys

import torch
from torch import nn

if torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")

torch.manual_seed(1)
torch.manual_seed(1)

state = torch.load(sys.argv[1], map_location=device)
model = nn.Linear(4, 2)
model.load_state_dict(state["model"])
model.to(device)
scaler = torch.amp.GradScaler(device.type)
opt = torch.optim.SGD(model.parameters(), lr=0.01)

data = torch.tensor([[1, 2, 3, 4], [4, 3, 2, 1]], dtype=torch.float32, device=device)
target = torch.tensor([0, 1], device=device)
for epoch in range(3):
    opt.zero_grad()
    with torch.amp.autocast(device.type):
        out = model(data)
        loss = nn.functional.cross_entropy(out.float(), target)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    print(epoch, f"{loss.item():.3f}")

print("probs", out.float().softmax(-1).detach().cpu().numpy().round(2).tolist())
if torch.accelerator.is_available():
    torch.accelerator.empty_cache()
used = torch.accelerator.memory_allocated() if torch.accelerator.is_available() else 0
print("mem", used >= 0)

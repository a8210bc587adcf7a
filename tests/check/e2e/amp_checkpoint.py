"""Resume from a checkpoint and fine-tune with AMP: written for a CUDA machine only."""

import sys

import torch
from torch import nn

torch.cuda.manual_seed(1)
torch.manual_seed(1)

state = torch.load(sys.argv[1])
model = nn.Linear(4, 2)
model.load_state_dict(state["model"])
model.cuda()
scaler = torch.cuda.amp.GradScaler()
opt = torch.optim.SGD(model.parameters(), lr=0.01)

data = torch.cuda.FloatTensor([[1, 2, 3, 4], [4, 3, 2, 1]])
target = torch.tensor([0, 1]).cuda()
for epoch in range(3):
    opt.zero_grad()
    with torch.cuda.amp.autocast():
        out = model(data)
        loss = nn.functional.cross_entropy(out.float(), target)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    print(epoch, f"{loss.item():.3f}")

print("probs", out.float().softmax(-1).numpy().round(2).tolist())
torch.cuda.empty_cache()
print("mem", torch.cuda.memory_allocated() >= 0)

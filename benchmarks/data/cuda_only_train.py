"""A CUDA-only training script, written the way such scripts are: the subject of
``benchmarks/bench_gpu_audit_truth.py``, which counts its copies and host waits four ways.

What it does on CUDA, by hand (the benchmark compares, it does not assume these):
the model's 4 parameters copied up once; per step 2 pageable batch copies up and,
every 5th step, one ``.item()``; after training one boolean-mask index (a shape
sync), one ``.cpu()`` of the predictions and one ``.tolist()``.
"""

import torch
from torch import nn

STEPS = 10

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
features = torch.randn(STEPS * 64, 32)
targets = torch.randn(STEPS * 64, 1)

for step in range(STEPS):
    x = features[step * 64 : (step + 1) * 64].cuda()
    y = targets[step * 64 : (step + 1) * 64].to("cuda")
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step}: loss {loss.item():.4f}")

with torch.no_grad():
    scores = model(x).squeeze(1)
    confident = x[scores > 0]
    predictions = scores.cpu()
    signs = (scores > 0).tolist()
print(f"{confident.shape[0]} confident of {len(signs)}; mean prediction {predictions.mean():.4f}")

"""Code that works on a GPU and asks torch.cuda about it behind is_available(): no framework.

`torchport run --device cpu` must run it to the end with the output plain python gives
(plain python on a CPU-only machine takes the else branch; both print the same losses).
"""

import torch
from torch import nn

torch.manual_seed(0)
if torch.cuda.is_available():
    device = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    budget = props.total_memory // 4  # size batches from the device memory
    major, _minor = torch.cuda.get_device_capability()
    dtype = torch.bfloat16 if major >= 8 and torch.cuda.is_bf16_supported() else torch.float32
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.cuda.set_per_process_memory_fraction(0.9)
    torch.cuda.manual_seed_all(0)
    side = torch.cuda.Stream()
    scaler = torch.cuda.amp.GradScaler(enabled=dtype == torch.float16)
    name = torch.cuda.get_device_name()
    assert budget > 0 and name and torch.cuda.device_count() >= 1
else:
    device, dtype, side, scaler = torch.device("cpu"), torch.float32, None, None

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
generator = torch.Generator()
generator.manual_seed(1)
data = torch.randn(64, 8, generator=generator)
target = torch.randn(64, 1, generator=generator)

for epoch in range(3):
    if side is not None:
        torch.cuda.nvtx.range_push(f"epoch {epoch}")
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.cuda.stream(side):
            x = data.to(device, non_blocking=True)
            y = target.to(device, non_blocking=True)
        torch.cuda.current_stream().wait_stream(side)
        x.record_stream(torch.cuda.current_stream())
    else:
        x, y = data.to(device), target.to(device)
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    if side is not None:
        end.record()
        torch.cuda.synchronize()
        assert start.elapsed_time(end) >= 0
        torch.cuda.nvtx.range_pop()
        assert torch.cuda.max_memory_allocated() >= 0
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.empty_cache()
    print(f"epoch {epoch} loss {loss.item():.6f}")

"""Quickstart: train a small MLP on whatever device this machine has.

    python examples/quickstart.py

The same script runs unchanged on a CPU, an NVIDIA or AMD GPU, or Apple silicon:
torchport picks the device, and its DeviceLoader hands over every batch already
there (on a GPU the copies run ahead of the training step, on a side stream).
Set TORCHPORT_DEVICE=cpu (or cuda:1, mps, ...) to choose the device yourself.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import torchport as tp

FEATURES = 32
EPOCHS = 5


def make_dataset(n: int = 4096) -> TensorDataset:
    """A noisy linear regression problem; fresh random data on every run."""
    x = torch.randn(n, FEATURES)
    true_w = torch.randn(FEATURES, 1)
    y = x @ true_w + 0.1 * torch.randn(n, 1)
    return TensorDataset(x, y)


def main() -> None:
    found = tp.available_devices()
    device = tp.pick_device()
    print("devices found, best first:", ", ".join(str(info) for info in found))
    choice = tp.doctor().choice  # the facts behind pick_device(), None if a probe failed
    print(f"picked: {device} ({choice.reason if choice else 'run `torchport doctor` for why'})")

    batches = DataLoader(
        make_dataset(),
        batch_size=128,
        shuffle=True,
        pin_memory=device.type == "cuda",  # page-locked batches copy asynchronously
    )
    loader = tp.DeviceLoader(batches, device)

    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.MSELoss()

    for epoch in range(EPOCHS):
        running = torch.zeros((), device=device)  # summed on the device: no sync per step
        for x, y in loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            running += loss.detach()
        print(f"epoch {epoch}: mean loss {running.item() / len(loader):.4f}")

    stats = loader.stats
    print(f"fed {stats.batches} batches ({stats.tensors} tensors) to {loader.device}")
    if stats.bytes_moved:
        print(
            f"moved {stats.bytes_moved / 1e6:.2f} MB in {stats.copies} copies "
            f"({stats.packed_batches} batches packed into one copy each)"
        )
    else:
        print("moved 0 bytes: the batches were already on the device, so they passed through")


if __name__ == "__main__":
    main()

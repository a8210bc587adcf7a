"""Data-parallel training that runs on whatever the machine has.

    torchport run --nproc 2 examples/ddp_train.py            # 2 workers, GPUs or CPU
    torchport run --nproc 8 --nnodes 2 --node-rank 0 \\
        --rdzv-endpoint head:29400 examples/ddp_train.py     # 2 machines x 8 GPUs

Each worker gets its own device from ``tp.pick_device()`` (``LOCAL_RANK`` picks
the GPU), talks over NCCL on CUDA and gloo elsewhere, and reads its shard of the
data through ``DistributedSampler``. Rank 0 prints the loss.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import torchport as tp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()

    device = tp.pick_device()
    dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # same data and same initial weights in every worker

    features = torch.randn(256, 8)
    targets = features @ torch.linspace(-1.0, 1.0, 8) + 0.1 * torch.randn(256)
    dataset = TensorDataset(features, targets)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)
    batches = DataLoader(
        dataset,
        batch_size=args.batch_size,
        sampler=sampler,
        pin_memory=device.type == "cuda",  # page-locked batches copy asynchronously
    )
    loader = tp.DeviceLoader(batches, device)

    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    ddp = DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None
    )
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)

    for epoch in range(args.epochs):
        loader.set_epoch(epoch)  # reshuffles the shards; passes through to the sampler
        total = torch.zeros((), device=device)
        for x, y in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.mse_loss(ddp(x).squeeze(1), y)
            loss.backward()  # gradients are averaged across workers here
            optimizer.step()
            total += loss.detach()
        dist.all_reduce(total)  # one host sync per epoch, not one per step
        if rank == 0:
            mean = total.item() / (world * len(loader))
            print(f"epoch {epoch} world {world} device {device.type} loss {mean:.4f}")

    dist.destroy_process_group()


if __name__ == "__main__":
    main()

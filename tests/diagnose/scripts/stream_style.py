"""An IterableDataset streamed through a DataLoader and torchport.DeviceLoader.

Test data for the audit's hand count (tests/diagnose/test_scripts.py): a stream that
shards itself across workers (``get_worker_info``), labels computed on the host,
batches fed by ``tp.DeviceLoader``, a loss logged as a Python number, a progress line
of Python floats, and predictions copied back with ``.cpu().numpy()``. Lines the count
refers to end in ``# audit: NAME``.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

import torchport as tp

FEATURES = 10


class Stream(IterableDataset):
    """``n`` examples of random features, labelled by the sign of their sum."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        generator = torch.Generator().manual_seed(self.seed)
        for i in range(self.n):
            x = torch.randn(FEATURES, generator=generator)
            if i % step != start:
                continue
            label = float(x.sum() > 0)  # audit: label
            yield {"features": x, "label": torch.tensor(label)}


class Progress:
    """A progress line of Python numbers, like a minimal tqdm."""

    def __init__(self, total):
        self.total, self.done, self.postfix = total, 0, ""

    def update(self, loss):
        self.done += 1
        self.postfix = f"{self.done}/{self.total} loss={loss:.4f}"
        sys.stdout.write("\r" + self.postfix)


def main():
    torch.manual_seed(0)
    device = tp.pick_device()
    loader = DataLoader(Stream(48, seed=0), batch_size=8)
    feed = tp.DeviceLoader(loader, device)
    model = nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, 1))
    model.to(device)  # audit: model_to
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        bar = Progress(total=6)
        total = 0.0
        for batch in feed:  # audit: train_feed
            logits = model(batch["features"]).squeeze(1)
            loss = F.binary_cross_entropy_with_logits(logits, batch["label"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            value = loss.item()  # audit: loss_item
            total += value
            bar.update(value)
        print(f"\nepoch {epoch}: mean loss {total / bar.done:.4f}")
    predictions = []
    model.eval()
    with torch.no_grad():
        for batch in feed:  # audit: predict_feed
            probs = torch.sigmoid(model(batch["features"]))
            predictions.append(probs.squeeze(1).cpu().numpy())  # audit: to_numpy
    print("positive rate", float(np.concatenate(predictions).mean()))


if __name__ == "__main__":
    main()

"""A map-style dataset with transforms, trained the way pytorch/examples' mnist/main.py is.

Test data for the audit's hand count (tests/diagnose/test_scripts.py): small sizes, no
downloads, no torchvision (its ToTensor/Normalize are written out as torchvision has
them). Lines the count refers to end in ``# audit: NAME``.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class ToTensor:
    """HWC uint8 array -> CHW float tensor in [0, 1], like torchvision's."""

    def __call__(self, pic):
        img = torch.from_numpy(pic).permute(2, 0, 1).contiguous()
        return img.to(dtype=torch.float32).div(255)


class Normalize:
    """Per-channel (x - mean) / std, like torchvision's functional normalize."""

    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, tensor):
        mean = torch.as_tensor(self.mean, dtype=tensor.dtype, device=tensor.device)  # audit: mean
        std = torch.as_tensor(self.std, dtype=tensor.dtype, device=tensor.device)  # audit: std
        return tensor.sub(mean[:, None, None]).div(std[:, None, None])


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


class Digits(Dataset):
    """Random 12x12 "digits", stored and read back the way torchvision's MNIST does."""

    def __init__(self, n, seed, transform=None):
        generator = torch.Generator().manual_seed(seed)
        self.data = torch.randint(0, 256, (n, 12, 12), dtype=torch.uint8, generator=generator)
        self.targets = torch.randint(0, 10, (n,), generator=generator)
        self.transform = transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])  # audit: target
        img = img.numpy()[:, :, None]  # audit: numpy
        if self.transform is not None:
            img = self.transform(img)
        return img, target


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(8 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)  # audit: train_to
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            seen, total = batch_idx * len(data), len(train_loader.dataset)
            done = 100.0 * batch_idx / len(train_loader)
            value = loss.item()  # audit: log_loss
            print(f"Train Epoch: {epoch} [{seen}/{total} ({done:.0f}%)]\tLoss: {value:.6f}")


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)  # audit: test_to
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()  # audit: test_loss
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()  # audit: correct
    test_loss /= len(test_loader.dataset)
    total = len(test_loader.dataset)
    print(f"Test set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{total}")


def main(argv=None):
    parser = argparse.ArgumentParser(description="mnist-style training")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--test-batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--log-interval", type=int, default=2)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args(argv)
    torch.manual_seed(1)
    device = torch.device("cpu")
    transform = Compose([ToTensor(), Normalize((0.1307,), (0.3081,))])
    loader_kwargs = {"num_workers": args.workers}
    train_loader = DataLoader(
        Digits(64, 0, transform), batch_size=args.batch_size, shuffle=True, **loader_kwargs
    )
    test_loader = DataLoader(
        Digits(32, 1, transform), batch_size=args.test_batch_size, **loader_kwargs
    )
    model = Net().to(device)  # audit: model_to
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()


if __name__ == "__main__":
    main()

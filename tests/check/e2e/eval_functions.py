"""Evaluate a tiny CNN from functions: written for a CUDA machine only."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 3)

    def forward(self, x):
        x = F.relu(self.conv(x))
        return self.fc(x.flatten(1))


def make_batch(n):
    images = torch.rand(n, 1, 8, 8).cuda()
    labels = torch.randint(0, 3, (n,)).to("cuda")
    return images, labels


def evaluate(net, batches):
    net.eval()
    total, correct = 0, 0
    with torch.no_grad():
        for images, labels in batches:
            logits = net(images)
            if logits.is_cuda:
                correct += int((logits.argmax(1) == labels).sum())
            total += labels.numel()
    return correct / total


def main():
    torch.cuda.set_device(0)
    torch.manual_seed(3)
    net = Net().cuda()
    batches = [make_batch(16) for _ in range(4)]
    print("accuracy", evaluate(net, batches))
    print("scores", net(batches[0][0][:2]).softmax(-1).numpy().round(3).tolist())


if __name__ == "__main__":
    main()

"""Batch inference over a DataLoader: written for a CUDA machine only."""

import torch
from torch.autograd import Variable
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(2)
features = torch.randn(40, 6)
labels = (features[:, 0] > 0).long()
loader = DataLoader(TensorDataset(features, labels), batch_size=8)

net = torch.nn.Sequential(torch.nn.Linear(6, 2)).cuda()
net.eval()
correct = 0
preds = []
with torch.no_grad():
    for xb, yb in loader:
        xb = Variable(xb.cuda(non_blocking=True))
        yb = yb.to("cuda")
        out = net(xb)
        correct += (out.argmax(1) == yb).sum().item()
        preds.append(out.argmax(1).cpu())

print("accuracy", correct / len(features))
print("first", torch.cat(preds)[:10].tolist())
print("logits", net(features[:2].cuda()).detach().numpy().round(3).tolist())

"""infer_loader.py ported by hand: runs on whatever device the machine has."""

import torch
from torch.utils.data import DataLoader, TensorDataset

if torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")

torch.manual_seed(2)
features = torch.randn(40, 6)
labels = (features[:, 0] > 0).long()
loader = DataLoader(
    TensorDataset(features, labels), batch_size=8, pin_memory=torch.accelerator.is_available()
)

net = torch.nn.Sequential(torch.nn.Linear(6, 2)).to(device)
net.eval()
correct = torch.zeros((), dtype=torch.long, device=device)
preds = []
with torch.no_grad():
    for xb, yb in loader:
        xb = xb.to(device, non_blocking=True)
        yb = yb.to(device, non_blocking=True)
        out = net(xb)
        correct += (out.argmax(1) == yb).sum()
        preds.append(out.argmax(1))

print("accuracy", correct.item() / len(features))
print("first", torch.cat(preds)[:10].cpu().tolist())
print("logits", net(features[:2].to(device)).detach().cpu().numpy().round(3).tolist())

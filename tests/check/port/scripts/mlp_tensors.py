"""An MLP trained on whole tensors (no DataLoader), then evaluated."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

# Toy data: two blobs
X_train = torch.randn(128, 8)
y_train = (X_train.sum(dim=1) > 0).long()
X_test = torch.randn(32, 8)
y_test = (X_test.sum(dim=1) > 0).long()


class MLP(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.fc1 = nn.Linear(8, hidden)
        self.fc2 = nn.Linear(hidden, 2)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


model = MLP()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

for epoch in range(5):
    model.train()
    logits = model(X_train)
    loss = F.cross_entropy(logits, y_train)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.6f}")

model.eval()
with torch.no_grad():
    pred = model(X_test).argmax(dim=1)
    acc = (pred == y_test).float().mean().item()
print(f"test accuracy {acc:.4f}")
print("first predictions", pred[:6].numpy())

"""Train, save a checkpoint, load it into a fresh model and check it predicts the same."""

import torch
import torch.nn as nn

torch.manual_seed(0)


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x):
        return self.body(x)


x = torch.randn(32, 3)
y = x @ torch.tensor([[1.0], [-2.0], [0.5]])
model = Regressor()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(20):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"trained loss {loss.item():.6f}")

torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": 20}, "ckpt.pt")
torch.save(torch.arange(5), "ids.pt")  # a plain tensor, saved as it is

restored = Regressor()
state = torch.load("ckpt.pt")
restored.load_state_dict(state["model"])
restored.eval()
with torch.no_grad():
    same = torch.allclose(restored(x), model(x))
print("restored step", state["step"], "same predictions", same)
print("ids", torch.load("ids.pt").tolist())

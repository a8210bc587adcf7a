"""Lightning Fabric picks CUDA when torch.cuda.is_available(); torchport run must run it on cpu."""

import torch
from lightning.fabric import Fabric
from torch import nn

torch.manual_seed(0)
fabric = Fabric(accelerator="auto", devices=1)
fabric.launch()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = fabric.setup(model, optimizer)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(data, batch_size=16))
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        fabric.backward(loss)
        optimizer.step()
    fabric.print(f"epoch {epoch} loss {loss.item():.6f}")

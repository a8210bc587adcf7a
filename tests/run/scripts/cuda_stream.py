"""Uses a CUDA stream, which has no meaning on another device."""

import torch

print("before the stream")
side = torch.cuda.Stream()
print("never printed")

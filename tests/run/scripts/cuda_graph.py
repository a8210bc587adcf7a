"""Captures a CUDA graph, which has no meaning on another device."""

import torch

print("before the graph")
graph = torch.cuda.CUDAGraph()
print("never printed")

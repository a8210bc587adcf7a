"""What a multi-GPU script checks per rank; prints many lines made of several writes each."""

import os
import sys

import torch

local_rank = int(os.environ.get("LOCAL_RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
if torch.cuda.device_count() < world:
    sys.exit(f"needs {world} GPUs, sees {torch.cuda.device_count()}")
torch.cuda.set_device(local_rank)
x = torch.ones(2, device=f"cuda:{local_rank}")
count, current = torch.cuda.device_count(), torch.cuda.current_device()
print("rank", local_rank, "count", count, "current", current, "on", x.device.type, flush=True)
# Both ranks print at the same moment, so that their writes race.
barrier = os.environ.get("RANKS_BARRIER")
if barrier:
    open(f"{barrier}.{local_rank}", "w").close()
    while not all(os.path.exists(f"{barrier}.{r}") for r in range(world)):
        pass
for i in range(2000):
    print("line", local_rank, i, "x" * 50, "\nmore", local_rank, i)  # two lines, one print

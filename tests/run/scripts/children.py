"""Starts processes the ways scripts do; each child reports what CUDA looks like to it."""

import multiprocessing
import sys

import torch
import torch.multiprocessing as tmp

# Top-level code runs again in every spawned child, before the target function.
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def report(tag: object, *rest: object) -> None:
    x = torch.ones(2).cuda() + torch.zeros(2, device=DEVICE)
    model = torch.nn.Linear(2, 2).to(0)
    line = f"{tag} {torch.cuda.is_available()} {DEVICE} {x.device.type} {model.weight.device.type}"
    print(line, flush=True)


if __name__ == "__main__":
    for method in sys.argv[1:]:
        if method == "torch.multiprocessing.spawn":
            tmp.spawn(report, nprocs=2, join=True)
            continue
        child = multiprocessing.get_context(method).Process(target=report, args=(method,))
        child.start()
        child.join()
        assert child.exitcode == 0, (method, child.exitcode)

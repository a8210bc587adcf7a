"""Records every time the package is imported and what CUDA looked like then."""

import os

import torch

with open(os.environ["INITPKG_LOG"], "a") as log:
    log.write(f"{os.getpid()} {torch.cuda.is_available()}\n")

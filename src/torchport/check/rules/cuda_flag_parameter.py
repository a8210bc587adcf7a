"""TP116 cuda-flag-parameter: ``def step(batch, use_cuda):``, a CUDA-or-CPU switch passed around."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._torch_code import binds_torch

# `use_cuda`, `use_gpu`, `on_gpu`: a yes/no for CUDA. A bare `gpu` is often an index, a bare
# `cuda` often says what to trace or build (`setup_profiler(cuda=True)`).
_FLAG = re.compile(r"^(use|with|enable|on)_(cuda|gpu)$", re.IGNORECASE)


class CudaFlagParameter(Rule):
    """## What it does
    Finds function parameters that carry a yes/no for CUDA: `use_cuda`,
    `with_cuda`, `use_gpu`, `on_gpu` (`def unpack_batch(batch, use_cuda):`).

    ## Why is this bad?
    The flag knows two devices, CUDA and the CPU, and every function that takes
    it branches on it (`if use_cuda: x = x.cuda()`), so the whole call chain
    has to change before the code runs on MPS, XPU or another accelerator.
    Pass the `device` instead (or read it from the tensors: `x.device`) and
    move with `.to(device)`. A module that imports nothing from torch is not
    reported: its flag is another framework's (`fluid.CUDAPlace(0) if use_cuda`).

    ## Why is it off by default?
    Under 90% real on the judged samples (5 of 6); `--extend-select TP116` runs it as before.
    """

    code = "TP116"
    name = "cuda-flag-parameter"
    intent = Intent.DEVICE
    default = False
    message = (
        "pass a `device` instead of a CUDA flag: a yes/no for CUDA knows only CUDA and the "
        "CPU, and every function it is passed to must branch on it"
    )
    node_types = (ast.arguments,)
    valid = (
        "def step(batch, device):\n    return batch.to(device)\n",
        "def launch(gpu):\n    return gpu\n",  # an index, TP110's when it places data
        "def build(cuda_home):\n    return cuda_home\n",
        "def setup_profiler(cpu=True, cuda=True):\n    return cpu, cuda\n",
        "from paddle import fluid\n\n\ndef build(use_cuda=False):\n"
        "    return fluid.CUDAPlace(0) if use_cuda else fluid.CPUPlace()\n",
    )
    invalid = (
        Example(
            "import torch\n\n\n"
            "def unpack_batch(batch, use_cuda):\n    return batch.cuda() if use_cuda else batch\n"
        ),
        Example(
            "from .compat import torch\n\n\nclass Trainer:\n"
            "    def __init__(self, model, use_gpu=True, *, with_cuda=False):\n        pass\n",
            count=2,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.arguments)
        for param in (*node.posonlyargs, *node.args, *node.kwonlyargs):
            if _FLAG.match(param.arg) and binds_torch(ctx):  # asked only on a match
                yield ctx.finding(self, param)

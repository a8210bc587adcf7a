"""TP405 data-parallel: ``nn.DataParallel``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called, in_tests
from torchport.check._rule import Example, Finding, Intent, Rule

_DP = ("torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
       "torch.nn.parallel.data_parallel.DataParallel")  # fmt: skip
_TAILS = frozenset({"DataParallel"})


class DataParallel(Rule):
    """## What it does
    Finds `nn.DataParallel(...)`.

    ## Why is this bad?
    `DataParallel` is single-process and CUDA-only: it replicates the model on
    every step, gathers outputs on GPU 0 (which runs out of memory first) and
    is held back by the GIL. PyTorch recommends `DistributedDataParallel`,
    one process per device launched by `torchrun`, which also works on CPU
    (Gloo) and other accelerators.

    There is no automatic fix: moving to DDP changes how the script is launched.
    """

    code = "TP405"
    name = "data-parallel"
    intent = Intent.DEVICE
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    message = "use `DistributedDataParallel`, one process per device (torchrun), not `DataParallel`"
    node_types = (ast.Call,)
    call_attrs = _TAILS
    valid = ("from torch.nn.parallel import DistributedDataParallel as DDP\n\nm = DDP(model)\n",)
    invalid = (Example("import torch.nn as nn\n\nmodel = nn.DataParallel(model)\n"),)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _TAILS) in _DP and not in_tests(ctx):
            yield ctx.finding(self, node)  # (a test may wrap in DataParallel to test the wrapper)

"""TP302 load-weights-only-false: ``torch.load(..., weights_only=False)``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called, keyword
from torchport.check._rule import Example, Finding, Intent, Rule

_LOAD = frozenset({"load"})


class LoadWeightsOnlyFalse(Rule):
    """## What it does
    Finds `torch.load(..., weights_only=False)`.

    ## Why is this bad?
    With `weights_only=False`, loading runs the pickle machinery in full: a
    crafted checkpoint executes arbitrary code on the machine that loads it.
    Since PyTorch 2.6 the default is `weights_only=True`, which loads tensors,
    containers and primitive types only; other classes can be allowed one by
    one with `torch.serialization.add_safe_globals([...])`.

    There is no automatic fix: removing the flag can make a checkpoint that
    holds custom objects fail to load.
    """

    code = "TP302"
    name = "load-weights-only-false"
    intent = Intent.SAFETY
    message = (
        "load with the default `weights_only=True` and allow needed classes with "
        "`torch.serialization.add_safe_globals`; keep `False` only for files you trust"
    )
    node_types = (ast.Call,)
    valid = (
        'import torch\n\nstate = torch.load("ckpt.pt", map_location="cpu")\n',
        'import torch\n\nstate = torch.load("ckpt.pt", weights_only=True)\n',
    )
    invalid = (
        Example(
            'import torch\n\nobj = torch.load("run.pt", map_location="cpu", weights_only=False)\n'
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        flag = keyword(node, "weights_only")
        if flag is None or called(node, ctx, _LOAD) != "torch.load":
            return
        if isinstance(flag.value, ast.Constant) and flag.value.value is False:
            yield ctx.finding(self, flag)

"""TP302 load-weights-only-false: ``torch.load(..., weights_only=False)`` (or ``0``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import keyword
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._loading import LOAD_ATTRS, explicit_weights_only, is_load


class LoadWeightsOnlyFalse(Rule):
    """## What it does
    Finds `torch.load(..., weights_only=False)`, also written `weights_only=0`
    or through the alias `torch.serialization.load`.

    ## Why is this bad?
    With `weights_only=False`, loading runs the pickle machinery in full: a
    crafted checkpoint executes arbitrary code on the machine that loads it.
    Since PyTorch 2.6 the default is `weights_only=True`, which loads tensors,
    containers and primitive types only; other classes can be allowed one by
    one with `torch.serialization.add_safe_globals([...])`, or for one load with
    `with torch.serialization.safe_globals([...]):`.

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
    call_attrs = LOAD_ATTRS
    valid = (
        'import torch\n\nstate = torch.load("ckpt.pt", map_location="cpu")\n',
        'import torch\n\nstate = torch.load("ckpt.pt", weights_only=True)\n',
        'import torch\n\nstate = torch.load("ckpt.pt", weights_only=1)\n',
        "import json\n\ncfg = json.load(fh, weights_only=False)\n",  # not torch's load
    )
    invalid = (
        Example(
            'import torch\n\nobj = torch.load("run.pt", map_location="cpu", weights_only=False)\n'
        ),
        Example('import torch\n\nobj = torch.load("run.pt", map_location="cpu", weights_only=0)\n'),
        Example(
            "from torch import serialization\n\n"
            'obj = serialization.load("run.pt", map_location="cpu", weights_only=False)\n'
        ),
        Example(
            "import torch.serialization as ser\n\n"
            'obj = ser.load("run.pt", map_location="cpu", weights_only=False)\n'
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if explicit_weights_only(node) is False and is_load(node, ctx):
            flag = keyword(node, "weights_only")
            yield ctx.finding(self, flag or node)

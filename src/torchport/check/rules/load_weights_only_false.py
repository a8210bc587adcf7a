"""TP302 load-weights-only-false: ``torch.load(..., weights_only=False)`` (or ``0``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._loading import UNDECIDED, indirect_load, is_load, truth

_UNDECIDED = (
    "cannot tell whether this loads with `weights_only=True`: {what}; spell the call "
    "`torch.load(..., weights_only=True)` so that it can be checked"
)


class LoadWeightsOnlyFalse(Rule):
    """## What it does
    Finds `torch.load(..., weights_only=False)`, also written `weights_only=0`,
    `not True`, `bool(0)` or a name bound to such a value, through the alias
    `torch.serialization.load`, a name bound to the function (`ld = torch.load`),
    `getattr(torch, "load")` or a `functools.partial` of it. A load it cannot
    settle (`getattr(torch, name)`, a `weights_only=` computed at run time) is
    reported as such.

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
    call_attrs = None  # `ld(f)` after `ld = torch.load`: any name may be the load
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
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr != "load":
            return  # (the cheap way out for most calls)
        if is_load(node, ctx):
            keywords = node.keywords
        else:
            found = indirect_load(node, ctx)
            if found is None:
                return
            name, keywords = found
            if name == UNDECIDED:
                what = "the function is looked up by a computed name"
                yield ctx.finding(self, node, message=_UNDECIDED.format(what=what))
                return
        flag = next((k for k in reversed(keywords) if k.arg == "weights_only"), None)
        if flag is None:
            return
        value = truth(flag.value, ctx)
        if value is False:
            yield ctx.finding(self, flag if flag in node.keywords else node)
        elif value is None and not isinstance(flag.value, (ast.Name, ast.Attribute, ast.Constant)):
            what = f"`weights_only={ast.unparse(flag.value)}` is worked out when it runs"
            yield ctx.finding(self, node, message=_UNDECIDED.format(what=what))

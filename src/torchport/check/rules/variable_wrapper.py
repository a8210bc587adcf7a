"""TP105 variable-wrapper: ``Variable(x, volatile=True)``, whose ``volatile`` does nothing."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called, keyword
from torchport.check._rule import Example, Finding, Intent, Rule

VARIABLE = ("torch.autograd.Variable", "torch.autograd.variable.Variable")
TAILS = frozenset({"Variable"})


class VariableWrapper(Rule):
    """## What it does
    Finds `torch.autograd.Variable(..., volatile=True)`. Plain wrappers,
    `Variable(x)`, which do nothing, are TP904's (selected by hand).

    ## Why is this bad?
    Since PyTorch 0.4 a `Variable` is just the tensor it wraps, so the wrapper
    only hides what a line does; `volatile=True` has no effect at all, so the
    code it was meant to speed up now records autograd graphs and keeps their
    memory alive. Use the tensor itself, `requires_grad_()`, and
    `torch.no_grad()` for inference.

    There is no automatic fix: the code that should run under `torch.no_grad()`
    is for a person to choose.
    """

    code = "TP105"
    name = "variable-wrapper"
    intent = Intent.DEVICE
    message = (
        "use the tensor itself, not `Variable(...)` "
        "(and `torch.no_grad()` instead of `volatile=True`)"
    )
    node_types = (ast.Call,)
    call_attrs = TAILS
    valid = (
        "out = model(x)\n",
        "from torch.autograd import grad\n\ng = grad(y, x)\n",
        "from torch.autograd import Variable\n\nout = model(Variable(x))\n",  # TP904's
    )
    invalid = (
        Example("from torch.autograd import Variable\n\nv = Variable(x, volatile=True)\n"),
        Example("import torch\n\nv = torch.autograd.Variable(x.cuda(), volatile=True)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, TAILS) not in VARIABLE or keyword(node, "volatile") is None:
            return
        message = "`volatile=True` does nothing: run this code under `torch.no_grad()`"
        yield ctx.finding(self, node, message=message)

"""TP904 plain-variable-wrapper: ``Variable(x)`` without ``volatile`` (off by default)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called, keyword
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules.variable_wrapper import TAILS, VARIABLE

_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Tuple)


class PlainVariableWrapper(Rule):
    """## What it does
    Finds `torch.autograd.Variable(...)` wrappers without `volatile=` (those
    with it are TP105's, on by default).

    ## Why is this bad?
    Since PyTorch 0.4 a `Variable` is just the tensor it wraps, so the wrapper
    does nothing and only hides what a line does. The code runs the same on
    every device with or without it: a cleanup, which is why this rule is off
    by default.

    The fix unwraps `Variable(x)`, and removes `x = Variable(x)` (a `pass`
    where it is a block's only statement); calls with other arguments are only
    reported.
    """

    code = "TP904"
    name = "plain-variable-wrapper"
    intent = Intent.DEVICE
    message = "use the tensor itself, not `Variable(...)`: the wrapper does nothing"
    fix_safety = FixSafety.SAFE
    default = False
    node_types = (ast.Call,)
    call_attrs = TAILS
    valid = (
        "out = model(x)\n",
        "from torch.autograd import grad\n\ng = grad(y, x)\n",
        "from torch.autograd import Variable\n\nv = Variable(x, volatile=True)\n",  # TP105's
    )
    invalid = (
        Example(
            "from torch.autograd import Variable\n\nout = model(Variable(x))\n",
            fixed="from torch.autograd import Variable\n\nout = model(x)\n",
        ),
        Example(
            "import torch\n\ny = torch.autograd.Variable(a + b).sum()\n",
            fixed="import torch\n\ny = (a + b).sum()\n",
        ),
        Example(
            "from torch.autograd import Variable\n\n"
            "def f(x):\n    x = Variable(x)\n    return x\n\n"
            "def g(x):\n    x = Variable(x)\n",
            fixed="from torch.autograd import Variable\n\n"
            "def f(x):\n    return x\n\n"
            "def g(x):\n    pass\n",
            count=2,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, TAILS) not in VARIABLE or keyword(node, "volatile") is not None:
            return
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            yield ctx.finding(self, node)
            return
        inner = node.args[0]
        stmt = ctx.parent
        if isinstance(stmt, ast.Assign) and _wraps_itself(stmt, node, inner):
            yield _drop(self, node, stmt, ctx)  # `x = Variable(x)`: would leave `x = x`
            return
        text = ctx.segment(inner)
        if not isinstance(inner, _ATOMS):
            text = f"({text})"
        yield ctx.finding(self, node, fix=Fix((ctx.replace(node, text),), FixSafety.SAFE))


def _wraps_itself(stmt: ast.Assign, node: ast.Call, inner: ast.expr) -> bool:
    """``x = Variable(x)``: one name wrapped and bound back to itself."""
    return (
        stmt.value is node
        and len(stmt.targets) == 1
        and isinstance(inner, ast.Name)
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id == inner.id
    )


def _drop(rule: Rule, node: ast.Call, stmt: ast.Assign, ctx: Context) -> Finding:
    """Remove ``x = Variable(x)`` whole, or make it ``pass`` where a block needs a statement."""
    if not ctx.owns_lines(stmt):
        return ctx.finding(rule, node)  # shares its line: by hand
    holder = ctx.scopes.parent(stmt)
    alone = any(getattr(holder, field, None) == [stmt] for field in ("body", "orelse", "finalbody"))
    if alone:
        return ctx.finding(rule, node, fix=Fix((ctx.replace(stmt, "pass"),), FixSafety.SAFE))
    starts = ctx._line_starts()
    last = stmt.end_lineno or stmt.lineno
    end = starts[last + 1] if last + 1 < len(starts) else len(ctx.source)
    edit = Edit(starts[stmt.lineno], end, "")
    return ctx.finding(rule, node, fix=Fix((edit,), FixSafety.SAFE))

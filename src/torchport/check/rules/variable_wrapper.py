"""TP105 variable-wrapper: ``Variable(x)`` and ``volatile=True``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import called, keyword
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule

_VARIABLE = ("torch.autograd.Variable", "torch.autograd.variable.Variable")
_TAILS = frozenset({"Variable"})
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Tuple)


class VariableWrapper(Rule):
    """## What it does
    Finds `torch.autograd.Variable(...)` wrappers, including `volatile=True`.

    ## Why is this bad?
    Since PyTorch 0.4 a `Variable` is just the tensor it wraps, so the wrapper
    only hides what a line does; `volatile=True` has no effect at all, so the
    code it was meant to speed up now records autograd graphs and keeps their
    memory alive. Use the tensor itself, `requires_grad_()`, and
    `torch.no_grad()` for inference.

    The fix unwraps `Variable(x)`, and removes `x = Variable(x)` (a `pass`
    where it is a block's only statement); calls with other arguments are only
    reported.
    """

    code = "TP105"
    name = "variable-wrapper"
    intent = Intent.DEVICE
    message = (
        "use the tensor itself, not `Variable(...)` "
        "(and `torch.no_grad()` instead of `volatile=True`)"
    )
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    call_attrs = _TAILS
    valid = ("out = model(x)\n", "from torch.autograd import grad\n\ng = grad(y, x)\n")
    invalid = (
        Example(
            "from torch.autograd import Variable\n\nout = model(Variable(x))\n",
            fixed="from torch.autograd import Variable\n\nout = model(x)\n",
        ),
        Example(
            "import torch\n\ny = torch.autograd.Variable(a + b).sum()\n",
            fixed="import torch\n\ny = (a + b).sum()\n",
        ),
        Example("from torch.autograd import Variable\n\nv = Variable(x, volatile=True)\n"),
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
        if called(node, ctx, _TAILS) not in _VARIABLE:
            return
        if keyword(node, "volatile") is not None:
            message = "`volatile=True` does nothing: run this code under `torch.no_grad()`"
            yield ctx.finding(self, node, message=message)
            return
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            yield ctx.finding(self, node)
            return
        inner = node.args[0]
        stmt = ctx.parent
        if (
            isinstance(stmt, ast.Assign)
            and stmt.value is node
            and len(stmt.targets) == 1
            and isinstance(inner, ast.Name)
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == inner.id
        ):
            yield self._drop(node, stmt, ctx)  # `x = Variable(x)`: would leave `x = x`
            return
        text = ctx.segment(inner)
        if not isinstance(inner, _ATOMS):
            text = f"({text})"
        yield ctx.finding(self, node, fix=Fix((ctx.replace(node, text),), FixSafety.SAFE))

    def _drop(self, node: ast.Call, stmt: ast.Assign, ctx: Context) -> Finding:
        """Remove ``x = Variable(x)`` whole, or make it ``pass`` where a block needs a statement."""
        if not ctx.owns_lines(stmt):
            return ctx.finding(self, node)  # shares its line: by hand
        holder = ctx.scopes.parent(stmt)
        alone = any(
            getattr(holder, field, None) == [stmt] for field in ("body", "orelse", "finalbody")
        )
        if alone:
            return ctx.finding(self, node, fix=Fix((ctx.replace(stmt, "pass"),), FixSafety.SAFE))
        starts = ctx._line_starts()
        last = stmt.end_lineno or stmt.lineno
        end = starts[last + 1] if last + 1 < len(starts) else len(ctx.source)
        edit = Edit(starts[stmt.lineno], end, "")
        return ctx.finding(self, node, fix=Fix((edit,), FixSafety.SAFE))

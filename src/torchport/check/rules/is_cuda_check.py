"""TP103 is-cuda-check: ``if x.is_cuda:`` branches."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule

_TESTED = (ast.If, ast.While, ast.IfExp, ast.Assert)


class IsCudaCheck(Rule):
    """## What it does
    Finds `tensor.is_cuda` used as a condition (`if`, `while`, `assert`, a
    conditional expression or a comprehension filter).

    ## Why is this bad?
    `is_cuda` is False for tensors on MPS, XPU and other accelerators, so the
    accelerator branch is silently skipped there: the code takes the CPU path
    with accelerator tensors, or pins and copies what is already on the device.

    ## Fix safety
    The fix tests `x.device.type != "cpu"`, which is also true for `meta`
    tensors and for every accelerator, not only CUDA.
    """

    code = "TP103"
    name = "is-cuda-check"
    intent = Intent.DEVICE
    message = 'test `x.device.type != "cpu"` (or compare with your `device`) instead of `x.is_cuda`'
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Attribute,)
    valid = ('if x.device.type != "cpu":\n    x = x.cpu()\n', "on_gpu = x.is_cuda\n")
    invalid = (
        Example(
            "if x.is_cuda:\n    x = x.cpu()\n",
            fixed='if x.device.type != "cpu":\n    x = x.cpu()\n',
        ),
        Example(
            "y = [t for t in ts if not t.is_cuda]\n",
            fixed='y = [t for t in ts if not t.device.type != "cpu"]\n',
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Attribute)
        if node.attr != "is_cuda" or not isinstance(node.ctx, ast.Load):
            return
        if _in_condition(node, ctx):
            text = f'{ctx.segment(node.value)}.device.type != "cpu"'
            yield ctx.finding(self, node, fix=Fix((ctx.replace(node, text),), FixSafety.UNSAFE))


def _in_condition(node: ast.expr, ctx: Context) -> bool:
    child: ast.AST = node
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, _TESTED):
            return child is outer.test
        if isinstance(outer, ast.comprehension):
            return any(cond is child for cond in outer.ifs)
        if not isinstance(outer, (ast.BoolOp, ast.UnaryOp)):
            return False
        child = outer
    return False

"""TP101's findings with their fixes: a CUDA device value, or ``x.cuda()``, made portable.

A fix writes the portable device (the file's one ``device``, or the expression that
picks the accelerator) only where the value is torch's and the index it drops does not
matter; elsewhere the finding comes without a fix, to be changed by hand.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import keyword, receiver_end
from torchport.check._rule import Edit, Finding, Fix, FixSafety, Rule
from torchport.check.rules._snippets import DROPS_INDEX
from torchport.check.semantic._carried import device_for_fix
from torchport.check.semantic._receivers import value_fixable


def replace_device(
    rule: Rule, node: ast.expr, ctx: Context, safety: FixSafety, *, whole: bool = True
) -> Finding:
    """The finding for a CUDA device value, fixed to the portable device where one is safe."""
    parent, changes = ctx.parent, DROPS_INDEX if safety is FixSafety.UNSAFE else ""
    if not value_fixable(node, ctx):
        return ctx.finding(rule, node)  # data, CUDA failing on purpose, an index it picks
    if whole and isinstance(parent, ast.Assign) and parent.value is node:
        # `device = torch.device("cuda")` itself: bind the portable expression instead.
        torch = ctx.torch_at(node)
        if torch is None:
            return ctx.finding(rule, node)
        edits = (ctx.replace(node, ctx.device_expr(torch[0])), *torch[1])
        return ctx.finding(rule, node, fix=Fix(edits, safety, changes))
    found = device_for_fix(node, ctx)
    if found is None:
        return ctx.finding(rule, node)  # no name is safely the device here: by hand
    name, edits, follows = found
    if follows:
        safety, changes = FixSafety.UNSAFE, "; ".join(filter(None, (changes, follows)))
    return ctx.finding(rule, node, fix=Fix((ctx.replace(node, name), *edits), safety, changes))


def dot_cuda_to_device(rule: Rule, node: ast.Call, ctx: Context) -> Finding:
    """The finding for ``x.cuda()``: fixed to ``.to(device)`` where the index is constant."""
    index = node.args[0] if node.args else keyword(node, "device")
    index = index.value if isinstance(index, ast.keyword) else index
    if (index is not None and not isinstance(index, ast.Constant)) or not value_fixable(
        node, ctx
    ):  # `.cuda(rank)` (the index matters), or not known to be torch's `.cuda()`
        return ctx.finding(rule, node)
    extra = [ctx.segment(kw) for kw in node.keywords if kw.arg not in ("device", None)]
    found = device_for_fix(node, ctx)
    if found is None or any(kw.arg is None for kw in node.keywords):
        return ctx.finding(rule, node)  # no name is safely the device here: by hand
    name, edits, follows = found
    text = ".to(" + ", ".join([name, *extra]) + ")"
    replace = Edit(receiver_end(node, ctx), ctx.end(node), text)
    safety = FixSafety.SAFE if index is None and not follows else FixSafety.UNSAFE
    changes = "; ".join(filter(None, (DROPS_INDEX if index is not None else "", follows)))
    return ctx.finding(rule, node, fix=Fix((replace, *edits), safety, changes))

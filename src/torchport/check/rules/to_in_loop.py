"""TP901 to-in-loop: any ``.to(...)`` / ``.cuda()`` inside a loop (noisy, off by default)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import method_name
from torchport.check._rule import Example, Finding, Intent, Rule


class ToInLoop(Rule):
    """## What it does
    Finds every `.to(...)` and `.cuda()` call inside a loop body.

    ## Why is this bad?
    Each one may be a host-to-device copy (and, to the CPU, a sync) per
    iteration. Many are necessary (the batch has to get to the device), which
    is why this rule is off by default; use it to audit a hot loop for copies
    that could be hoisted out of it (constants, masks, the model itself).
    """

    code = "TP901"
    name = "to-in-loop"
    intent = Intent.SPEED
    message = "hoist this `.to()` out of the loop if its input does not change per iteration"
    default = False
    node_types = (ast.Call,)
    call_attrs = frozenset({"to", "cuda"})
    valid = ("mask = mask.to(device)\nfor x in xs:\n    y = model(x) * mask\n",)
    invalid = (Example("for x in xs:\n    w = weights.to(device)\n    y = x @ w\n"),)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if method_name(node) in ("to", "cuda") and ctx.in_loop(node):
            yield ctx.finding(self, node)

"""TP204 non-blocking-to-cpu: ``x.to("cpu", non_blocking=True)``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import is_cpu_target, keyword, method_name
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule


class NonBlockingToCpu(Rule):
    """## What it does
    Finds copies to the CPU with `non_blocking=True`.

    ## Why is this bad?
    A non-blocking device-to-host copy returns before the data has arrived:
    the host tensor is filled later, asynchronously. Any read before an
    explicit synchronization (`.numpy()`, printing, a Python comparison) can see
    stale or zero values, and nothing fails to tell you. The blocking copy is
    only a little slower; keep `non_blocking=True` only with an event or stream
    synchronization before the first read.

    The fix removes `non_blocking=True`: the copy becomes synchronous, which
    never changes the values read, only when the host waits.
    """

    code = "TP204"
    name = "non-blocking-to-cpu"
    intent = Intent.DEVICE
    message = "drop `non_blocking=True` from copies to the CPU, or synchronize before reading them"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    call_attrs = frozenset({"to"})
    valid = (
        "x = x.to(device, non_blocking=True)\n",
        'x = x.to("cpu")\n',
        'x = x.to("cpu", non_blocking=False)\n',
    )
    invalid = (
        Example(
            'host = out.to("cpu", non_blocking=True)\n',
            fixed='host = out.to("cpu")\n',
        ),
        Example(
            'import torch\n\nh = y.to(torch.device("cpu"), non_blocking=True, copy=True)\n',
            fixed='import torch\n\nh = y.to(torch.device("cpu"), copy=True)\n',
        ),
        Example(
            'h = y.to(device="cpu", non_blocking=True)\n',
            fixed='h = y.to(device="cpu")\n',
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if method_name(node) != "to" or not node.keywords:
            return
        flag = keyword(node, "non_blocking")
        if flag is None or not (isinstance(flag.value, ast.Constant) and flag.value.value is True):
            return
        device_kw = keyword(node, "device")
        target = node.args[0] if node.args else (device_kw.value if device_kw else None)
        if not is_cpu_target(target, ctx):
            return
        given: list[ast.AST] = sorted([*node.args, *node.keywords], key=ctx.start)
        before = given[given.index(flag) - 1]  # the target precedes the flag
        if ctx.start(before) > ctx.start(flag):
            yield ctx.finding(self, flag)
            return
        edit = Edit(ctx.end(before), ctx.end(flag), "")
        yield ctx.finding(self, flag, fix=Fix((edit,), FixSafety.SAFE))

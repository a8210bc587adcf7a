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

    Not reported: a copy assigned to names that no statement after it in the
    same block reads before one that synchronizes (any `.synchronize()`: of
    `torch.cuda`, `torch.accelerator`, a stream or an event) or makes a
    blocking copy of another value to the host (`.cpu()`, `.item()`,
    `.tolist()`, `.to("cpu")`), which waits for the stream the copy was queued on.
    Reading its shape, dtype or device (`assert host.shape == ...`) reads no data.
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
        'a = x.to("cpu", non_blocking=True)\ntorch.cuda.current_stream().synchronize()\n'
        "print(a.tolist())\n",
        'a = x.to("cpu", non_blocking=True)\nb = y.to("cpu", non_blocking=False)\n'
        "print(a.tolist(), b.tolist())\n",
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
        Example(
            'a = x.to("cpu", non_blocking=True)\nprint(a)\ntorch.cuda.synchronize()\n',
            fixed='a = x.to("cpu")\nprint(a)\ntorch.cuda.synchronize()\n',
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
        if _synchronized_before_read(node, ctx):
            return
        given: list[ast.AST] = sorted([*node.args, *node.keywords], key=ctx.start)
        before = given[given.index(flag) - 1]  # the target precedes the flag
        if ctx.start(before) > ctx.start(flag):
            yield ctx.finding(self, flag)
            return
        edit = Edit(ctx.end(before), ctx.end(flag), "")
        yield ctx.finding(self, flag, fix=Fix((edit,), FixSafety.SAFE))


_BLOCKING_READS = frozenset({"cpu", "item", "tolist"})
_METADATA = frozenset({"shape", "dtype", "device", "size", "dim", "ndim", "numel", "is_pinned"})


def _synchronized_before_read(copy: ast.Call, ctx: Context) -> bool:
    """Whether the copy's names are read only after a statement that waits for the stream.

    Only ``name = <copy>`` (or a tuple of names) counts, and only the statements
    after it in the same block, in order: a statement that reads a name decides
    "not synchronized" (even if it also synchronizes: the order inside one
    statement is not worth guessing), one that synchronizes decides "synchronized".
    """
    stmt = next((s for s in reversed(ctx.ancestors) if isinstance(s, ast.stmt)), None)
    if not isinstance(stmt, ast.Assign) or stmt.value is not copy:
        return False  # `a = f(x.to("cpu", non_blocking=True))`: f reads it first
    names: set[str] = set()
    for target in stmt.targets:
        parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if not all(isinstance(p, ast.Name) for p in parts):
            return False  # `self.x = ...`, `d[k] = ...`: read where this block cannot see
        names |= {p.id for p in parts if isinstance(p, ast.Name)}
    found = _block_of(stmt, ctx)
    if found is None:
        return False
    block, index = found
    for later in block[index + 1 :]:
        nodes = list(ast.walk(later))
        # `host.shape`, `host.size()`: what the copy was queued with, known at once.
        metadata = {
            id(n.value) for n in nodes if isinstance(n, ast.Attribute) and n.attr in _METADATA
        }
        if any(isinstance(n, ast.Name) and n.id in names and id(n) not in metadata for n in nodes):
            return False
        if any(isinstance(n, ast.Call) and _waits(n, names, ctx) for n in nodes):
            return True
    return False


def _block_of(stmt: ast.stmt, ctx: Context) -> tuple[list[ast.stmt], int] | None:
    """The statement list that holds ``stmt`` (a body, ``else``, ``finally`` or handler), and
    its place there: the scope map's index of every statement, not a search of each
    enclosing block (a search of the module's body per finding was quadratic).
    """
    return ctx.scopes.statement_position(stmt)


def _waits(call: ast.Call, copied: set[str], ctx: Context) -> bool:
    """``*.synchronize()``, or a blocking copy to the host of something not just copied."""
    name = method_name(call)
    if name == "synchronize":
        return True
    if not isinstance(call.func, ast.Attribute):
        return False
    receiver = call.func.value
    if isinstance(receiver, ast.Name) and receiver.id in copied:
        return False
    if name in _BLOCKING_READS:
        return True
    if name == "to" and call.args and is_cpu_target(call.args[0], ctx):
        flag = keyword(call, "non_blocking")
        return flag is None or (isinstance(flag.value, ast.Constant) and flag.value.value is False)
    return False

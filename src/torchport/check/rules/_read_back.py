"""A copy to the device the next statement reads back to the host (TP203).

``labels = batch["label"].to(device)`` followed by ``targets = [m[i] for i in
labels.tolist()]``: the host waits for the copy at once, so ``non_blocking=True`` would
overlap nothing (sample AE's F9, judged low). Only where every read of the copied name in
that next statement is such a read back (``.tolist()``, ``.item()``, ``.numpy()``,
``.cpu()``, through ``.detach()``): a next statement that hands it to a model first, or a
read back further on, is left to the rule.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["read_back_next"]

_TO_HOST = frozenset({"tolist", "item", "numpy", "cpu"})


def read_back_next(node: ast.Call, ctx: Context) -> bool:
    """Whether the copy ``node`` is bound to a name that the next statement of its block
    reads only back to the host (and reads at all)."""
    chain = [*ctx.ancestors, node]
    at = next((i for i in range(len(chain) - 1, 0, -1) if isinstance(chain[i], ast.stmt)), 0)
    stmt, holder = chain[at], chain[at - 1]
    name = _bound_name(node, chain[at + 1 :], stmt)
    if name is None:
        return False
    for field in ("body", "orelse", "finalbody"):
        block = getattr(holder, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            place = next(i for i, s in enumerate(block) if s is stmt)
            if place + 1 < len(block):
                after = block[place + 1]
                uses = [n for n in ast.walk(after) if isinstance(n, ast.Name) and n.id == name]
                readers = _host_reads(after, name)
                return bool(uses) and all(any(u is r for r in readers) for u in uses)
    return False


def _bound_name(node: ast.Call, between: list[ast.AST], stmt: ast.AST) -> str | None:
    """The plain name ``stmt`` binds the copy to: ``x = <copy>``, ``x, y = <copy>, ...``."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    target = stmt.targets[0]
    if between == [node] and isinstance(target, ast.Name):
        return target.id
    value = stmt.value
    if (
        len(between) == 2
        and isinstance(value, ast.Tuple)
        and isinstance(target, ast.Tuple)
        and between[0] is value
        and len(target.elts) == len(value.elts)
    ):
        bound = target.elts[next(i for i, e in enumerate(value.elts) if e is node)]
        return bound.id if isinstance(bound, ast.Name) else None
    return None


def _host_reads(stmt: ast.stmt, name: str) -> list[ast.Name]:
    """The loads of ``name`` in ``stmt`` that are ``name.tolist()`` and the like."""
    found: list[ast.Name] = []
    for call in ast.walk(stmt):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        if call.func.attr not in _TO_HOST:
            continue
        receiver = call.func.value
        if (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Attribute)
            and receiver.func.attr == "detach"
            and not receiver.args
        ):
            receiver = receiver.func.value
        if isinstance(receiver, ast.Name) and receiver.id == name:
            found.append(receiver)
    return found

"""Whether a loop's variable is rebound in the loop body before a read of it (TP203).

Syntax only, along the blocks that hold the read: an assignment before it in one of
them, or an ``if`` whose every arm assigns, rebinds on every path.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["rebound_in_the_body"]


def rebound_in_the_body(root: ast.Name, loop: ast.For | ast.AsyncFor, ctx: Context) -> bool:
    """Whether, on every path from the loop's binding to ``root``, ``root``'s name is rebound.

    ``x = x.to(device)`` (then ``x.to(device)`` again: a copy on the device, a no-op),
    ``x = augment(x)`` (a new host tensor nobody pinned): neither is the loader's
    batch, so ``non_blocking`` gains nothing there. A rebinding on one branch only
    leaves the move reported: it may still be the batch.
    """
    node: ast.AST = root
    parent = ctx.scopes.parent(node)
    while parent is not None and node is not loop:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and any(s is node for s in block):
                before = block[: next(i for i, s in enumerate(block) if s is node)]
                if any(_surely_binds(stmt, root.id) for stmt in before):
                    return True
        node, parent = parent, ctx.scopes.parent(parent)
    return False


def _surely_binds(stmt: ast.stmt, name: str) -> bool:
    """Whether running ``stmt`` always binds ``name`` (an assignment, or both arms of an ``if``)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
        targets = [stmt.target]
    elif isinstance(stmt, ast.If):
        return all(any(_surely_binds(s, name) for s in arm) for arm in (stmt.body, stmt.orelse))
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        return any(_surely_binds(s, name) for s in stmt.body)
    else:
        return False
    return any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name
        for t in targets
        for n in ast.walk(t)
    )

"""The tensors an `autograd.Function` method unpacks from its context (``ctx.saved_tensors``).

TP117 follows them as it follows tensor-annotated parameters: ``X, Y, K = ctx.saved_tensors`` in
``backward`` are tensors, wherever the forward's inputs lived (round 5j's sigkernel: ``X +
h * torch.eye(D)`` in ``backward``, fixed by its maintainers with ``device=X.device``).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.rules._tensor_meetings import own_statements

__all__ = ["saved_tensors"]

_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})


def saved_tensors(node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context) -> set[str]:
    """The names a method of a ``torch.autograd.Function`` unpacks from its context's
    ``saved_tensors`` (``X, Y, K = ctx.saved_tensors`` in ``backward``): tensors, wherever
    the forward's inputs lived (sigkernel's ``torch.eye(D)`` beside ``X``, round 5j)."""
    params = node.args.args
    owner = ctx.scopes.parent(node)
    if not params or not isinstance(owner, ast.ClassDef):
        return set()
    if not any(ctx.qualname(base) in _FUNCTIONS for base in owner.bases):
        return set()
    first = params[0].arg  # `ctx` (a staticmethod's first parameter)
    found: set[str] = set()
    for stmt in own_statements(node.body):
        if not isinstance(stmt, ast.Assign):
            continue
        value = stmt.value
        if isinstance(value, ast.Subscript):  # `x = ctx.saved_tensors[0]`
            value = value.value
        if not (
            isinstance(value, ast.Attribute)
            and value.attr in ("saved_tensors", "saved_variables")
            and isinstance(value.value, ast.Name)
            and value.value.id == first
        ):
            continue
        for target in stmt.targets:
            names = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
            found.update(n.id for n in names if isinstance(n, ast.Name))
    return found

"""A model's forward that moves its own input to its parameters' device (issue 31, item 5).

``def forward(self, x): x = x.to(next(self.parameters()).device)``: whatever a caller
hands in ends where the model's weights are, wherever the port put the model; what a
call hands such a forward is no value to move. Only a device read from the model's own
parameters counts: ``self.device`` set to ``torch.device("cuda" if ... else "cpu")``
names the CUDA-or-CPU choice, not where the port's ``.to(device)`` put the weights (on
an accelerator that is not CUDA the two differ), and ``.cuda()`` names CUDA alone.
"""

from __future__ import annotations

import ast

__all__ = ["moves_to_own_device"]


def moves_to_own_device(cls: ast.ClassDef, me: str, holder: ast.AST | None, read: ast.Name) -> bool:
    """Whether ``holder`` is ``read.to(D, ...)`` (or ``.to(device=D, ...)``) with ``D`` the
    device of ``cls``'s own parameters (``me``: the forward's first parameter):
    ``next(me.parameters()).device``, ``next(me.buffers()).device``, or ``me.<p>`` where
    ``<p>`` is a property of ``cls`` returning one of those."""
    if not (
        isinstance(holder, ast.Call)
        and isinstance(holder.func, ast.Attribute)
        and holder.func.attr == "to"
        and holder.func.value is read
    ):
        return False
    targets = [*holder.args[:1], *(k.value for k in holder.keywords if k.arg == "device")]
    return len(targets) == 1 and _own_device(cls, me, targets[0])


def _own_device(cls: ast.ClassDef, me: str, expr: ast.expr) -> bool:
    if _parameters_device(me, expr):
        return True
    if not (
        isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == me
    ):
        return False
    found = [
        stmt
        for stmt in cls.body
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.Assign | ast.AnnAssign)
        and _names(stmt, expr.attr)
    ]
    if len(found) != 1 or not isinstance(found[0], ast.FunctionDef):
        return False  # bound twice in the class body, or not by a method
    prop = found[0]
    decorated = [d for d in prop.decorator_list if isinstance(d, ast.Name)]
    own = [*prop.args.posonlyargs, *prop.args.args]
    if len(prop.decorator_list) != 1 or not decorated or decorated[0].id != "property":
        return False
    if len(own) != 1 or len(prop.body) != 1 or not isinstance(prop.body[0], ast.Return):
        return False
    value = prop.body[0].value
    return value is not None and _parameters_device(own[0].arg, value)


def _names(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        return stmt.name == name
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign):
        targets = [stmt.target]
    else:
        return False
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))


def _parameters_device(me: str, expr: ast.expr) -> bool:
    """``next(me.parameters()).device`` or ``next(me.buffers()).device``."""
    if not (isinstance(expr, ast.Attribute) and expr.attr == "device"):
        return False
    call = expr.value
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "next"
        and len(call.args) == 1
        and not call.keywords
    ):
        return False
    inner = call.args[0]
    return (
        isinstance(inner, ast.Call)
        and not inner.args
        and not inner.keywords
        and isinstance(inner.func, ast.Attribute)
        and inner.func.attr in ("parameters", "buffers")
        and isinstance(inner.func.value, ast.Name)
        and inner.func.value.id == me
    )

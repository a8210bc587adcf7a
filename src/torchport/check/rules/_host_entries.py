"""Tensors a function keeps in its own dict under a constant key, made on the CPU (TP202).

``data[split]["y"] = torch.LongTensor(labels)`` and later, in the same function,
``(data["train"]["y"] == i).sum().item()``: every value the function stores under the
key ``"y"`` of ``data`` is a CPU tensor, so reading one waits for no device. Known only
when ``data`` is the function's own dict (bound there to a dict display or
comprehension, never a parameter), every store under that last key in the function is
known to be on the CPU, and no store or move of such an entry is elsewhere (a
``.to(...)``/``.cuda()`` of one, a store of anything else): then the entry read is one
of those stores' values. :func:`on_the_host` asks this with the other ways TP202
knows a value is on the host.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.rules._environments import returned_by_an_environment
from torchport.check.semantic._residence import known_on_cpu

__all__ = ["kept_on_the_host", "on_the_host"]

# Methods and operators whose result lives where their first operand does.
_SAME_PLACE = frozenset(
    {"sum", "mean", "float", "long", "int", "bool", "max", "min", "argmax", "detach", "clone",
     "view", "reshape", "flatten", "squeeze", "unsqueeze", "eq", "ne", "gt", "lt", "ge", "le"}
)  # fmt: skip
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def on_the_host(value: ast.expr, ctx: Context) -> bool:
    """Known on the CPU, NumPy an environment returned, or a dict entry kept on the CPU."""
    return (
        known_on_cpu(value, ctx)
        or returned_by_an_environment(value, ctx)
        or kept_on_the_host(value, ctx)
    )


def kept_on_the_host(value: ast.expr, ctx: Context) -> bool:
    """Whether ``value`` is (an operation on) such a dict entry, stored on the CPU only."""
    for _ in range(12):
        if isinstance(value, ast.Compare | ast.BinOp):
            value = value.left
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in _SAME_PLACE
        ):
            value = value.func.value
        else:
            break
    entry = _entry(value)
    if entry is None:
        return False
    root = entry[0]
    function = next((a for a in reversed(ctx.ancestors) if isinstance(a, _FUNCTIONS)), None)
    if function is None or not _own_dict(function, root):
        return False
    stores = [
        s
        for s in ast.walk(function)
        if isinstance(s, ast.Assign | ast.AugAssign | ast.AnnAssign)
        and any(_entry(t) == entry for t in _targets(s))
    ]
    if not stores or any(s.value is None or not known_on_cpu(s.value, ctx) for s in stores):
        return False
    return not any(_moved(node, entry) for node in ast.walk(function))


def _entry(expr: ast.expr) -> tuple[str, str] | None:
    """``(root, key)`` of ``root[...]...[key]`` with a constant string last key, else None."""
    if not (
        isinstance(expr, ast.Subscript)
        and isinstance(expr.slice, ast.Constant)
        and isinstance(expr.slice.value, str)
    ):
        return None
    key = expr.slice.value
    base = expr.value
    while isinstance(base, ast.Subscript):
        base = base.value
    return (base.id, key) if isinstance(base, ast.Name) else None


def _targets(stmt: ast.Assign | ast.AugAssign | ast.AnnAssign) -> list[ast.expr]:
    return list(stmt.targets) if isinstance(stmt, ast.Assign) else [stmt.target]


def _own_dict(function: ast.FunctionDef | ast.AsyncFunctionDef, root: str) -> bool:
    """``root`` is bound in ``function`` only to dict displays or comprehensions."""
    every = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
    if any(a.arg == root for a in every) or root in ("self", "cls"):
        return False
    values = [
        s.value
        for s in ast.walk(function)
        if isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == root for t in s.targets)
    ]
    bound_elsewhere = any(
        isinstance(n, ast.Name) and n.id == root and isinstance(n.ctx, ast.Store)
        for s in ast.walk(function)
        if not isinstance(s, ast.Assign)
        for n in ast.iter_child_nodes(s)
    )
    return (
        bool(values)
        and not bound_elsewhere
        and all(isinstance(v, ast.Dict | ast.DictComp) for v in values)
    )


def _moved(node: ast.AST, entry: tuple[str, str]) -> bool:
    """``root[...][key].to(...)`` / ``.cuda()``: an entry moved (its result may be stored back)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("to", "cuda", "pin_memory")
        and _entry(node.func.value) == entry
    )

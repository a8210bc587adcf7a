"""Where operands meet in a function's statements: TP117's reading of a function body.

Two values meet where one operation takes both: arithmetic (``a + b``, ``x += c``), the
arguments of a torch function (``torch.pow(r, c)``), the tensors of one sequence given to
one (``torch.cat((padding, target))``, ``torch.stack([a, b])``), and the items of one
list that collects both (``out.append(a)`` ... ``out.append(b)``, stacked later: the
rule pairs what :func:`appended` finds). A ``for`` loop over an argument's rows binds its rows
(:func:`loop_rows`: ``for target in targets[name]``, ``for i, t in enumerate(ts)``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from torchport.check._context import Context
from torchport.check.rules._port import creators

__all__ = ["appended", "binding", "loop_rows", "meetings", "own_statements"]


def own_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The function's statements in order, into blocks, not into nested functions or classes."""
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from own_statements(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from own_statements(handler.body)


def _expressions(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of ``stmt``'s own expressions (not of the blocks it holds)."""
    for field, value in ast.iter_fields(stmt):
        if field in ("body", "orelse", "finalbody", "handlers"):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST):
                yield from ast.walk(item)


def meetings(stmt: ast.stmt, ctx: Context) -> Iterator[tuple[ast.expr, ast.expr]]:
    """Pairs of operands that meet in ``stmt``: arithmetic, ``x += ...``, a torch call's
    arguments, and the items of a tuple or list given to one (``torch.cat((a, b))``)."""
    if isinstance(stmt, ast.AugAssign):
        yield stmt.target, stmt.value
    made_by, typed = creators()
    for node in _expressions(stmt):
        if isinstance(node, ast.BinOp):
            yield node.left, node.right
        elif isinstance(node, ast.Call) and node.args:
            name = ctx.qualname(node.func) or ""
            if name.startswith("torch.") and name not in made_by and name not in typed:
                operands: list[ast.expr] = []
                for a in node.args:
                    sequence = isinstance(a, ast.Tuple | ast.List)
                    operands.extend(a.elts if sequence else [a])  # type: ignore[attr-defined]
                for i, a in enumerate(operands):
                    for b in operands[i + 1 :]:
                        yield a, b


def binding(stmt: ast.stmt) -> tuple[str | None, ast.expr | None]:
    """``(name, value)`` of ``name = value`` / ``name: T = value``, else ``(None, None)``."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            return target.id, stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id, stmt.value
    return None, None


def loop_rows(stmt: ast.stmt, refers: Callable[[ast.AST], bool]) -> list[str]:
    """The names a ``for`` loop over what ``refers`` accepts binds to its rows.

    ``for t in targets[name]``: ``t``; ``for i, t in enumerate(ts)``: ``t`` (not the
    count); ``for k, v in ts.items()``: ``v``.
    """
    if not isinstance(stmt, ast.For | ast.AsyncFor) or not refers(stmt.iter):
        return []
    target, source = stmt.target, stmt.iter
    if isinstance(source, ast.Call):  # only `enumerate(ts)`, `ts.items()`, `ts.values()`
        func = source.func
        counted = isinstance(func, ast.Name) and func.id == "enumerate" and len(source.args) == 1
        keyed = isinstance(func, ast.Attribute) and func.attr == "items" and not source.args
        if counted or keyed:
            pair = isinstance(target, ast.Tuple) and len(target.elts) == 2
            return [target.elts[1].id] if pair and isinstance(target.elts[1], ast.Name) else []  # type: ignore[attr-defined]
        if not (isinstance(func, ast.Attribute) and func.attr == "values" and not source.args):
            return []  # `zip(system.topologies, system.n_copies)`: counts, not rows
    return [target.id] if isinstance(target, ast.Name) else []


def appended(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """``(name, value)`` of ``name.append(value)`` as a statement, else None."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "append"
        and isinstance(call.func.value, ast.Name)
        and len(call.args) == 1
        and not call.keywords
    ):
        return call.func.value.id, call.args[0]
    return None

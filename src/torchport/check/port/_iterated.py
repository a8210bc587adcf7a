"""What each target of a ``for`` statement or a comprehension's ``for`` takes an item of.

``for t in ts`` binds ``t`` to an item of ``ts``, and so does ``[... for t in ts]``;
``for i, t in enumerate(ts)`` binds ``t`` to one (``i`` to a position); ``for t, w in
zip(ts, ws)`` binds ``t`` to an item of ``ts`` and ``w`` to one of ``ws``; ``sorted(ts)``,
``reversed(ts)``, ``list(ts)``, ``tuple(ts)`` and ``iter(ts)`` hand ``ts``'s items. The
device flow takes a target for a device value where what it takes an item of is one (issue
31: a comprehension over the model's outputs, or a ``zip``/``enumerate`` of them, was
followed nowhere: a host tensor made beside each item stayed on the CPU, unsaid).
A dict's ``.values()``/``.items()`` hand its values where the code shows them all (a literal
read only by key or so: ``LiteralItems``). Anything else (``map``, a starred or mismatched
target) is the whole iterable's, as before. Syntax only.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

__all__ = ["ITERATES", "ROUNDS", "first_item_of", "literal_rows", "positions_taken", "taken"]

# What binds a target per item of an iterable: a `for` statement, a comprehension's `for`.
ITERATES = (ast.For, ast.AsyncFor, ast.comprehension)
# The node kinds a round of the device flow's fixed point reads (`DeviceFlow.fixed_point`):
# these, and the calls and assignments it asks `_collected.collector` of (`preds.append(out)`).
ROUNDS = (*ITERATES, ast.Call, ast.AugAssign, ast.Assign)
# Builtins whose items are their one iterable's items.
_SAME_ITEMS = frozenset({"sorted", "reversed", "list", "tuple", "iter"})


def taken(
    target: ast.expr,
    iterable: ast.expr,
    builtin: Callable[[str], bool],
    values: Callable[[ast.expr], list[ast.expr] | None],
) -> list[tuple[ast.expr, ast.expr]]:
    """(part of ``target``, what it takes an item of, or the item itself) for ``for target in
    iterable``; ``builtin(name)``: whether ``name`` is the builtin there (the file does not
    bind it); ``values(d)``: every value the dict ``d`` may hold, or None where the code does
    not show them (``LiteralItems``): ``d.values()`` and ``d.items()`` hand those, each as
    the item it is (``for k, v in d.items()``: ``(v, item)`` per item)."""
    name = _builtin_call(iterable, builtin)
    while name in _SAME_ITEMS and isinstance(iterable, ast.Call) and len(iterable.args) == 1:
        iterable = iterable.args[0]
        name = _builtin_call(iterable, builtin)
    parts = _plain_items(target)
    view = _dict_view(iterable)
    if view is not None:
        held = values(view)
        if held is not None and iterable.func.attr == "values":  # type: ignore[attr-defined]
            return [(target, v) for v in held]
        if held is not None and parts is not None and len(parts) == 2:  # `k, v`: the value
            return [(parts[1], v) for v in held]
    rows = literal_rows(iterable)
    if (
        parts is not None and rows is not None and len(rows[0]) == len(parts)
    ):  # `for t, w in [(a, b), (c, d)]`: by position
        columns = [_column(iterable, [row[i] for row in rows]) for i in range(len(parts))]
        return [
            pair
            for p, c in zip(parts, columns, strict=True)
            for pair in taken(p, c, builtin, values)
        ]
    if not isinstance(iterable, ast.Call) or name is None:
        return [(target, iterable)]
    args = iterable.args
    if parts is None or any(isinstance(a, ast.Starred) for a in args):
        return [(target, iterable)]  # (`zip(*rows)`: as a whole; `strict=`, `start=` kept)
    if name == "enumerate" and len(args) == 1 and len(parts) == 2:
        return taken(parts[1], args[0], builtin, values)  # (the position: a number)
    if name == "zip" and len(args) == len(parts):
        pairs = zip(parts, args, strict=True)
        return [pair for part, arg in pairs for pair in taken(part, arg, builtin, values)]
    return [(target, iterable)]


def first_item_of(expr: ast.expr) -> ast.Name | None:
    """``ts`` of ``next(iter(ts))`` (the builtins, one argument each); else None."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)):
        return None
    if expr.func.id != "next" or len(expr.args) != 1 or expr.keywords:
        return None
    inner = expr.args[0]
    if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)):
        return None
    if inner.func.id != "iter" or len(inner.args) != 1 or inner.keywords:
        return None
    return inner.args[0] if isinstance(inner.args[0], ast.Name) else None


def literal_rows(iterable: ast.expr) -> list[list[ast.expr]] | None:
    """The items of each row of a literal list (tuple, set) of literal rows of one length,
    none starred (``[(model(x), torch.ones(2))]``); else None."""
    if not isinstance(iterable, ast.List | ast.Tuple | ast.Set) or not iterable.elts:
        return None
    rows = []
    for row in iterable.elts:
        if not isinstance(row, ast.Tuple | ast.List) or not row.elts:
            return None
        if any(isinstance(e, ast.Starred) for e in row.elts):
            return None
        rows.append(list(row.elts))
    return rows if len({len(r) for r in rows}) == 1 else None


def _column(iterable: ast.expr, items: list[ast.expr]) -> ast.expr:
    """A list of one position's items of a literal's rows, where the literal is; made once
    per literal and position, kept on the literal (the flow keeps what it learns by id)."""
    made: dict[tuple[int, ...], ast.expr] | None = getattr(iterable, _KEPT, None)
    if made is None:
        made = {}
        setattr(iterable, _KEPT, made)
    key = tuple(id(i) for i in items)
    if key not in made:
        made[key] = ast.copy_location(ast.List(elts=items, ctx=ast.Load()), iterable)
    return made[key]


_KEPT = "_torchport_columns"


def _plain_items(target: ast.expr) -> list[ast.expr] | None:
    """A tuple or list target's items, none starred; else None."""
    if not isinstance(target, ast.Tuple | ast.List):
        return None
    if any(isinstance(e, ast.Starred) for e in target.elts):
        return None
    return list(target.elts)


def _dict_view(expr: ast.expr) -> ast.expr | None:
    """``d`` of ``d.values()`` and of ``d.items()`` (no arguments), else None."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return None
    if expr.func.attr not in ("values", "items") or expr.args or expr.keywords:
        return None
    return expr.func.value


def _builtin_call(expr: ast.expr, builtin: Callable[[str], bool]) -> str | None:
    """The name of the builtin ``expr`` calls (``zip`` of ``zip(a, b)``), or None."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and builtin(expr.func.id):
        return expr.func.id
    return None


def positions_taken(targets: list[ast.expr], flags: tuple[bool, ...] | None) -> list[ast.expr]:
    """The parts of a tuple target (``targets``, one) at the positions ``flags`` marks: of
    an own call's returned tuples, which items are device values (``t, w = make()``,
    ``DeviceFlow.item_calls``); none where the target's shape is not the tuples'."""
    if flags is None or len(targets) != 1 or not isinstance(targets[0], ast.Tuple | ast.List):
        return []
    parts = targets[0].elts
    if len(parts) != len(flags) or any(isinstance(e, ast.Starred) for e in parts):
        return []
    return [part for part, device in zip(parts, flags, strict=True) if device]

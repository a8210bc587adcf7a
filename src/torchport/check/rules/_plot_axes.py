"""Matplotlib's Axes and Figure objects, as TP522 finds them: ``ax.plot(losses)`` reads its
data through numpy as ``plt.plot(losses)`` does.

An Axes is what ``plt.subplots()`` gives second (``fig, ax = ...``, ``fig, (a, b) = ...``,
``plt.subplots(2)[1]``), what ``plt.gca()``, ``plt.subplot(...)``, ``plt.axes()``,
``fig.add_subplot(...)``, ``fig.add_axes(...)``, ``fig.subplots(...)`` and ``ax.twinx()``
give, an item of an array of them (``axes[i]``, ``axes[i, j]``, ``axes.flat``, a loop
over them, ``enumerate`` or ``zip`` of them) and a parameter named ``ax`` (``axs``,
``axes``, ``ax2``). A Figure is ``plt.figure()``, ``plt.gcf()`` or what ``plt.subplots()``
gives first. A name is one only where every binding of it makes it one.

A method or function that takes a title, a label or a text (``set_title``, ``text``,
``legend``) formats what it is given (``str``, ``float``: a device tensor's works): none
of them is a read through numpy.
"""

from __future__ import annotations

import ast
import re
import weakref

from torchport.check._context import Context

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts, PortScope

__all__ = ["TEXT_TAKERS", "on_axes"]

TEXT_TAKERS = frozenset(
    {"title", "suptitle", "xlabel", "ylabel", "text", "figtext", "annotate", "legend",
     "set_title", "set_xlabel", "set_ylabel", "set_label", "savefig", "pause", "close",
     "set_xticklabels", "set_yticklabels", "set_ticklabels"}
)  # fmt: skip
_AXES, _FIGURE, _PAIR = "axes", "figure", "pair"
_PYPLOT = "matplotlib.pyplot."
_MADE = {  # what a pyplot function (or the Figure class) gives
    **dict.fromkeys(("gca", "subplot", "axes", "subplot2grid", "twinx", "twiny"), _AXES),
    **dict.fromkeys(("figure", "gcf"), _FIGURE),
    **dict.fromkeys(("subplots", "subplot_mosaic"), _PAIR),
}
# Methods of a Figure or an Axes that give Axes (one, or an array of them).
_GIVE_AXES = frozenset(
    {"add_subplot", "add_axes", "gca", "subplots", "subplot_mosaic", "twinx", "twiny",
     "inset_axes", "flatten", "ravel", "reshape", "squeeze", "item"}
)  # fmt: skip
_AXES_PARAMETER = re.compile(r"axe?s?\d*|axs|ax_\w+")
_DEPTH = 8
_Kind = str | tuple[str | None, ...] | None  # (a tuple: the items of `zip`, `enumerate`)


def on_axes(call: ast.Call, scope: PortScope, facts: PortFacts, ctx: Context) -> bool:
    """Whether ``call`` is a plotting method of an Axes (``ax.plot``, ``axes[0].imshow``,
    ``plt.gca().scatter``); not one that takes a text (:data:`TEXT_TAKERS`)."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr not in TEXT_TAKERS
        and _kind(func.value, scope, facts, ctx, 0) == _AXES
    )


def _kind(
    expr: ast.expr, scope: PortScope, facts: PortFacts, ctx: Context, depth: int
) -> str | None:
    """An Axes (or an array of them), a Figure, the pair ``plt.subplots()`` gives, or None."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, ast.Name):
        return _name_kind(expr.id, scope, facts, ctx, depth + 1)
    if isinstance(expr, ast.Call):
        name = ctx.qualname(expr.func) or ""
        if name.startswith(_PYPLOT) and name[len(_PYPLOT) :] in _MADE:
            return _MADE[name[len(_PYPLOT) :]]
        if name == "matplotlib.figure.Figure":
            return _FIGURE
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in _GIVE_AXES:
            of = _kind(func.value, scope, facts, ctx, depth + 1)
            return _AXES if of in (_AXES, _FIGURE) else None
        return None
    if isinstance(expr, (ast.Subscript, ast.Attribute)):
        of = _kind(expr.value, scope, facts, ctx, depth + 1)
        if isinstance(expr, ast.Attribute):
            return _AXES if of == _AXES and expr.attr in ("flat", "T") else None
        if of == _PAIR:  # `plt.subplots()[1]`
            index = expr.slice
            position = index.value if isinstance(index, ast.Constant) else None
            return _FIGURE if position == 0 else _AXES if position == 1 else None
        return _AXES if of == _AXES else None
    return None


def _name_kind(
    name: str, scope: PortScope, facts: PortFacts, ctx: Context, depth: int
) -> str | None:
    """What every binding of ``name`` where ``scope`` reads it makes it (once per name and
    scope: asked per call, a scan of the bindings each time would be quadratic)."""
    where = scope if name in scope.local else facts.module
    memo = _KINDS.setdefault(ctx, {})
    key = (id(where), name)
    if key in memo:
        return memo[key]
    memo[key] = None  # (a binding that reads the name itself: not an Axes)
    node = where.node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        if any(p.arg == name for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)):
            memo[key] = _AXES if _AXES_PARAMETER.fullmatch(name) else None
            return memo[key]
    kinds = {_bound(source, path, loop, where, facts, ctx, depth) for source, path, loop in
             _bindings(where, ctx).get(name, ())}  # fmt: skip
    memo[key] = kinds.pop() if len(kinds) == 1 else None
    return memo[key]


def _bound(
    source: ast.expr,
    path: tuple[int | None, ...],
    loop: bool,
    scope: PortScope,
    facts: PortFacts,
    ctx: Context,
    depth: int,
) -> str | None:
    """What a target at ``path`` of an assignment of ``source`` (or a loop over it) is."""
    kind: _Kind
    func = source.func if isinstance(source, ast.Call) else None
    if not loop:
        kind = _kind(source, scope, facts, ctx, depth)
    elif isinstance(func, ast.Name) and func.id in ("enumerate", "zip"):
        assert isinstance(source, ast.Call)
        items = [_kind(a, scope, facts, ctx, depth) for a in source.args]
        kind = (None, *items[:1]) if func.id == "enumerate" else tuple(items)
    else:
        kind = _kind(source, scope, facts, ctx, depth)  # an item of an array of Axes
        kind = _AXES if kind == _AXES else None
    for position in path:
        if kind == _PAIR:
            kind = _FIGURE if position == 0 else _AXES if position == 1 else None
        elif isinstance(kind, tuple):
            kind = kind[position] if position is not None and position < len(kind) else None
        elif kind != _AXES:
            return None
    return kind if isinstance(kind, str) else None


def _bindings(
    scope: PortScope, ctx: Context
) -> dict[str, list[tuple[ast.expr, tuple[int | None, ...], bool]]]:
    """Each name's bindings in ``scope``: (the value or the loop's iterable, the target's
    place in the unpacked tuple, whether a loop binds it); one scan per scope."""
    key = ("bindings", id(scope))
    memo = _INDEX.setdefault(ctx, {})
    if key in memo:
        return memo[key]
    found: dict[str, list[tuple[ast.expr, tuple[int | None, ...], bool]]] = {}
    bound = [(t, v, False) for targets, v in scope.assigns for t in targets]
    bound += [(n.target, n.iter, True) for n in scope.nodes if isinstance(n, ast.For)]
    for target, value, loop in bound:
        for name, path in _places(target, ()):
            found.setdefault(name, []).append((value, path, loop))
    memo[key] = found
    return found


def _places(
    target: ast.expr, path: tuple[int | None, ...]
) -> list[tuple[str, tuple[int | None, ...]]]:
    """The names a target binds and their places (``fig, (a, b)``: ``a`` at (1, 0))."""
    if isinstance(target, ast.Name):
        return [(target.id, path)]
    if isinstance(target, ast.Starred):
        return _places(target.value, (*path, None))
    if isinstance(target, (ast.Tuple, ast.List)):
        starred = any(isinstance(e, ast.Starred) for e in target.elts)
        return [
            place
            for i, elt in enumerate(target.elts)
            for place in _places(elt, (*path, None if starred else i))
        ]
    return []


_KINDS: weakref.WeakKeyDictionary[Context, dict[tuple[int, str], str | None]] = (
    weakref.WeakKeyDictionary()
)
_Bindings = dict[str, list[tuple[ast.expr, tuple[int | None, ...], bool]]]
_INDEX: weakref.WeakKeyDictionary[Context, dict[tuple[str, int], _Bindings]] = (
    weakref.WeakKeyDictionary()
)

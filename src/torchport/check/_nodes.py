"""Which fields of an ``ast`` node class hold child nodes: what a walk must look into.

``ast.iter_child_nodes`` asks every field of every node whether its value is a
node (an ``isinstance`` per value). The checker's walk runs over a million
nodes a second, so it asks once per class instead: for the node classes of
Python 3.11 this table names the fields that never hold a node (``Name.id``,
``Constant.value``, ``Global.names``, ...), and every other field holds a node,
``None`` or a list of nodes and ``None``. Classes the table does not know (added
by a later Python) are walked the careful way, value by value. :func:`nodes_among`
is ``ast.walk`` by this table, for the questions asked of a whole file;
:func:`children_getter` gives the engine's walk one getter per class.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Collection

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "UNPOSITIONED_FIELDS",
    "child_fields",
    "children_getter",
    "children_of",
    "nodes_among",
    "sole_target",
]

# Fields holding expression contexts and operators: nodes without a position.
UNPOSITIONED_FIELDS = frozenset({"ctx", "op", "ops"})

_NOT_NODES: dict[type[ast.AST], frozenset[str]] = {
    cls: frozenset(names)
    for cls, names in (
        (ast.FunctionDef, ("name", "type_comment")),
        (ast.AsyncFunctionDef, ("name", "type_comment")),
        (ast.ClassDef, ("name",)),
        (ast.Assign, ("type_comment",)),
        (ast.AnnAssign, ("simple",)),
        (ast.For, ("type_comment",)),
        (ast.AsyncFor, ("type_comment",)),
        (ast.With, ("type_comment",)),
        (ast.AsyncWith, ("type_comment",)),
        (ast.ImportFrom, ("module", "level")),
        (ast.Global, ("names",)),
        (ast.Nonlocal, ("names",)),
        (ast.FormattedValue, ("conversion",)),
        (ast.Constant, ("value", "kind")),
        (ast.Attribute, ("attr",)),
        (ast.Name, ("id",)),
        (ast.comprehension, ("is_async",)),
        (ast.ExceptHandler, ("name",)),
        (ast.arg, ("arg", "type_comment")),
        (ast.keyword, ("arg",)),
        (ast.alias, ("name", "asname")),
        (ast.MatchSingleton, ("value",)),
        (ast.MatchMapping, ("rest",)),
        (ast.MatchClass, ("kwd_attrs",)),
        (ast.MatchStar, ("name",)),
        (ast.MatchAs, ("name",)),
        (ast.TypeIgnore, ("lineno", "tag")),
    )
}

# Every other concrete node class of Python 3.11 holds nodes (or None) in all its fields.
_ALL_NODES = frozenset(
    {
        ast.Module, ast.Interactive, ast.Expression, ast.FunctionType, ast.Return, ast.Delete,
        ast.AugAssign, ast.While, ast.If, ast.Match, ast.Raise, ast.Try, ast.Assert, ast.Import,
        ast.Expr, ast.Pass, ast.Break, ast.Continue, ast.BoolOp, ast.NamedExpr, ast.BinOp,
        ast.UnaryOp, ast.Lambda, ast.IfExp, ast.Dict, ast.Set, ast.ListComp, ast.SetComp,
        ast.DictComp, ast.GeneratorExp, ast.Await, ast.Yield, ast.YieldFrom, ast.Compare,
        ast.Call, ast.JoinedStr, ast.Subscript, ast.Starred, ast.List, ast.Tuple, ast.Slice,
        ast.arguments, ast.withitem, ast.match_case, ast.MatchValue, ast.MatchSequence,
        ast.MatchOr,
        *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
    }
)  # fmt: skip


def child_fields(cls: type[ast.AST], *, unpositioned: bool) -> tuple[tuple[str, ...], bool]:
    """The fields of ``cls`` a walk looks into, and whether they are known to hold nodes only.

    Args:
        cls: A node class.
        unpositioned: Whether to keep ``ctx``/``op``/``ops`` (contexts and operators).

    Returns:
        ``(fields, exact)``. When ``exact``, each field holds a node, ``None`` or a
        list of nodes and ``None``; otherwise (a class this table does not know) a
        value may be anything and must be checked.
    """
    found = _CACHE.get((cls, unpositioned))
    if found is None:
        skipped = _NOT_NODES.get(cls, frozenset())
        if not unpositioned:
            skipped = skipped | UNPOSITIONED_FIELDS
        fields = tuple(name for name in cls._fields if name not in skipped)
        exact = cls in _NOT_NODES or cls in _ALL_NODES or not cls._fields
        found = _CACHE[(cls, unpositioned)] = (fields, exact)
    return found


_CACHE: dict[tuple[type[ast.AST], bool], tuple[tuple[str, ...], bool]] = {}


def nodes_among(tree: ast.AST, classes: Collection[type[ast.AST]]) -> list[ast.AST]:
    """The nodes of ``tree`` (itself included) whose exact class is in ``classes``, in
    ``ast.walk`` order (breadth first, children field by field, list items in order).

    Without ``ast.walk``'s two generators per node (``iter_child_nodes`` over
    ``iter_fields``): only the fields that may hold nodes are read. Contexts and
    operators are not looked into (never kept).
    """
    found: list[ast.AST] = []
    keep = found.append
    node_class = ast.AST
    fields_of: dict[type[ast.AST], tuple[tuple[str, ...], bool]] = {}
    order: list[ast.AST] = [tree]
    append = order.append
    for node in order:  # (the list grows while it is read: breadth first)
        cls = node.__class__
        if cls in classes:
            keep(node)
        fields = fields_of.get(cls)
        if fields is None:
            fields = fields_of[cls] = child_fields(cls, unpositioned=False)
        names, exact = fields
        for field_name in names:
            value = getattr(node, field_name, None)
            if value.__class__ is list:
                for item in value:
                    if (exact and item is not None) or isinstance(item, node_class):
                        append(item)
            elif (exact and value is not None) or isinstance(value, node_class):
                append(value)
    return found


def _no_children(node: ast.AST) -> tuple[()]:
    return ()


def children_getter(
    cls: type[ast.AST], *, unpositioned: bool
) -> tuple[Callable[[ast.AST], Any], bool, bool]:
    """A function giving the values of ``cls``'s child fields, whether it gives one value
    (not a tuple), and whether they are known to hold nodes only (see ``child_fields``).
    """
    fields, exact = child_fields(cls, unpositioned=unpositioned)
    if not fields:
        return _no_children, False, exact
    return operator.attrgetter(*fields), len(fields) == 1, exact


def children_of(node: ast.AST, cls: type[ast.AST], *, unpositioned: bool) -> list[Any]:
    """The values of ``node``'s child fields, None for a field it lacks."""
    fields, _ = child_fields(cls, unpositioned=unpositioned)
    return [getattr(node, name, None) for name in fields]


def sole_target(stmt: ast.AST | None) -> ast.Name | None:
    """The single plain name ``stmt`` binds (``x = ...``, ``x: T = ...``), else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        target = stmt.target
    else:
        return None
    return target if isinstance(target, ast.Name) else None

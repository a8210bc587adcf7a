"""Which rules a node goes to, by its name: the engine's dispatch by callee, attribute, constant.

The engine (:mod:`torchport.check._engine`) asks once per distinct key and keeps the
answer for the file: a call by the name it calls (and its import's last part, and the
keywords some rule lists), an attribute by its name, a constant by its value. A rule
that declares nothing (``None``) gets every node of its type.
"""

from __future__ import annotations

import ast

from torchport.check._rule import Rule

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["call_rules", "constant_rules", "named_rules"]


def named_rules(
    dispatch: dict[type[ast.AST], tuple[Rule, ...]], kind: type[ast.AST], name: str
) -> tuple[Rule, ...] | None:
    """The rules an attribute ``x.name`` goes to: those that want every one or list ``name``."""
    wanted = tuple(
        rule
        for rule in dispatch.get(kind, ())
        if rule.attr_names is None or name in rule.attr_names
    )
    return wanted or None


def call_rules(
    dispatch: dict[type[ast.AST], tuple[Rule, ...]], callee: Any
) -> tuple[Rule, ...] | None:
    """The rules a call goes to, by what ``_walk`` keys it on.

    ``callee`` is the name called (``recv.name(...)``, a bare ``name(...)``), or
    ``(name, import tail)`` for a bare name whose import ends in another name, either
    of them possibly paired with the call's keywords that some rule lists:
    ``(callee, (keyword, ...))``. A rule takes the call when it wants every call, lists
    one of the names in ``call_attrs`` or one of the keywords in ``call_keywords``.
    """
    keywords: tuple[str | None, ...] = ()
    if type(callee) is tuple and type(callee[1]) is tuple:
        callee, keywords = callee
    name, tail = callee if type(callee) is tuple else (callee, callee)
    wanted = tuple(
        rule
        for rule in dispatch.get(ast.Call, ())
        if (attrs := rule.call_attrs) is None
        or name in attrs
        or tail in attrs
        or (keywords and not rule.call_keywords.isdisjoint(keywords))
    )
    return wanted or None


def constant_rules(
    dispatch: dict[type[ast.AST], tuple[Rule, ...]], value: object
) -> tuple[Rule, ...] | None:
    """The rules a constant goes to: those that want every constant or ``value``."""
    try:
        wanted = tuple(
            rule
            for rule in dispatch.get(ast.Constant, ())
            if rule.constants is None or value in rule.constants
        )
    except TypeError:  # an unhashable value, which no rule can list
        wanted = tuple(r for r in dispatch.get(ast.Constant, ()) if r.constants is None)
    return wanted or None

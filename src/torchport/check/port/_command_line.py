"""Settings read from the command line: ``args.gamma`` after ``args = parser.parse_args()``.

argparse builds every value of its namespace from the command-line strings,
through the ``type=`` it is given: an argument declared with ``type=float``
(``int``, ``str``, ``bool``), a flag (``action="store_true"``, ``"count"``) or
one with neither a type nor an action (a string, or its literal default) is a
Python number, string or bool, never a tensor to move. An argument with any
other ``type=`` (a function of the file, ``torch.tensor``) or action, one the
file declares twice in ways that disagree, or an attribute the file also stores
(``args.device = torch.device(...)``) is not told here. Syntax only.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["CommandLine"]

_SCALAR_TYPES = frozenset({"int", "float", "str", "bool"})
_SCALAR_ACTIONS = frozenset({"store_true", "store_false", "count", "store"})


class CommandLine:
    """The command-line settings of one file (worked out on the first question, kept)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._scalars: frozenset[str] | None = None

    def scalar(self, expr: ast.Attribute) -> bool:
        """Whether ``expr`` reads a number, string or bool argparse made (see the module)."""
        if not isinstance(expr.value, ast.Name):
            return False
        if expr.attr not in self._scalar_names():
            return False
        found = self._ctx.scopes.bindings(expr.value.id, expr.value)
        return bool(found) and all(_parsed(b.value) for b in found)

    def _scalar_names(self) -> frozenset[str]:
        if self._scalars is not None:
            return self._scalars
        if "add_argument" not in self._ctx.source:
            self._scalars = frozenset()  # no argparse here: no node index built for it
            return self._scalars
        kinds: dict[str, bool] = {}  # dest -> every declaration of it a scalar
        stored: set[str] = set()
        for node in self._ctx.scopes.nodes_of(ast.Attribute):
            assert isinstance(node, ast.Attribute)
            if not isinstance(node.ctx, ast.Load):
                stored.add(node.attr)  # `args.device = ...`: not only what argparse made
        for node in self._ctx.scopes.nodes_of(ast.Call):
            assert isinstance(node, ast.Call)
            func = node.func
            if not isinstance(func, ast.Attribute) or func.attr != "add_argument":
                continue
            dest = _dest(node)
            if dest is not None:
                kinds[dest] = kinds.get(dest, True) and _scalar(node)
        self._scalars = frozenset(d for d, ok in kinds.items() if ok and d not in stored)
        return self._scalars


def _parsed(value: ast.expr | None) -> bool:
    """``parser.parse_args(...)`` or ``parser.parse_known_args(...)[0]``."""
    if isinstance(value, ast.Subscript):
        index = value.slice
        if not (isinstance(index, ast.Constant) and index.value == 0):
            return False
        value = value.value
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "parse_known_args"
        )
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "parse_args"
    )


def _dest(call: ast.Call) -> str | None:
    """The namespace attribute an ``add_argument`` call fills (None: not told)."""
    for k in call.keywords:
        if k.arg == "dest":
            return (
                k.value.value
                if isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)
                else None
            )
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if len(flags) != len(call.args) or not flags:
        return None
    long = [f for f in flags if f.startswith("--")]
    name = long[0] if long else flags[0]
    return name.lstrip("-").replace("-", "_") or None


def _scalar(call: ast.Call) -> bool:
    """Whether what an ``add_argument`` call declares is a number, string or bool."""
    words = {k.arg: k.value for k in call.keywords}
    if None in words:
        return False  # `**options`: the type is not told
    kind = words.get("type")
    if kind is not None and not (isinstance(kind, ast.Name) and kind.id in _SCALAR_TYPES):
        return False
    action = words.get("action")
    if action is not None and not (
        isinstance(action, ast.Constant) and action.value in _SCALAR_ACTIONS
    ):
        return False
    default = words.get("default")
    return default is None or isinstance(default, ast.Constant)

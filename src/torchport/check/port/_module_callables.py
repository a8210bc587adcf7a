"""A module's top-level defs and classes, each answered for when its name is asked.

The port asks a project module (or the file itself) about one callee at a time
(``_placing_callees.moved_of_call``: does ``f(...)`` or ``C(...)`` move what it is
handed?); working the answer out for every def and class of the module the first time
one name is asked read every class's ``__init__`` chain of timm's model files for the
few names a script calls. :class:`ModuleCallables` keeps the module's last binding of
each name and works an answer out once, for the name asked.
"""

from __future__ import annotations

import ast

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

    from torchport.check.port._placing_callees import Moved

__all__ = ["ModuleCallables"]

_DEFINES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BINDS = (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)


class ModuleCallables:
    """``get(name, default)``: ``answer(stmt, classes)`` for the module-level def or class
    ``stmt`` that binds ``name`` last (``classes``: each class name's last definition), or
    ``default`` where no def or class binds it, or an assignment or import (any name stored
    in it) comes after its last definition."""

    def __init__(
        self, tree: ast.Module, answer: Callable[[ast.stmt, dict[str, ast.ClassDef]], Moved]
    ) -> None:
        self._answer = answer
        self._last: dict[str, ast.stmt | None] = {}
        self._classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
        self._known: dict[str, Moved] = {}
        for stmt in tree.body:
            if isinstance(stmt, _DEFINES):
                self._last[stmt.name] = stmt
            elif isinstance(stmt, _BINDS):
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        self._last[node.id] = None
                    elif isinstance(node, ast.alias):
                        self._last[(node.asname or node.name).split(".")[0]] = None

    def get(self, name: str, default: Moved) -> Moved:
        stmt = self._last.get(name)
        if stmt is None:
            return default
        if name not in self._known:
            self._known[name] = self._answer(stmt, self._classes)
        return self._known[name]

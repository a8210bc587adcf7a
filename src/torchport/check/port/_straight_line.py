"""The value a read of a local name sees when the statements just before it assign it.

``paintings = a * np.power(x, 2); paintings = torch.from_numpy(paintings).float();
return paintings``: not every value of ``paintings`` is a tensor, but what the
``return`` reads is. :func:`assigned_just_before` answers for a read in a simple
statement (an assignment, a ``return``, an expression) of a function's own body,
from syntax alone: walking back over the earlier statements of the read's own block,
the first ``name = value`` (one target) is the value read, unless a statement in
between may bind the name (any store, ``del``, ``def``, ``class`` or import of it,
in a nested block too) or the function, or one nested in it, declares the name
``global`` or ``nonlocal``. Anything else (no assignment in the block, a read in a
compound statement's header) gets None: the caller falls back to every value.
"""

from __future__ import annotations

import ast
import weakref

__all__ = ["assigned_just_before"]

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Expr)
_BLOCK_FIELDS = ("body", "orelse", "finalbody")


class _Lines:
    """One function's simple statements: where each sits, and which statement holds each node."""

    __slots__ = ("declared", "holder", "where")

    def __init__(self, func: ast.AST) -> None:
        self.where: dict[int, tuple[list[ast.stmt], int]] = {}
        self.holder: dict[int, ast.stmt] = {}
        self.declared: set[str] = set()  # global or nonlocal here or in a nested function
        for node in ast.walk(func):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                self.declared.update(node.names)
        self._blocks(func)

    def _blocks(self, node: ast.AST) -> None:
        blocks = [getattr(node, f, None) for f in _BLOCK_FIELDS]
        blocks += [h.body for h in getattr(node, "handlers", ())]
        blocks += [c.body for c in getattr(node, "cases", ())]
        for block in blocks:
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if isinstance(stmt, _SIMPLE):
                    self.where[id(stmt)] = (block, i)
                    for inner in ast.walk(stmt):
                        self.holder[id(inner)] = stmt
                elif not isinstance(stmt, _NESTED):
                    self._blocks(stmt)


_LINES: weakref.WeakKeyDictionary[ast.AST, _Lines] = weakref.WeakKeyDictionary()


def _binds(stmt: ast.stmt, name: str) -> bool:
    """Whether ``stmt`` may bind or delete ``name`` (in any nested block, a nested def's name)."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and (
            node.name == name
        ):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (a.asname or a.name.partition(".")[0]) == name for a in node.names
        ):
            return True
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return True
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
            return True
        if isinstance(node, ast.MatchMapping) and node.rest == name:
            return True
    return False


def assigned_just_before(func: ast.AST | None, use: ast.Name) -> ast.expr | None:
    """The value of the ``name = value`` the statements before ``use`` last run, or None."""
    if func is None or not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    lines = _LINES.get(func)
    if lines is None:
        lines = _LINES[func] = _Lines(func)
    stmt = lines.holder.get(id(use))
    if stmt is None or use.id in lines.declared:
        return None
    block, index = lines.where[id(stmt)]
    name = use.id
    for earlier in reversed(block[:index]):
        if (
            isinstance(earlier, ast.Assign)
            and len(earlier.targets) == 1
            and isinstance(earlier.targets[0], ast.Name)
            and earlier.targets[0].id == name
        ):
            return earlier.value
        if _binds(earlier, name):
            return None
    return None

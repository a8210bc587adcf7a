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
import bisect
import weakref

__all__ = ["assigned_just_before"]

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Expr)
_BLOCK_FIELDS = ("body", "orelse", "finalbody")


class _Lines:
    """One function's simple statements, by position, and the block and index of each."""

    __slots__ = ("_declared", "ends", "starts", "statements", "where")

    def __init__(self, func: ast.AST) -> None:
        self.where: dict[int, tuple[list[ast.stmt], int]] = {}
        self.statements: list[ast.stmt] = []
        self._declared: set[str] | None = None
        self._blocks(func)
        self.statements.sort(key=_start)
        self.starts = [_start(s) for s in self.statements]
        self.ends = [_end(s) for s in self.statements]

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
                    self.statements.append(stmt)
                elif not isinstance(stmt, _NESTED):
                    self._blocks(stmt)

    def holder(self, use: ast.expr) -> ast.stmt | None:
        """The simple statement of this function's own body that holds ``use``, or None."""
        i = bisect.bisect_right(self.starts, _start(use)) - 1
        return self.statements[i] if i >= 0 and _end(use) <= self.ends[i] else None

    def declared(self, func: ast.AST) -> set[str]:
        """Names declared ``global`` or ``nonlocal`` in ``func`` (this table's function; not
        held here: the table lives as long as the function, keyed by it) or nested in it."""
        if self._declared is None:
            self._declared = set()
            for node in ast.walk(func):
                if isinstance(node, (ast.Global, ast.Nonlocal)):
                    self._declared.update(node.names)
        return self._declared


def _start(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


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
    stmt = lines.holder(use)
    if stmt is None:
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
            return None if name in lines.declared(func) else earlier.value
        if _binds(earlier, name):
            return None
    return None

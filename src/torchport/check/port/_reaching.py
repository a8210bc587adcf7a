"""Which bindings of a name may reach a use: what the port joins when no single one does.

:meth:`ScopeMap.reaching <torchport.check.semantic.ScopeMap.reaching>` answers
with the one binding every path passes last, or nothing. Where it has nothing
(``labels`` rebound under an ``if``, or in a loop), the port needs the bindings
that may reach the use, not every binding of the scope: a notebook reuses
``labels`` for a string at the top and for batches below, and the string must
not make the batch look unknown.

The answer walks back from the use's statement over the statements before it,
block by block outwards, keeping the bindings inside each, and stops at a
simple statement that binds the name on every path (an assignment, an import,
a ``def``); inside a loop, the bindings later in the loop's body may reach too
(the next iteration). A name free in the use's scope gets all its bindings.
"""

from __future__ import annotations

import ast

from torchport.check.semantic import Binding, BindingKind, ScopeMap

__all__ = ["may_reach"]

_BLOCKS = ("body", "orelse", "finalbody", "handlers")
_SURE = (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.FunctionDef,
         ast.AsyncFunctionDef, ast.ClassDef)  # fmt: skip
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


def _span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]
    return start, end


def _inside(b: Binding, node: ast.AST) -> bool:
    start, end = _span(node)
    at = (b.node.lineno, b.node.col_offset)  # type: ignore[attr-defined]
    return start <= at <= end


def may_reach(scopes: ScopeMap, name: ast.Name) -> list[Binding]:
    """The bindings of ``name`` that may be the one a read of it sees (see the module docstring)."""
    found = scopes.reaching(name.id, name)
    if found is not None:
        return [found]
    every = [b for b in scopes.bindings(name.id, name) if b.kind is not BindingKind.DELETE]
    if scopes.resolve(name.id, name) is not scopes.scope_of(name) or len(every) < 2:
        return every
    out: list[Binding] = []
    child: ast.AST | None = scopes.statement(name)
    while child is not None:
        holder = scopes.parent(child)
        if holder is None:
            break
        block = next(
            (
                b
                for f in _BLOCKS
                if isinstance(b := getattr(holder, f, None), list) and any(s is child for s in b)
            ),
            None,
        )
        if block is not None:
            index = next(i for i, s in enumerate(block) if s is child)
            for stmt in reversed(block[:index]):
                inside = [b for b in every if _inside(b, stmt)]
                out += inside
                if inside and _sure(stmt, inside):
                    return out  # bound on every path here: what came before is overwritten
        entry = [b for t in _header_targets(holder, child) for b in every if _inside(b, t)]
        if entry:
            return out + entry  # `for x in ...:` binds `x` before each run of its body
        if isinstance(holder, _LOOPS):
            out += [b for b in every if _inside(b, holder) and b not in out]  # next iteration
        if isinstance(holder, _SCOPES):
            break
        child = holder
    return out or every


def _sure(stmt: ast.stmt, inside: list[Binding]) -> bool:
    """Whether running ``stmt`` always leaves one of ``inside`` (its bindings of the name)."""
    if isinstance(stmt, _SURE):
        return True
    if isinstance(stmt, (ast.With, ast.AsyncWith)):  # its body runs whenever it goes on
        return any(isinstance(s, _SURE) and any(_inside(b, s) for b in inside) for s in stmt.body)
    return False


def _header_targets(holder: ast.AST, child: ast.AST) -> list[ast.expr]:
    """The targets a loop or ``with`` binds before running the block that holds ``child``."""
    if isinstance(holder, (ast.For, ast.AsyncFor)) and any(s is child for s in holder.body):
        return [holder.target]
    if isinstance(holder, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in holder.items if i.optional_vars is not None]
    return []

"""Whether a script surely runs a statement when it runs: in its body, or in its ``main``.

``rules/_cuda_projects.py`` counts a **helper of apex scripts** as needing CUDA anyway (its
docstring holds the invariant): every importer of the helper is a script that surely imports
apex at its top and surely calls one of ``APEX_CUDA_CALLS`` (``amp.initialize``, apex's
``DistributedDataParallel``) when it runs. This module reads the "surely calls" part, given
the test of a statement (``_cuda_projects._calls_apex_cuda``).

It is read where the run starts: a statement of the module body itself, or of the function
the ``if __name__ == "__main__":`` block calls at its own level (``main()``,
``sys.exit(main())``; that function defined once at the module's top, bound nowhere else
there, no generator), not behind an ``if``, ``try``, loop or ``with``, and with no statement
before it (in that body, or before the call in the ``__main__`` block) holding a ``return``,
``raise``, ``assert``, ``yield`` or a call of ``sys.exit``/``os._exit``/``exit``/``quit``
(a mode that ends first: ``if evaluate: validate(); return``). A call in another function
``main`` calls is not read. The ``__main__`` route counts for the helper only where no module
of the repository imports the script (imported, its ``main`` need not run): asked by
``_cuda_projects``, which also keeps each script's answer per path for the run.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.rules._importers import is_main_block

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["surely_runs"]

_EXITS = frozenset({"sys.exit", "os._exit", "exit", "quit"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def surely_runs(
    ctx: Context, tree: ast.Module, calls: Callable[[Context, ast.stmt], bool]
) -> str | None:
    """Where a statement ``calls`` holds surely runs when the module runs: ``"module"`` (its
    body), ``"entry"`` (the function its ``__main__`` block calls), or None (neither)."""
    if _surely_calls(ctx, tree.body, calls):
        return "module"
    entry = _entry(ctx, tree)
    return "entry" if entry is not None and _surely_calls(ctx, entry.body, calls) else None


def _entry(ctx: Context, tree: ast.Module) -> ast.FunctionDef | None:
    """The function ``if __name__ == "__main__":`` calls at its own level (``main()``,
    ``sys.exit(main())``) after statements that cannot leave: defined once at the module's top,
    bound nowhere else there, no generator."""
    for stmt in tree.body:
        if not (isinstance(stmt, ast.If) and is_main_block(stmt)):
            continue
        for inner in stmt.body:
            call = inner.value if isinstance(inner, ast.Expr) else None
            if isinstance(call, ast.Call) and ctx.qualname(call.func) == "sys.exit" and call.args:
                call = call.args[0]
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                return _defined_once(tree, call.func.id)
            if _may_leave(ctx, inner):
                return None
    return None


def _defined_once(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    bound = [s for s in tree.body if name in _bound_names(s)]
    if len(bound) != 1 or not isinstance(bound[0], ast.FunctionDef):
        return None
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(bound[0])):
        return None  # calling a generator function runs none of its body
    return bound[0]


def _bound_names(stmt: ast.stmt) -> set[str]:
    """Names a module-level statement binds (anywhere in it: an ``if`` arm's ``def`` too)."""
    names: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).partition(".")[0])
    return names


def _surely_calls(
    ctx: Context, body: list[ast.stmt], calls: Callable[[Context, ast.stmt], bool]
) -> bool:
    """A statement of ``body`` itself ``calls``, and none before it may leave ``body``."""
    for stmt in body:
        if calls(ctx, stmt):
            return True
        if _may_leave(ctx, stmt):
            return False
    return False


_LEAVES = (ast.Return, ast.Raise, ast.Assert, ast.Yield, ast.YieldFrom, ast.Await)


def _may_leave(ctx: Context, stmt: ast.stmt) -> bool:
    """``stmt`` holds a ``return``, ``raise``, ``assert``, ``yield`` or a call of ``sys.exit``
    (or its like), outside the functions it defines."""
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, _LEAVES):
            return True
        if isinstance(node, ast.Call):
            name = ctx.qualname(node.func) or getattr(node.func, "id", None)
            if name in _EXITS:
                return True
        if not isinstance(node, (*_FUNCTIONS, ast.Lambda)):  # run when called, not here
            todo.extend(ast.iter_child_nodes(node))
    return False

"""One file's project view, shared by the port and the fix (once per file, on first use).

:func:`project_of` is :func:`~torchport.check.port._project.project_imports` kept in the
file's ``Context.memo``; :func:`project_owners` is the same view for a question about owners
only (a check's: its port kinds are made if the port asks later, by :func:`project_of`);
:func:`project_answer` and :func:`project_methods` are what a fix asks of it about a
receiver (``semantic/_receivers.py``; see ``_project_owners.py``).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.port._project import (
    ProjectImports,
    complete,
    nested_methods,
    project_imports,
)
from torchport.check.port._project_owners import UNRESOLVED, decide
from torchport.check.semantic._string_fields import STRING_DEVICE

__all__ = ["project_answer", "project_methods", "project_of", "project_owners"]

_MEMO = "project.imports"  # Context.memo's key: one project view per file, port's and fix's


def project_of(ctx: Context) -> ProjectImports:
    """The file's project view (:func:`~torchport.check.port._project.project_imports`), once,
    complete: every kind the port reads."""
    found = ctx.memo.get(_MEMO)
    if found is None:
        found = ctx.memo[_MEMO] = project_imports(ctx)
    else:
        complete(found, ctx)  # type: ignore[arg-type]  # (a view made for owners: its kinds)
    return found  # type: ignore[return-value]


def project_owners(ctx: Context) -> ProjectImports:
    """The file's project view for its owners, unresolved names and modules only (its port
    kinds are not made: reading one raises until :func:`project_of` completes the view)."""
    found = ctx.memo.get(_MEMO)
    if found is None:
        found = ctx.memo[_MEMO] = project_imports(ctx, kinds=False)
    return found  # type: ignore[return-value]


def project_answer(expr: ast.expr, method: str, ctx: Context, *, instance: bool) -> str | None:
    """``"torch"``, ``"other"``, ``"unknown"`` (:func:`decide`) for a name or ``alias.name``
    bound by an import of the project's own modules, or a name bound by nothing in a file
    with a star import of one (an unreadable one: ``"other"``); None: no project's name.
    Asked for :data:`STRING_DEVICE` of a class (``instance`` False): ``"string"`` where it
    annotates its ``device`` field as a string (``semantic/_string_fields.py``), else
    ``"unknown"``."""
    project = project_owners(ctx)
    owned = project.owner_of(expr)
    if owned is None and isinstance(expr, ast.Name) and project.star_unresolved:
        owned = UNRESOLVED
    if owned is not None and method == STRING_DEVICE:
        return "string" if not owned[0] and STRING_DEVICE in owned[1] else "unknown"
    return None if owned is None else decide(owned, method, instance)


def project_methods(ctx: Context) -> frozenset[str]:
    """Device methods of their own that the project's classes and instances the file imports
    have, or those of any module of the project it imports from (a value one of its functions
    returns: ``make_batch()``), torch's subclasses aside (once per file): an unknown
    receiver's may be theirs."""
    found = ctx.memo.get("project.methods")
    if found is None:
        view = project_owners(ctx)
        names: set[str] = set(view.module_methods) | nested_methods(ctx)
        for _, methods, lineage in view.owners.values():
            if lineage != "torch":
                names |= methods
        found = ctx.memo["project.methods"] = frozenset(names)
    return found  # type: ignore[return-value]

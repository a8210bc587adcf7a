"""Which of the file's functions a call runs: the port's call sites for models.

A model handed to a function of the file (``train(model, loader)``), to a method
of one of its classes (``Job().run(model)``, ``job.run(model)``) or to a class's
``__init__`` (``Job(model)``) is followed into that function's parameter, so the
tensors made there for it are moved. A method name several of the file's classes
define is settled by the receiver's class (``Job1()``, a name bound only to one);
where that is unknown the call is recorded in ``PortFacts.unresolved_calls`` and
a model handed to it is reported (TP523) instead.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchport.check.port._device_flow import PortScope

if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = ["callee", "methods_by_name"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_Function = ast.FunctionDef | ast.AsyncFunctionDef


def methods_by_name(scopes: list[PortScope]) -> dict[str, list[tuple[_Function, str]]]:
    """Methods of the file's own classes (not a library's): name -> (method, class).

    Each method is also under ``"<class>.<name>"`` (no method name has a dot):
    ``Job(model)`` and ``job.run(model)`` look their class's up at once; a scan of
    every method of that name for each call was quadratic in the file's classes.
    """
    found: dict[str, list[tuple[_Function, str]]] = {}
    for scope in scopes[1:]:
        node = scope.node
        if scope.cls is not None and not scope.internal and isinstance(node, _FUNCTIONS):
            found.setdefault(node.name, []).append((node, scope.cls.name))
            found.setdefault(f"{scope.cls.name}.{node.name}", []).append((node, scope.cls.name))
    return found


def callee(
    facts: PortFacts,
    node: ast.Call,
    scope: PortScope,
    methods: dict[str, list[tuple[_Function, str]]],
) -> tuple[_Function, int] | None:
    """The file's function a call runs, and how many leading parameters it fills itself."""
    func = node.func
    if isinstance(func, ast.Name):
        found = facts.functions.get(func.id)
        # Not shadowed by a local of another kind (`x not in local - functions`, without
        # building that set for every call).
        if found is not None and (func.id not in scope.local or func.id in facts.functions):
            return found, 0
        inits = [m for m, _ in methods.get(f"{func.id}.__init__", ())]
        return (inits[0], 1) if len(inits) == 1 else None  # `Job(model)`
    if isinstance(func, ast.Attribute) and func.attr != "__init__":
        # `Job().run(model)`, `job.run(model)`: a method of one of the file's classes,
        # the one of the receiver's class, or the only one of that name.
        candidates = methods.get(func.attr, [])
        if len(candidates) > 1:
            owner = _class_of(facts, func.value, scope)
            candidates = methods.get(f"{owner}.{func.attr}", []) if owner else []
            if len(candidates) != 1:
                facts.unresolved_calls.add(id(node))  # a model handed here: reported
                return None
        if len(candidates) == 1:
            method = candidates[0][0]
            static = any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list
            )
            return method, 0 if static else 1
    return None


def _class_of(facts: PortFacts, expr: ast.expr, scope: PortScope) -> str | None:
    """The file's class an object is made from (``Job()``, ``job`` bound only to one)."""
    if isinstance(expr, ast.Name) and expr.id == "self" and scope.cls is not None:
        return scope.cls.name
    values = [expr]
    if isinstance(expr, ast.Name):
        values = facts.bindings(expr.id, scope) or []
    names = {
        v.func.id if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) else None
        for v in values
    }
    return names.pop() if len(names) == 1 else None

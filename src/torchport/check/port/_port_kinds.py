"""The kinds of one project module's names that only the port reads (:class:`PortKinds`).

:func:`port_kinds` works them out from the module's ``Context``, its own project view and
what it knows of its models (``_project._facts_of``: the classes, which a check's owners
need too, are worked out there). A view built for a check's owners only leaves them to
their first read (``_project.later_kinds``): what they rest on is kept (the module's text,
its view with the records it left, its model classes), the text parsed again if it was let
go, and the answers are the same, as each is a function of those alone.
"""

from __future__ import annotations

import ast
from functools import partial

from torchport.check._context import Context
from torchport.check.port._host_functions import host_functions
from torchport.check.port._lambda_factories import bound_lambdas, spelled_classes
from torchport.check.port._models import ModelKnowledge
from torchport.check.port._module_facts import PortKinds
from torchport.check.port._module_functions import (
    builds,
    converted_inputs,
    cpu_tensor,
    makes_cpu_tensor,
    returns_all,
    takes_device,
    tensor_positions,
    viewed_parameters,
)
from torchport.check.port._reexports import with_reexports

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import TypeVar

    from torchport.check.port._project_imports import ProjectImports

    T = TypeVar("T")

__all__ = ["may_hold", "port_kinds"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def may_hold(tree: ast.Module) -> frozenset[str]:
    """The names :func:`port_kinds` may put in a kind: the module-level functions, and the
    single ``name = value`` targets at module level (tensors, devices)."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, _FUNCTIONS):
            names.add(stmt.name)
        elif (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            names.add(stmt.targets[0].id)
    return frozenset(names)


def port_kinds(
    ctx: Context, imported: ProjectImports, knowledge: ModelKnowledge, models: frozenset[str]
) -> PortKinds:
    """The port's kinds of the module ``ctx`` holds; ``imported``: its project view (complete),
    ``knowledge``: its model classes worked out (``models``: those it defines)."""
    tree = ctx.tree
    knowledge.factories |= imported.factories
    functions = [n for n in tree.body if isinstance(n, _FUNCTIONS)]
    lambdas = _bound_lambdas(tree)
    spelled = _bound_spellings(ctx, tree)  # `Net = functools.partial(_Net)` (x31al)
    for _ in range(2):  # a factory calling another factory of the module
        before = len(knowledge.factories)
        for func in functions:
            if returns_all(func, partial(builds, knowledge, func=func)):
                knowledge.factories.add(func.name)
        for name, lams in lambdas.items():  # `Net = lambda: _Net()` (k31ak: the importer's input)
            if any(builds(knowledge, lam.body, func=lam) for lam in lams):
                knowledge.factories.add(name)
        for name, made in spelled.items():
            if any(builds(knowledge, m, func=tree) for m in made):
                knowledge.factories.add(name)
        if len(knowledge.factories) == before:
            break  # nothing new: a second round asks the same of the same knowledge
    tensor_functions = {
        f.name
        for f in functions
        if not takes_device(f) and returns_all(f, partial(cpu_tensor, ctx, func=f))
    }
    tensors: set[str] = set()
    devices: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if not isinstance(target, ast.Name):
                continue
            if cpu_tensor(ctx, stmt.value, func=None):
                tensors.add(target.id)
            elif (
                isinstance(stmt.value, ast.Call) and ctx.qualname(stmt.value.func) == "torch.device"
            ):
                devices.add(target.id)
    views = [(f.name, v) for f in functions if (v := viewed_parameters(f))]
    converted = [
        (c.name, positions)
        for c in tree.body
        if isinstance(c, ast.ClassDef)
        and c.name in models
        and (positions := converted_inputs(ctx, c))
    ]
    hosts = host_functions(ctx, tree)
    own = PortKinds(
        factories=frozenset(
            knowledge.factories & {*(f.name for f in functions), *lambdas, *spelled}
        ),
        tensor_functions=frozenset(tensor_functions),
        tensors=frozenset(tensors),
        devices=frozenset(devices),
        cpu_functions=frozenset(f.name for f in functions if makes_cpu_tensor(ctx, f)),
        view_functions=frozenset(name for name, _ in views),
        views=tuple(views),
        converted=tuple(converted),
        host_functions=hosts[0],
        host_items=hosts[1],
        tensor_items=tuple(
            (f.name, found) for f in functions if (found := tensor_positions(ctx, f)) is not None
        ),
    )
    return with_reexports(ctx, imported, own)  # and what it re-exports, of the same kinds


def _bound_spellings(ctx: Context, tree: ast.Module) -> dict[str, list[ast.expr]]:
    """``name = functools.partial(_Net)`` and the other spellings of a class at module level
    (``_lambda_factories.spelled_classes``), bound once (``name``): calls of the class."""
    found: dict[str, list[ast.expr]] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and (classes := spelled_classes(tree, stmt.value, ctx.qualname))
        ):
            calls = [ast.copy_location(ast.Call(func=c, args=[], keywords=[]), c) for c in classes]
            found[stmt.targets[0].id] = calls  # type: ignore[assignment]
    return _bound_once(tree, found) if found else found


def _bound_lambdas(tree: ast.Module) -> dict[str, list[ast.Lambda]]:
    """Each name module-level statements bind to lambdas (``_lambda_factories.bound_lambdas``:
    ``name = lambda ...: body``, annotated, a tuple's element, a walrus, a conditional's two, a
    lambda's lambda called), the module level's only binding of ``name``: offered as a factory
    returning their bodies."""
    found: dict[str, list[ast.Lambda]] = {}
    for name, _, lambdas in bound_lambdas(list(tree.body), tree):
        found.setdefault(name, lambdas)
    return _bound_once(tree, found) if found else found


def _bound_once(tree: ast.Module, found: dict[str, T]) -> dict[str, T]:
    """Those of ``found`` the module level binds once (no def, class or import of them)."""
    counts: dict[str, int] = {}
    for stmt in tree.body:
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef, ast.Import, ast.ImportFrom)):
            names = [
                getattr(stmt, "name", None),
                *(a.asname or a.name for a in getattr(stmt, "names", ())),
            ]
            for name in names:
                counts[(name or "").partition(".")[0]] = 2
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                counts[node.id] = counts.get(node.id, 0) + 1
    return {name: held for name, held in found.items() if counts.get(name) == 1}

"""What a project module gives its importers of other project modules' names: its re-exports.

A package's ``__init__`` binds a name by importing it from a module of the project
(``from .model import make_model``), by a chain of such imports, a star import, or an alias
(``make = make_model``, ``Net = model.Net``): an importer of the package (``from pkg import
make_model``, ``pkg.SCALE``) gets the thing defined there, of the same kind. Each kind the
view holds follows the same resolution: :func:`reexported_classes` for the model classes
(``_project._facts_of``: a check's owners need them), :func:`with_reexports` for the port's
kinds (``_port_kinds.port_kinds``), and :func:`imported_names` for what an importer may ask
of a module before its kinds are made (``ModuleFacts.may_give``).

A name the module binds by more than its import (twice, or an import and a def) is no
re-export: which binding an importer gets, the code decides when it runs
(``_unsure_names.py`` tells the model classes and factories among them).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from torchport.check._context import Context
from torchport.check._match import dotted_parts
from torchport.check.port._module_facts import PortKinds
from torchport.check.port._project_owners import module_aliases
from torchport.check.semantic import Binding, BindingKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._project_imports import ProjectImports

__all__ = [
    "imported_names",
    "only_import",
    "reexported_classes",
    "with_reexports",
]

# The port's kinds of names (PortKinds' sets) a re-export or alias carries over
_SETS = (
    "factories",
    "tensor_functions",
    "tensors",
    "devices",
    "cpu_functions",
    "view_functions",
    "host_functions",
)


def only_import(bindings: Sequence[Binding]) -> bool:
    """A module-level name that nothing but imports binds."""
    return bool(bindings) and all(b.kind is BindingKind.IMPORT for b in bindings)


def imported_names(tree: ast.Module) -> tuple[frozenset[str], bool]:
    """The names the module binds at module level by ``from ... import name`` (also in
    ``if``/``try`` blocks), and whether it has a star import there: the names a port kind
    may hold besides ``may_hold``'s (a re-export), asked without making the kinds."""
    names: set[str] = set()
    starred = False
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.name == "*":
                    starred = True
                else:
                    names.add(alias.asname or alias.name)
        elif isinstance(stmt, (ast.If, ast.Try)):
            stack.extend((*stmt.body, *stmt.orelse, *getattr(stmt, "finalbody", [])))
            for handler in getattr(stmt, "handlers", []):
                stack.extend(handler.body)
    return frozenset(names), starred


def _given(bindings: dict[str, list[Binding]], name: str) -> bool:
    """Bound at module level by imports alone, or by nothing there (a star import)."""
    return name not in bindings or only_import(bindings[name])


def reexported_classes(ctx: Context, imported: ProjectImports, known: set[str]) -> frozenset[str]:
    """The model classes of other project modules the module ``ctx`` binds at module level
    by an import alone (or a star import: no binding of its own), or by one ``Name = Other``
    (or ``= module.Other``) of a model class (its only binding there)."""
    bindings = ctx.scopes.module.bindings
    out = {n for n in imported.classes if _given(bindings, n)}
    for name, value in module_aliases(ctx, bindings):
        if (isinstance(value, ast.Name) and value.id in known) or (
            isinstance(value, ast.Attribute) and imported.model_class(value)
        ):
            out.add(name)
    return frozenset(out)


def with_reexports(ctx: Context, imported: ProjectImports, own: PortKinds) -> PortKinds:
    """``own``, the port's kinds of the names the module ``ctx`` defines, with those of the
    names it re-exports (module docstring); ``imported``: its project view (complete)."""
    bindings = ctx.scopes.module.bindings
    sets = {attr: set(getattr(own, attr)) for attr in _SETS}
    views, converted = dict(own.views), dict(own.converted)
    host_items, tensor_items = dict(own.host_items), dict(own.tensor_items)
    given: set[str] = set()
    for attr in _SETS:
        taken = {n for n in getattr(imported, attr) if _given(bindings, n)}
        sets[attr] |= taken
        given |= taken  # (a star import's too: no `functions` record there)
    views.update((n, v) for n, v in imported.viewed.items() if _given(bindings, n))
    converted.update((n, v) for n, v in imported.converted.items() if _given(bindings, n))
    host_items.update((n, v) for n, v in imported.host_items.items() if _given(bindings, n))
    tensor_items.update((n, v) for n, v in imported.tensor_items.items() if _given(bindings, n))
    given.update(n for n in imported.functions if _given(bindings, n))
    for name, value in module_aliases(ctx, bindings):
        if isinstance(value, ast.Name):
            source = value.id
            held = {attr: source in sets[attr] for attr in _SETS}
            info = (views, converted, host_items, tensor_items)
            found = [d.get(source) for d in info]
            if source in given:
                given.add(name)
        else:
            assert isinstance(value, ast.Attribute)
            parts = dotted_parts(value.value)
            facts = imported.modules.get(".".join(parts)) if parts is not None else None
            if facts is None:
                continue
            source = value.attr
            held = {attr: source in getattr(facts, attr) for attr in _SETS}
            found = [
                dict(facts.views).get(source),
                dict(facts.converted).get(source),
                dict(facts.host_items).get(source),
                dict(facts.tensor_items).get(source),
            ]
            if source in facts.may_hold or source in facts.given:
                given.add(name)
        for attr, is_held in held.items():
            if is_held:
                sets[attr].add(name)
        for kept, got in zip((views, converted, host_items, tensor_items), found, strict=True):
            if got is not None:
                kept[name] = got  # type: ignore[index]
    return PortKinds(
        **{attr: frozenset(names) for attr, names in sets.items()},
        views=tuple(views.items()),
        converted=tuple(converted.items()),
        host_items=tuple(host_items.items()),
        tensor_items=tuple(tensor_items.items()),
        given=frozenset(given),
    )

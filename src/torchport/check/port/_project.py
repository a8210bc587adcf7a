"""The project a file belongs to: what its sibling modules give the port.

A script rarely holds its model: ``train.py`` does ``from model import Net``,
``from .helpers import make_mask`` or ``import utils``. Each file is ported on its
own, so a port that sees only the file takes ``Net()`` for an unknown call and
moves nothing. :func:`project_imports` answers, for one file, which names its
module-level imports bind to the project's own modules, and what those are:

* **model classes**: ``nn.Module`` subclasses (directly, through the module's
  own classes, or through a base another project module defines);
* **model factories**: module-level functions whose returns build a model;
* **tensor functions**: module-level functions whose every return is a tensor a
  torch factory made on the CPU (``torch.from_numpy(mask)``, ``torch.ones(n)``),
  with no ``device`` parameter: their result is on the CPU wherever it is used;
* **tensors** and **devices**: module-level names bound to such a tensor, or to
  a ``torch.device(...)``;
* **CPU functions**: module-level functions that make a tensor on the CPU (a torch
  factory with no ``device``) or read one into numpy anywhere in their body: a
  device value handed to one meets the CPU there, in a file the importing file's
  port does not change (``utils.shift(model(x))``): reported where it is handed;
* **view functions**: module-level functions whose every return is a slice or view
  of their own parameters (TCN's ``get_batch(source, i)`` returning
  ``source[:, i:j].contiguous()``): what a call gives lives where the tensors
  handed to those parameters live, so the importing file follows the arguments.

A module is found the way Python finds it when the script runs from its own
folder: beside the importing file, then at the root above its packages
(the first folder up without an ``__init__.py``); relative imports from the
importing file's package. Each module's facts are computed once per process and
file version (path, size, mtime), from syntax only: nothing is imported, and
nothing here imports torch; a package's from its ``__init__`` (:func:`module_facts`).
A file with no path on disk (stdin, a string) has no project.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from torchport.check._context import Context
from torchport.check._listing import recorded, span, still
from torchport.check._match import dotted_parts
from torchport.check._syntax import keep_parsed, parsed_module, retain_checked
from torchport.check.port._host_functions import host_functions
from torchport.check.port._models import ModelKnowledge
from torchport.check.port._module_facts import KINDS, NOT_GIVEN, ModuleFacts
from torchport.check.port._module_files import Lookups, top_package
from torchport.check.port._module_functions import (
    builds,
    converted_inputs,
    cpu_tensor,
    makes_cpu_tensor,
    returns_all,
    takes_device,
    viewed_parameters,
)
from torchport.check.port._project_owners import (
    UNRESOLVED,
    Owned,
    bound_names,
    owners_of,
    rebound_by_own_call,
)
from torchport.check.port._script_path import find_on_script_path
from torchport.check.port._star_imports import record_star, star_chain
from torchport.check.semantic import Binding, BindingKind

__all__ = ["KINDS", "ModuleFacts", "ProjectImports", "module_facts", "project_imports"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(slots=True)
class ProjectImports:
    """One file's view of its project: local name -> what the imported thing is.

    Built by adding to the kinds' sets; the first :meth:`lookup` of a name indexes every
    name by its kind and freezes those sets (the view is complete once asked: a later
    ``add`` raises instead of going unseen by the index).
    """

    classes: Set[str] = field(default_factory=set)
    factories: Set[str] = field(default_factory=set)
    tensor_functions: Set[str] = field(default_factory=set)
    tensors: Set[str] = field(default_factory=set)
    devices: Set[str] = field(default_factory=set)
    plain_classes: Set[str] = field(default_factory=set)
    cpu_functions: Set[str] = field(default_factory=set)
    view_functions: Set[str] = field(default_factory=set)
    modules: dict[str, ModuleFacts] = field(default_factory=dict)  # `import utils as u`
    viewed: dict[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    # model class (local name) -> the forward's inputs it makes its own tensor of
    converted: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # local name -> whose device methods it has (_project_owners.py); names bound to a
    # project module's name that cannot be read; a star import of a module that cannot be
    # (apart from equality: the port's views compare without them)
    owners: dict[str, Owned] = field(default_factory=dict, compare=False)
    unresolved: set[str] = field(default_factory=set, compare=False)
    # local names of functions whose every return is host data (_host_functions.py)
    host_functions: set[str] = field(default_factory=set, compare=False)
    host_items: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False)
    star_unresolved: bool = field(default=False, compare=False)
    # name -> the first kind (in KINDS's order) holding it; built by the first lookup
    _index: dict[str, str] | None = field(default=None, init=False, repr=False, compare=False)

    def viewed_parameters(self, func: ast.expr) -> tuple[tuple[int, str], ...] | None:
        """For a view function (``get_batch``, ``utils.get_batch``): the ``(position,
        name)`` of each parameter its returns are views of (position -1: keyword-only)."""
        if isinstance(func, ast.Name):
            return self.viewed.get(func.id) if func.id in self.view_functions else None
        if isinstance(func, ast.Attribute) and self.modules:
            owner = _dotted(func.value)
            facts = self.modules.get(owner) if owner is not None else None
            if facts is not None and func.attr in facts.view_functions:
                return dict(facts.views).get(func.attr)
        return None

    def owner_of(self, expr: ast.expr) -> Owned | None:
        """Whose device methods the name or ``alias.name`` has, if a project module binds it.

        :data:`~torchport.check.port._project_owners.UNRESOLVED` where the project's module
        cannot be read; None where the name is no project module's.
        """
        if isinstance(expr, ast.Name):
            if expr.id in self.owners:
                return self.owners[expr.id]
            return UNRESOLVED if expr.id in self.unresolved else None
        if not isinstance(expr, ast.Attribute):
            return None
        owner = _dotted(expr.value)
        if owner is None:
            return None
        if owner.partition(".")[0] in self.unresolved:
            return UNRESOLVED  # `batch.Batch` after `from . import batch`, unreadable
        facts = self.modules.get(owner)
        if facts is None:
            return None
        found = facts.owned.get(expr.attr)
        if found is None and expr.attr not in facts.defined:
            return UNRESOLVED  # bound there by a star or dynamic import
        return found

    def lookup(self, expr: ast.expr) -> tuple[str, str] | None:
        """``(kind, name)`` for a name or ``alias.name`` the project defines, else None.

        ``kind`` is one of ``"class"``, ``"factory"``, ``"tensor_function"``,
        ``"tensor"``, ``"device"``, ``"plain_class"`` (a class that is no model),
        ``"cpu_function"`` (a plain function making CPU tensors; a tensor function or
        a factory is told as that first).
        """
        if isinstance(expr, ast.Name):  # asked of every call's function: one dict read
            index = self._index
            if index is None:
                index = self._sealed()
            kind = index.get(expr.id)
            return None if kind is None else (kind, expr.id)
        if isinstance(expr, ast.Attribute) and self.modules:  # (asked of every call)
            owner = _dotted(expr.value)
            facts = self.modules.get(owner) if owner is not None else None
            if facts is None:
                return None
            for kind, defined in facts.kinds():
                if expr.attr in defined:
                    return kind, expr.attr
        return None

    def _sealed(self) -> dict[str, str]:
        """Index every name by the first kind holding it; freeze the kinds' sets."""
        index: dict[str, str] = {}
        for kind, attr in KINDS:
            names = frozenset(getattr(self, attr))
            for name in names:
                index.setdefault(name, kind)
            setattr(self, attr, names)
        self._index = index
        return index

    def _kinds(self) -> tuple[tuple[str, Set[str]], ...]:
        return tuple((kind, getattr(self, attr)) for kind, attr in KINDS)

    def __bool__(self) -> bool:
        """Whether the project gives this file anything torch: a model, a tensor, a device,
        itself or through an imported module (a plain class alone, or a module defining
        nothing torch, as a TensorFlow sibling, does not make a file without torch a
        PyTorch program)."""
        if any(names for kind, names in self._kinds() if kind not in NOT_GIVEN):
            return True
        return any(
            names
            for facts in self.modules.values()
            for kind, names in facts.kinds()
            if kind not in NOT_GIVEN
        )


def _dotted(expr: ast.expr) -> str | None:
    parts = dotted_parts(expr)
    return None if parts is None else ".".join(parts)


# ------------------------------------------------------------------ facts of a module

# (version, facts, the paths they rest on, the span that checked them: check/_listing.py)
_CACHE: dict[str, tuple[tuple[int, int], ModuleFacts, dict[str, list[object] | None], int]] = {}
_OPENED: set[str] = set()  # packages worked out from their __init__ now (at most 8 at once)


def module_facts(
    path: Path, _seen: frozenset[str] = frozenset(), lookups: Lookups | None = None
) -> ModuleFacts | None:
    """The facts of the project module at ``path`` (None: unreadable or does not parse).

    ``lookups``: the question this is part of (its files' versions read once there).
    A package's module is worked out from its outermost ``__init__``, as Python runs it, so
    where a cycle is cut does not depend on the path a view took (left: none in a package).
    """
    if lookups is None:
        lookups = Lookups()
    found = lookups.version(path)
    if found is None:
        return None
    key, version = found
    kept = _kept(key, version)
    if kept is not None:
        return kept  # not if a module it imports has changed since
    if key in _seen or len(_seen) > 16:
        return None  # an import cycle (or a very deep chain): no facts through it
    top = top_package(key, lookups)
    if top is not None and top not in _OPENED and len(_OPENED) < 8:
        # The package's __init__ first, from no caller's path (a view's facts never depend
        # on which files were ported before it); the modules it reaches are kept.
        _OPENED.add(top)
        try:
            first = module_facts(Path(top), frozenset(), lookups)
        finally:
            _OPENED.discard(top)
        kept = first if top == key else _kept(key, version)
        if kept is not None or top == key:
            return kept
    try:
        source = path.read_text(encoding="utf-8", errors="surrogateescape")
        tree = parsed_module(str(path), source)  # (a star import's reader may have parsed it)
    except (OSError, SyntaxError, ValueError):
        return None
    ctx = Context(source, key, tree)
    with recorded() as reads:
        facts = _facts_of(ctx, _seen | {key}, lookups)
    _CACHE[key] = (version, facts, reads, span())
    # The file's own port (later in the run) takes this parse and scope map instead of
    # making its own: one parse and one semantic model per file, whichever role comes first.
    keep_parsed(key, source, tree, ctx.built_scopes)
    return facts


def _kept(key: str, version: tuple[int, int]) -> ModuleFacts | None:
    """The facts kept for the module ``key`` at ``version``, if what they read is unchanged."""
    cached = _CACHE.get(key)
    if cached is None or cached[0] != version or not still(cached[2], cached[3]):
        return None
    _CACHE[key] = (*cached[:3], span())
    return cached[1]


def _facts_of(ctx: Context, seen: frozenset[str], lookups: Lookups) -> ModuleFacts:
    tree = ctx.tree
    imported = _imports_of(ctx, seen, lookups)
    classdefs = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    knowledge = ModelKnowledge(classdefs, ctx.qualname)
    # Classes deriving from another project module's model class are models too.
    changed = True
    while changed:
        changed = False
        for cls in classdefs:
            if cls.name in knowledge.classes:
                continue
            for base in cls.bases:
                found = imported.lookup(base)
                if (found is not None and found[0] == "class") or (
                    isinstance(base, ast.Name) and base.id in knowledge.classes
                ):
                    knowledge.classes.add(cls.name)
                    changed = True
                    break
    knowledge.classes |= imported.classes
    knowledge.factories |= imported.factories
    functions = [n for n in tree.body if isinstance(n, _FUNCTIONS)]
    for _ in range(2):  # a factory calling another factory of the module
        before = len(knowledge.factories)
        for func in functions:
            if returns_all(func, partial(builds, knowledge, func=func)):
                knowledge.factories.add(func.name)
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
    names = {c.name for c in classdefs}
    models = frozenset(c for c in knowledge.classes if c in names)
    views = [(f.name, v) for f in functions if (v := viewed_parameters(f))]
    converted = [
        (c.name, positions)
        for c in classdefs
        if c.name in models and (positions := converted_inputs(ctx, c))
    ]
    hosts = host_functions(ctx, tree)
    return ModuleFacts(
        path=ctx.path,
        classes=models,
        factories=frozenset(knowledge.factories & {f.name for f in functions}),
        tensor_functions=frozenset(tensor_functions),
        tensors=frozenset(tensors),
        devices=frozenset(devices),
        plain_classes=frozenset(names - models),
        cpu_functions=frozenset(f.name for f in functions if makes_cpu_tensor(ctx, f)),
        view_functions=frozenset(name for name, _ in views),
        views=tuple(views),
        converted=tuple(converted),
        owners=owners_of(ctx, imported, models),
        defined=bound_names(tree),
        host_functions=hosts[0],
        host_items=hosts[1],
    )


def _imports_of(ctx: Context, seen: frozenset[str], lookups: Lookups) -> ProjectImports:
    out = ProjectImports()
    if not ctx.path or ctx.path.startswith("<"):
        return out
    importer = Path(ctx.path)
    if not importer.is_file():
        return out
    # The module's bindings (a scope map) only once an import names a project module:
    # a file whose imports name none (most of a tree) needs no scope map for this.
    bound: list[dict[str, list[Binding]]] = []
    find = partial(find_on_script_path, ctx, importer, lookups)  # and its own sys.path

    def bindings() -> dict[str, list[Binding]]:
        if not bound:
            bound.append(ctx.scopes.module.bindings)
        return bound[0]

    def only_import(name: str) -> bool:  # read from the text where it can be: no scope map
        return ctx.only_imported(name) or _only_import(bindings().get(name, []))

    for stmt in ctx.tree.body:
        for node in _top_imports(stmt):
            if isinstance(node, ast.ImportFrom):
                source = find(node.module, node.level)
                source_facts = module_facts(source, seen, lookups) if source is not None else None
                hosts = source_facts.host_functions if source_facts is not None else frozenset()
                items = dict(source_facts.host_items) if source_facts is not None else {}
                for alias in node.names:
                    local = alias.asname or alias.name
                    if (alias.name in hosts or alias.name in items) and only_import(local):
                        if alias.name in hosts:
                            out.host_functions.add(local)
                        if alias.name in items:
                            out.host_items[local] = items[alias.name]
                    if alias.name == "*":  # `from model import *`: its public names, theirs
                        if source is not None and source_facts is not None:
                            given = ctx.star_names(node)  # None: the resolver cannot say
                            chain = star_chain(source, lookups)[: 1 if given is None else None]
                            read = [module_facts(p, seen, lookups) for p in chain]
                            record_star(out, [f for f in read if f], given, bindings(), KINDS)
                        elif source is not None:
                            out.star_unresolved = True
                        continue
                    recorded = source_facts is not None and (
                        _defines(source_facts, alias.name) or alias.name in source_facts.owned
                    )
                    sub = None
                    if not recorded:
                        # `from pkg import model`: a submodule
                        dotted = f"{node.module}.{alias.name}" if node.module else alias.name
                        sub = find(dotted, node.level)
                        if sub is None:
                            if source is not None and _unread(source_facts, alias.name):
                                out.unresolved.add(local)  # the project's, unreadable
                            continue  # nothing of the project's, whatever binds the name
                    if not only_import(local) and not (
                        source_facts is not None
                        and alias.name in source_facts.classes
                        and rebound_by_own_call(bindings().get(local, []), local)
                    ):
                        continue
                    if source_facts is not None and alias.name in source_facts.owned:
                        out.owners[local] = source_facts.owned[alias.name]
                    if source_facts is not None and recorded:
                        _record(out, local, alias.name, source_facts)
                        continue
                    sub_facts = module_facts(sub, seen, lookups) if sub is not None else None
                    if sub_facts is not None:
                        out.modules[local] = sub_facts
                    elif sub is not None:
                        out.unresolved.add(local)
            else:
                for alias in node.names:
                    found = find(alias.name, 0)
                    facts = module_facts(found, seen, lookups) if found is not None else None
                    if facts is None:
                        if found is not None:  # `import pkg.broken as b`: unreadable
                            out.unresolved.add(alias.asname or alias.name.partition(".")[0])
                        continue
                    if alias.asname:
                        if only_import(alias.asname):
                            out.modules[alias.asname] = facts
                    elif only_import(alias.name.partition(".")[0]):
                        out.modules[alias.name] = facts
    return out


def _top_imports(stmt: ast.stmt) -> list[ast.Import | ast.ImportFrom]:
    """Imports at module level, also inside ``try``/``if`` blocks there."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [stmt]
    found: list[ast.Import | ast.ImportFrom] = []
    if isinstance(stmt, (ast.Try, ast.If)):
        for block in (stmt.body, stmt.orelse, getattr(stmt, "finalbody", [])):
            for inner in block:
                found.extend(_top_imports(inner))
    return found


def _only_import(bindings: Sequence[Binding]) -> bool:
    """A module-level name that nothing but imports binds."""
    return bool(bindings) and all(b.kind is BindingKind.IMPORT for b in bindings)


def _unread(facts: ModuleFacts | None, name: str) -> bool:
    """Whether ``name`` of a found project module cannot be told: the module does not parse,
    or it does not bind the name itself (a star or dynamic import)."""
    return facts is None or (name not in facts.defined and name not in facts.owned)


def _defines(facts: ModuleFacts, name: str) -> bool:
    """Whether the module ``facts`` describes defines ``name`` as anything the port knows."""
    return any(name in names for _, names in facts.kinds())


def _record(out: ProjectImports, local: str, name: str, facts: ModuleFacts) -> bool:
    for _, attr in KINDS:
        if name in getattr(facts, attr):
            getattr(out, attr).add(local)
            if attr == "view_functions":
                out.viewed[local] = dict(facts.views)[name]
            if attr == "classes" and name in dict(facts.converted):
                out.converted[local] = dict(facts.converted)[name]
            return True
    return False


def project_imports(ctx: Context) -> ProjectImports:
    """What the project modules that ``ctx``'s file imports at module level give it."""
    # One question: each folder and found file is read once for this file's imports.
    lookups = Lookups()
    retain_checked()  # the files checked from now on are kept for the next views to read
    try:
        key = lookups.resolved(ctx.path)
    except (OSError, ValueError):
        return ProjectImports()
    top = top_package(key, lookups) if Path(ctx.path).is_file() else None
    if top is not None and top != key:
        module_facts(Path(top), frozenset(), lookups)  # the file's package first (Python's)
    return _imports_of(ctx, frozenset({key}), lookups)

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

A module gives its importers, of each kind, the names it defines and those it re-exports:
binds from another project module by an import alone, a star import or an alias
(``port/_reexports.py``: ``from pkg import make_model`` is ``pkg/model.py``'s factory).

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
from functools import partial
from pathlib import Path

from torchport.check._context import Context
from torchport.check._file_context import view_context
from torchport.check._listing import recorded, span, still
from torchport.check._syntax import keep_parsed, parsed_module, retain_checked
from torchport.check.port._attribute_modules import attribute_modules, reach, top_imports
from torchport.check.port._models import ModelKnowledge
from torchport.check.port._module_facts import KINDS, ModuleFacts, PortKinds
from torchport.check.port._module_files import Lookups, top_package
from torchport.check.port._port_kinds import may_hold, port_kinds
from torchport.check.port._project_imports import ProjectImports
from torchport.check.port._project_owners import (
    bound_names,
    owners_of,
    rebound_by_own_call,
)
from torchport.check.port._reexports import imported_names, reexported_classes
from torchport.check.port._reexports import only_import as imports_only
from torchport.check.port._script_path import find_on_script_path
from torchport.check.port._star_imports import record_star, star_chain, star_kinds
from torchport.check.port._unsure_names import dynamic, unsure_names
from torchport.check.semantic import Binding

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "KINDS",
    "ModuleFacts",
    "ProjectImports",
    "complete",
    "module_facts",
    "nested_methods",
    "project_imports",
]


# ------------------------------------------------------------------ facts of a module

# (version, facts, the paths they rest on, the span that checked them: check/_listing.py)
_CACHE: dict[str, tuple[tuple[int, int], ModuleFacts, dict[str, list[object] | None], int]] = {}
_OPENED: set[str] = set()  # packages worked out from their __init__ now (at most 8 at once)


def module_facts(
    path: Path,
    _seen: frozenset[str] = frozenset(),
    lookups: Lookups | None = None,
    *,
    kinds: bool = True,
) -> ModuleFacts | None:
    """The facts of the project module at ``path`` (None: unreadable or does not parse).

    ``lookups``: the question this is part of (its files' versions read once there).
    ``kinds``: the port's kinds made now (False: on their first read, ``_port_kinds.py``;
    a check's owners need none of them).
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
            first = module_facts(Path(top), frozenset(), lookups, kinds=kinds)
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
    ctx = view_context(source, key, tree)  # (the module's own check takes it: one each)
    with recorded() as reads:
        facts = _facts_of(ctx, _seen | {key}, lookups, kinds)
    _CACHE[key] = (version, facts, reads, span())
    # The file's own port (later in the run) takes this parse and Context instead of making
    # its own: one parse and one semantic model per file, whichever role comes first.
    keep_parsed(key, source, tree, ctx)
    return facts


def _kept(key: str, version: tuple[int, int]) -> ModuleFacts | None:
    """The facts kept for the module ``key`` at ``version``, if what they read is unchanged."""
    cached = _CACHE.get(key)
    if cached is None or cached[0] != version or not still(cached[2], cached[3]):
        return None
    _CACHE[key] = (*cached[:3], span())
    return cached[1]


def _facts_of(
    ctx: Context, seen: frozenset[str], lookups: Lookups, kinds: bool = True
) -> ModuleFacts:
    tree = ctx.tree
    imported = _imports_of(ctx, seen, lookups, kinds=kinds)
    classdefs = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    # (the bases of module-level classes, read at module level: see Context.qualname)
    knowledge = ModelKnowledge(classdefs, ctx.qualname, bases=partial(ctx.qualname, at_module=True))
    # Classes deriving from another project module's model class are models too.
    changed = True
    while changed:
        changed = False
        for cls in classdefs:
            if cls.name in knowledge.classes:
                continue
            for base in cls.bases:
                if imported.model_class(base) or (
                    isinstance(base, ast.Name) and base.id in knowledge.classes
                ):
                    knowledge.classes.add(cls.name)
                    changed = True
                    break
    knowledge.classes |= imported.classes
    names = {c.name for c in classdefs}
    models = frozenset(c for c in knowledge.classes if c in names)
    # What an importer of this module takes for a model class: its own, and those it binds
    # by importing them from another project module (`from .model import Net` in a package's
    # __init__, a star import) or by naming one (`Net = _Net`): each resolves to its definition.
    given = models | reexported_classes(ctx, imported, knowledge.classes)
    owners = owners_of(ctx, imported, models)
    # Every class an importer takes is an owner (a view for owners relies on it): an alias
    # whose owner cannot be resolved (`alias = model.Net` in model.py, reading itself through
    # its own import while it is made) is left out, as an unresolved name is.
    owned = {name for name, _ in owners}
    given = frozenset(n for n in given if n in owned)
    if kinds:
        port: object = port_kinds(ctx, imported, knowledge, models)
    else:  # made on first read, from what they rest on (not the tree: the text)
        classes = frozenset(knowledge.classes)
        port = partial(later_kinds, ctx.path, ctx.source, imported, classes, models)
    reexports = imported_names(tree)
    find = partial(find_on_script_path, ctx, Path(ctx.path), lookups)
    attributes = attribute_modules(ctx, imported.modules, find, _asker(ctx)[1])
    return ModuleFacts(
        path=ctx.path,
        classes=given,
        plain_classes=frozenset(names - models),
        owners=owners,
        defined=bound_names(tree),
        may_hold=may_hold(tree),
        imports=reexports[0],
        starred=reexports[1],
        unsure=unsure_names(ctx, imported, knowledge.classes),
        dynamic=dynamic(tree),
        attributes=attributes,
        port=port,  # type: ignore[arg-type]
    )


def later_kinds(
    path: str,
    source: str,
    imported: ProjectImports,
    classes: frozenset[str],
    models: frozenset[str],
) -> PortKinds:
    """:func:`port_kinds` of the module at ``path`` whose text was ``source``, on first read.

    ``imported``: its view as built (its records left for now are made here, with this
    module's bindings); ``classes``: the model classes its knowledge held, the imported too.
    """
    tree = parsed_module(path, source)  # the text parsed before: it parses
    ctx = Context(source, path, tree)
    complete(imported, ctx)
    classdefs = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    knowledge = ModelKnowledge(classdefs, ctx.qualname)
    knowledge.classes = set(classes)  # as _facts_of left them: its own and the project's
    return port_kinds(ctx, imported, knowledge, models)


def _imports_of(
    ctx: Context, seen: frozenset[str], lookups: Lookups, *, kinds: bool = True
) -> ProjectImports:
    """The view of the module ``ctx`` holds, complete where ``kinds`` (else :func:`complete`
    makes its port kinds: the owners, modules, classes and what is unresolved are made here).
    """
    out = ProjectImports.building()
    if not ctx.path or ctx.path.startswith("<"):
        complete(out, ctx)
        return out
    importer = Path(ctx.path)
    if not importer.is_file():
        complete(out, ctx)
        return out
    find = partial(find_on_script_path, ctx, importer, lookups)  # and its own sys.path
    only_import, bindings = _asker(ctx)
    facts_at = partial(module_facts, _seen=seen, lookups=lookups, kinds=kinds)

    for stmt in ctx.tree.body:
        for node in top_imports(stmt):
            if isinstance(node, ast.ImportFrom):
                source = find(node.module, node.level)
                source_facts = facts_at(source) if source is not None else None
                if source_facts is not None:
                    out.module_methods |= _own_methods(source_facts)
                for alias in node.names:
                    local = alias.asname or alias.name
                    if source_facts is not None and source_facts.may_give(alias.name):
                        out.later(("hosts", local, alias.name, source_facts))
                    if alias.name == "*":  # `from model import *`: its public names, theirs
                        if source is not None and source_facts is not None:
                            given = ctx.star_names(node)  # None: the resolver cannot say
                            chain = star_chain(source, lookups)[: 1 if given is None else None]
                            read = [facts_at(p) for p in chain]
                            record_star(out, [f for f in read if f], given, bindings(), KINDS)
                        elif source is not None:
                            out.star_unresolved = True
                        continue
                    dotted = f"{node.module}.{alias.name}" if node.module else alias.name
                    if source_facts is not None and _unsure(source_facts, alias.name):
                        out.unsure.add(local)
                    sub = None
                    recorded = source_facts is not None and (
                        alias.name in source_facts.owned or alias.name in source_facts.classes
                    )
                    if source_facts is not None and not recorded:
                        if not source_facts.may_give(alias.name):
                            pass  # in no kind (a class is owned): `_defines` is false
                        elif (
                            source_facts.kinds_made
                            or kinds
                            or source_facts.starred_only(alias.name)
                        ):
                            # (a name only its star import may give: whether it is unresolved
                            # follows from its kind, which the owners need now)
                            recorded = _defines(source_facts, alias.name)
                        else:
                            # A function or value of the module's: a port kind may hold it.
                            # Unless a submodule has its name (then ask: its kinds are made),
                            # only the port's kinds change with the answer: ask it then.
                            # (bound here by more than the import: whether it is unsure
                            # follows from its kind, which the owners need now)
                            sub = find(dotted, node.level)
                            if sub is None and only_import(local):
                                out.later(("record", local, alias.name, source_facts, True))
                                continue
                            recorded = _defines(source_facts, alias.name)
                    if not recorded:
                        # `from pkg import model`: a submodule
                        sub = sub or find(dotted, node.level)
                        if sub is None:
                            if source is not None and _unread(source_facts, alias.name):
                                out.unresolved.add(local)  # the project's, unreadable
                            continue  # nothing of the project's, whatever binds the name
                    if not only_import(local) and not (
                        source_facts is not None
                        and alias.name in source_facts.classes
                        and rebound_by_own_call(bindings().get(local, []), local)
                    ):
                        if source_facts is not None and (
                            alias.name in source_facts.classes
                            or (recorded and alias.name in source_facts.factories)
                        ):
                            out.unsure.add(local)  # bound here by more than the import
                        continue
                    if source_facts is not None and alias.name in source_facts.owned:
                        out.owners[local] = source_facts.owned[alias.name]
                    if source_facts is not None and recorded:
                        if alias.name in source_facts.classes:  # the first kind: made now
                            out.classes.add(local)  # type: ignore[attr-defined]
                        # (its kind; a model class's inputs its forward converts)
                        out.later(("record", local, alias.name, source_facts, False))
                        continue
                    sub_facts = facts_at(sub) if sub is not None else None
                    if sub_facts is not None:
                        reach(out, local, sub_facts, facts_at)
                    elif sub is not None:
                        out.unresolved.add(local)
            else:
                for alias in node.names:
                    found = find(alias.name, 0)
                    facts = facts_at(found) if found is not None else None
                    if facts is not None:
                        out.module_methods |= _own_methods(facts)
                    if facts is None:
                        if found is not None:  # `import pkg.broken as b`: unreadable
                            out.unresolved.add(alias.asname or alias.name.partition(".")[0])
                        continue
                    if alias.asname:
                        if only_import(alias.asname):
                            reach(out, alias.asname, facts, facts_at)
                    elif only_import(alias.name.partition(".")[0]):
                        reach(out, alias.name, facts, facts_at)
    if kinds:
        complete(out, ctx)
    return out


def _own_methods(facts: ModuleFacts) -> frozenset[str]:
    """The device methods of their own of the module's classes and instances that are not
    torch's (``_project_owners.py``): a value one of its functions returns may have them."""
    return frozenset(
        m for _, (_, methods, lineage) in facts.owners if lineage != "torch" for m in methods
    )


def _asker(
    ctx: Context,
) -> tuple[Callable[[str], bool], Callable[[], dict[str, list[Binding]]]]:
    """``only_import(name)``, and the module's bindings, for a view of the module ``ctx``."""
    # The module's bindings (a scope map) only once an import names a project module:
    # a file whose imports name none (most of a tree) needs no scope map for this.
    bound: list[dict[str, list[Binding]]] = []

    def bindings() -> dict[str, list[Binding]]:
        if not bound:
            bound.append(ctx.scopes.module.bindings)
        return bound[0]

    def only_import(name: str) -> bool:  # read from the text or the statements: no scope map
        return ctx.only_imported(name) or imports_only(bindings().get(name, []))

    return only_import, bindings


def complete(view: ProjectImports, ctx: Context) -> None:
    """Make the port's kinds of ``view``, the view of the module (or file) ``ctx`` holds,
    from the records its building left (each as :func:`_imports_of` would have made it
    then, in the same order); a complete view is left as it is."""
    later = view.take_later()
    if later is None:
        return
    only_import = _asker(ctx)[0]
    for record in later:
        what = record[0]
        if what == "star":
            star_kinds(view, *record[1:])  # type: ignore[arg-type]
            continue
        local, name, facts = record[1:4]
        assert isinstance(local, str) and isinstance(name, str)
        assert isinstance(facts, ModuleFacts)
        if what == "hosts":
            if not only_import(local):
                continue
            if name in facts.may_hold or name in facts.given:  # (else a library's, given)
                view.functions.add(local)  # a module-level function or value of the project's
            items, tensors = dict(facts.host_items), dict(facts.tensor_items)
            if name in facts.host_functions:
                view.host_functions.add(local)
            if name in items:
                view.host_items[local] = items[name]
            if name in tensors:
                view.tensor_items[local] = tensors[name]
        elif not record[4] or (_defines(facts, name) and only_import(local)):
            _record(view, local, name, facts)


def _unread(facts: ModuleFacts | None, name: str) -> bool:
    """Whether ``name`` of a found project module cannot be told: the module does not parse,
    or it does not bind the name itself (a star or dynamic import)."""
    return facts is None or (name not in facts.defined and name not in facts.owned)


def _unsure(facts: ModuleFacts, name: str) -> bool:
    """Whether a model class could be behind ``name`` of the module ``facts`` describes and
    the view cannot tell (``_unsure_names.py``)."""
    if name in facts.unsure:
        return True
    return facts.dynamic and name[:1].isupper() and name not in facts.defined


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


def nested_methods(ctx: Context) -> frozenset[str]:
    """The device methods of their own (:func:`_own_methods`) of each project module the
    file imports inside a function or class (the view reads module-level imports only): a
    value such a module's function returns may have them (``def main(): from data import
    make_batch``). Each such import's module, and each name of it that is a submodule."""
    top = {id(n) for stmt in ctx.tree.body for n in top_imports(stmt)}
    scopes = ctx.scopes
    nested = [
        n
        for n in (*scopes.nodes_of(ast.Import), *scopes.nodes_of(ast.ImportFrom))
        if id(n) not in top
    ]
    if not nested or not ctx.path or ctx.path.startswith("<") or not Path(ctx.path).is_file():
        return frozenset()
    lookups = Lookups()
    find = partial(find_on_script_path, ctx, Path(ctx.path), lookups)
    found: set[Path | None] = set()
    for node in nested:
        if isinstance(node, ast.ImportFrom):
            found.add(find(node.module, node.level))
            prefix = f"{node.module}." if node.module else ""
            found.update(find(prefix + a.name, node.level) for a in node.names if a.name != "*")
        else:
            assert isinstance(node, ast.Import)
            found.update(find(a.name, 0) for a in node.names)
    methods: set[str] = set()
    for path in found:
        facts = module_facts(path, frozenset(), lookups, kinds=False) if path else None
        if facts is not None:
            methods |= _own_methods(facts)
    return frozenset(methods)


def project_imports(ctx: Context, *, kinds: bool = True) -> ProjectImports:
    """What the project modules that ``ctx``'s file imports at module level give it.

    ``kinds``: False for the owners only (a check's question): the view's port kinds and
    its modules' are made when :func:`complete` is asked (``project_of``), not now.
    """
    # One question: each folder and found file is read once for this file's imports.
    lookups = Lookups()
    retain_checked()  # the files checked from now on are kept for the next views to read
    try:
        key = lookups.resolved(ctx.path)
    except (OSError, ValueError):
        return ProjectImports()
    top = top_package(key, lookups) if Path(ctx.path).is_file() else None
    if top is not None and top != key:
        # the file's package first (Python's)
        module_facts(Path(top), frozenset(), lookups, kinds=kinds)
    return _imports_of(ctx, frozenset({key}), lookups, kinds=kinds)

"""The files behind a module's star imports: what each ``from m import *`` of a file binds.

``semantic/_star_names.py`` reads one module's syntax; this part finds the files, the
way the project view finds a module (``_module_files.find_module``: beside the
importing file, the root above its packages, relative imports from its package), and
follows the chain: a star import inside the star-imported module is answered the same
way, transitively. A cycle is cut (the star import that closes it is unknown), and so
is a chain deeper than :data:`_DEPTH`. Each module's answer is kept per process and
file version. :func:`star_bindings` is asked by ``Context`` once per file that has a
module-level star import (no other file pays for it).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from torchport.check._syntax import retain_checked
from torchport.check.port._module_files import Lookups, find_module, module_facts, parse_file
from torchport.check.semantic import Binding
from torchport.check.semantic._star_names import Exports, is_star, star_exports, wildcard_of

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._project import ModuleFacts, ProjectImports

__all__ = ["record_star", "star_bindings", "star_chain", "star_kinds", "torch_bindings"]

_DEPTH = 16
_NAME = re.compile(r"\w+")
# (real path, the dotted name it was imported by, every: see star_exports) -> (version, its
# star import's answer)
_CACHE: dict[tuple[str, str | None, bool], tuple[tuple[int, int], Exports | None]] = {}
# id(an answer of _CACHE) -> (that answer, its names bound to torch's objects): _module_names
_TORCH_NAMES: dict[int, tuple[Exports, dict[str, str]]] = {}


def star_bindings(path: str, stars: list[ast.ImportFrom]) -> dict[int, Exports | None]:
    """``id(statement)`` -> what each star import of the file at ``path`` binds (None: unknown).

    A file with no path on disk (a string, stdin) knows only torch's star imports.
    """
    lookups = Lookups()
    importer, seen = _importer(path, lookups)
    return {id(s): _answer(s, importer, lookups, seen) for s in stars}


def torch_bindings(
    path: str, froms: list[ast.ImportFrom], plain: list[ast.Import], source: str = ""
) -> tuple[dict[int, dict[str, str]], dict[str, dict[str, str]]]:
    """What the file at ``path`` reaches of torch's objects through the project's own modules.

    First, ``id(statement)`` -> the names a ``from m import a [as b]`` of ``froms`` binds
    to torch's objects through the project's module ``m`` (``compat.py``: ``from torch
    import load as L``; ``from compat import L`` binds ``L`` to ``torch.load``), each with
    its dotted target, through any number of such modules (a cycle is cut). Then, for each
    project module an ``import m [as c]`` of ``plain`` names, its names bound to torch's
    objects (``{"pkg.compat": {"L": "torch.load"}}``: ``c.L`` is ``torch.load``), and so for
    a submodule a ``from pkg import compat [as c]`` binds, where ``source`` (the file's text)
    reads one of those names as ``c.<name>``. Only statements and modules that bind one are
    listed; a file with no path on disk has none.
    """
    lookups = Lookups()
    importer, seen = _importer(path, lookups)
    if importer is None:
        return {}, {}
    retain_checked()  # the modules read here are the tree's: checked ones are not parsed twice
    found = {id(s): _named(s, importer, lookups, seen) for s in froms}
    through: dict[str, dict[str, str]] = {}
    imported: set[str] | None = None  # (worked out where a name could be shadowed: few files)
    if any(found.values()):
        imported = _submodules_imported(froms, plain)
        _drop_shadowed(found, froms, imported, importer, lookups)
    for named in froms:  # `from pkg import compat`, `from . import compat`: a submodule
        found_here = _submodules(named, importer, lookups, seen, source)
        for local, (key, reached) in found_here.items():
            through[key] = reached
            if named.level:  # (no dotted target of its own: the key stands for one)
                found[id(named)] = {**(found[id(named)] or {}), local: key}
    for stmt in plain:
        for alias in stmt.names:
            if alias.name not in through:
                names = _module_names(alias.name, 0, importer, lookups, seen)
                if names:
                    through[alias.name] = names
    if through:
        if imported is None:
            imported = _submodules_imported(froms, plain)
        for module, names in through.items():
            for name in [n for n in names if _shadows(module, n, imported, importer, lookups)]:
                del names[name]
    through = {module: names for module, names in through.items() if names}
    return {key: names for key, names in found.items() if names}, through


def _attributes_read(source: str, local: str) -> set[str]:
    """The names ``source`` may read as ``local.<name>`` (its text: ``compat.L``; one scan of
    ``str.find``, no pattern tried at every character: one pattern for every name of the
    text, tried once per file, costs check ~11% on Lightning)."""
    found: set[str] = set()
    needle = local + "."
    at = source.find(needle)
    while at != -1:
        if not at or not (source[at - 1].isalnum() or source[at - 1] in "_."):
            name = _NAME.match(source, at + len(needle))
            if name is not None:
                found.add(name.group())
        at = source.find(needle, at + 1)
    return found


def _submodules_imported(froms: list[ast.ImportFrom], plain: list[ast.Import]) -> set[str]:
    """The dotted modules under a package the file imports itself: ``pkg.nn`` of ``import
    pkg.nn`` and of ``from pkg.nn import Linear``."""
    dotted = [a.name for s in plain for a in s.names]
    dotted += [s.module for s in froms if s.module and not s.level]
    return {".".join(d.split(".")[:i]) for d in dotted for i in range(2, d.count(".") + 2)}


def _shadows(module: str, name: str, imported: set[str], importer: Path, lookups: Lookups) -> bool:
    """Whether package ``module``'s ``name`` (bound to torch's in its ``__init__``) is also its
    submodule the file imports (``imported``: ``pkg/__init__.py``: ``from torch import nn``
    beside ``pkg/nn.py``, and ``import pkg.nn`` here): importing the submodule rebinds the
    package's name to it, so ``pkg.nn`` there is the project's module, not torch's."""
    return (
        f"{module}.{name}" in imported
        and _submodule(module, name, 0, importer, lookups) is not None
    )


def _drop_shadowed(
    found: dict[int, dict[str, str] | None],
    froms: list[ast.ImportFrom],
    imported: set[str],
    importer: Path,
    lookups: Lookups,
) -> None:
    """``from pkg import nn`` where the file imports ``pkg.nn`` too: the submodule, see
    :func:`_shadows` (without that import, the package's own binding, as Python reads it)."""
    for stmt in froms:
        names = found.get(id(stmt))
        if names is None or stmt.level or not stmt.module:
            continue
        for alias in stmt.names:
            local = alias.asname or alias.name
            if local in names and _shadows(stmt.module, alias.name, imported, importer, lookups):
                del names[local]


def _importer(path: str, lookups: Lookups) -> tuple[Path | None, frozenset[str]]:
    if path and not path.startswith("<"):
        candidate = Path(path)
        try:
            if candidate.is_file():
                return candidate, frozenset({lookups.resolved(path)})
        except (OSError, ValueError):
            pass
    return None, frozenset()


def _named(
    stmt: ast.ImportFrom, importer: Path, lookups: Lookups, seen: frozenset[str]
) -> dict[str, str] | None:
    if is_star(stmt) or wildcard_of(stmt) is not None or len(seen) > _DEPTH:
        return None
    names = _module_names(stmt.module, stmt.level, importer, lookups, seen)
    if not names:
        return None
    return {a.asname or a.name: names[a.name] for a in stmt.names if a.name in names}


def _module_names(
    module: str | None, level: int, importer: Path, lookups: Lookups, seen: frozenset[str]
) -> dict[str, str] | None:
    """The names the project's module ``module`` binds to torch's objects, with their targets
    (None: not the project's module, or not known)."""
    if not level and (module == "torch" or (module or "").startswith("torch.")):
        return None
    found = find_module(importer, module, level, lookups)
    if found is None:
        return None  # not the project's
    exports = _exports(found, None if level else module, lookups, seen, every=True)
    if exports is None:
        return None
    # the same answer's torch names are picked once (an answer is kept per module, asked
    # per importing file): kept with the very object they were picked from
    kept = _TORCH_NAMES.get(id(exports))
    if kept is not None and kept[0] is exports:
        return kept[1]
    names = {
        name: target
        for name, target in exports[0].items()
        if target is not None and (target == "torch" or target.startswith("torch."))
    }
    if len(_TORCH_NAMES) > 2 * len(_CACHE):
        _TORCH_NAMES.clear()  # answers _CACHE replaced (a file changed since) are not kept alive
    _TORCH_NAMES[id(exports)] = (exports, names)
    return names


def _submodule(
    module: str | None, name: str, level: int, importer: Path, lookups: Lookups
) -> Path | None:
    """The file of the project's submodule ``name`` of package ``module`` (None: none)."""
    return find_module(importer, f"{module}.{name}" if module else name, level, lookups)


def _submodules(
    stmt: ast.ImportFrom,
    importer: Path,
    lookups: Lookups,
    seen: frozenset[str],
    source: str,
) -> dict[str, tuple[str, dict[str, str]]]:
    """``from pkg import compat [as c]`` (``from . import compat``) of the project's submodule
    ``compat`` binding torch's objects: local name -> (the dotted name its attributes are
    read under, ``pkg.compat``, or for a relative import a key standing for one,
    ``.compat``; the submodule's names bound to torch's that the file's text reads as
    ``c.<name>`` (``source``: :func:`_attributes_read`), with their targets). Only where the
    package's ``__init__`` binds no such name itself: its own would be read first. (Nearly
    every module of a PyTorch project imports torch: a file that only imports one, ``from
    fairseq import options``, reads none of torch's names there, and is no torch file for
    it.)"""
    if is_star(stmt) or wildcard_of(stmt) is not None or len(seen) > _DEPTH:
        return {}
    if not stmt.level and (stmt.module or "").partition(".")[0] == "torch":
        return {}
    # The package and its answer were looked for and kept by _named for this very statement
    # (the same arguments): asked again, both are the kept ones, so asking them before the
    # text is scanned reads and fills nothing new; most statements name a module that is no
    # package (or none of the project's), and most names a package binds itself.
    package = find_module(importer, stmt.module, stmt.level, lookups)
    if package is None or package.name != "__init__.py":
        return {}
    exports = _exports(package, None if stmt.level else stmt.module, lookups, seen, every=True)
    if exports is None:
        return {}
    dotted = "." * stmt.level + (stmt.module or "")
    found: dict[str, tuple[str, dict[str, str]]] = {}
    for alias in stmt.names:
        key = f"{dotted}.{alias.name}" if stmt.module else f"{dotted}{alias.name}"
        bound = exports[0].get(alias.name, key)
        own = alias.name in exports[0] and bound != key  # the package binds the name itself
        if own and bound is not None:
            continue
        read = _attributes_read(source, alias.asname or alias.name)
        if not read:
            continue  # (before the submodule is looked for)
        if own and not _own_submodule(package, alias.name):
            continue  # (bound to what is not known: its own submodule only by `from . import`)
        if _submodule(stmt.module, alias.name, stmt.level, importer, lookups) is None:
            continue
        names = _module_names(
            f"{stmt.module}.{alias.name}" if stmt.module else alias.name,
            stmt.level,
            importer,
            lookups,
            seen,
        )
        reached = {n: t for n, t in (names or {}).items() if n in read}
        if reached:
            found[alias.asname or alias.name] = (key, reached)
    return found


def _own_submodule(package: Path, name: str) -> bool:
    """Whether the package's ``__init__`` (``package``) binds ``name`` only by ``from . import
    name`` (or ``from . import name as name``): that binding is its submodule, what a
    ``from pkg import name`` elsewhere gets (the usual ``__init__`` of a package whose
    ``compat`` module is read as ``compat.L``). Any other binding of the name there (an
    assignment, a ``def``, another import) leaves it unknown, as before."""
    tree = parse_file(package)
    if tree is None:
        return False
    own = False
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 1
            and node.module is None
            and any((a.asname or a.name) == name == a.name for a in node.names)
        ):
            own = True
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any((a.asname or a.name.partition(".")[0]) == name for a in node.names):
                return False
        elif isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return False
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return False
        elif isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
            return False
    return own


def _answer(
    stmt: ast.ImportFrom, importer: Path | None, lookups: Lookups, seen: frozenset[str]
) -> Exports | None:
    wildcard = wildcard_of(stmt)
    if wildcard is not None:
        return {}, (wildcard,)
    if importer is None or len(seen) > _DEPTH:
        return None
    found = find_module(importer, stmt.module, stmt.level, lookups)
    if found is None:
        return None  # not the project's: its names are not known
    return _exports(found, None if stmt.level else stmt.module, lookups, seen)


def _exports(
    path: Path, module: str | None, lookups: Lookups, seen: frozenset[str], *, every: bool = False
) -> Exports | None:
    version = lookups.version(path)
    if version is None:
        return None
    key, stamp = version
    if key in seen:
        return None  # a cycle: cut here
    cached = _CACHE.get((key, module, every))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    tree = parse_file(path)
    if tree is None:
        return None
    inside = seen | {key}
    answer = star_exports(
        tree,
        module,
        lambda s: _answer(s, path, lookups, inside),
        lambda s: _named(s, path, lookups, inside),
        every=every,
    )
    # (a module in a cycle is cut below itself wherever it is asked from: its answer is
    # the same unknown from any start)
    _CACHE[(key, module, every)] = (stamp, answer)
    return answer


# real path -> (version, the (module, level) of its module-level star imports)
_STARS: dict[str, tuple[tuple[int, int], tuple[tuple[str | None, int], ...]]] = {}


def star_chain(path: Path, lookups: Lookups) -> list[Path]:
    """The module at ``path``, then the project modules its star imports reach, transitively
    (nearest first; each once: a cycle is cut)."""
    chain, todo = [path], [path]
    seen = {lookups.resolved(str(path))}
    while todo:
        current = todo.pop(0)
        for module, level in _stars_of(current, lookups):
            found = find_module(current, module, level, lookups)
            key = None if found is None else lookups.resolved(str(found))
            if found is not None and key not in seen:
                seen.add(key)  # type: ignore[arg-type]
                chain.append(found)
                todo.append(found)
    return chain


def _stars_of(path: Path, lookups: Lookups) -> tuple[tuple[str | None, int], ...]:
    return module_facts(path, lookups, _STARS, _stars_in, ())


def _stars_in(tree: ast.Module) -> tuple[tuple[str | None, int], ...]:
    """The star imports of a module's top level (under ``if`` and ``try`` too), in order."""
    found: list[tuple[str | None, int]] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        stmt = todo.pop(0)
        if is_star(stmt) and wildcard_of(stmt) is None:  # type: ignore[arg-type]
            found.append((stmt.module, stmt.level))  # type: ignore[attr-defined]
        elif isinstance(stmt, (ast.If, ast.Try)):
            todo.extend([*stmt.body, *stmt.orelse, *getattr(stmt, "finalbody", [])])
    return tuple(found)


def record_star(
    out: ProjectImports,
    chain: list[ModuleFacts],
    given: frozenset[str] | None,
    bindings: dict[str, list[Binding]],
    kinds: tuple[tuple[str, str], ...],
) -> None:
    """What one star import brings into the project view ``out``: of the modules of its
    ``chain`` (:func:`star_chain`), each public name the star import binds (``given``, the
    resolver's answer; None: every public name) that no other statement of the file binds,
    from the nearest module that binds it itself.

    The classes and owners are recorded now; the port's other kinds by :func:`star_kinds`,
    now or when the view being built is completed (``_project.complete``). Which names a
    module gives does not depend on those kinds: each is a name the module binds itself
    (``defined``), taken by it whichever kind holds it.
    """
    own = {n for n, found in bindings.items() if not all(is_star(b.node) for b in found)}
    taken: list[frozenset[str]] = []  # the names bound before each module of the chain
    for facts in chain:
        taken.append(frozenset(own))
        # (its classes are among its owners or its classes (an alias `Net = _Net`); its other
        # kinds' names among `defined`)
        free = {
            n
            for n in (*facts.owned, *facts.classes)
            if n[0] != "_" and n not in own and (given is None or n in given)
        }
        out.classes.update(free.intersection(facts.classes))  # type: ignore[attr-defined]
        out.unsure.update(n for n in facts.unsure if n not in own and (given is None or n in given))
        out.owners.update((n, o) for n, o in facts.owners if n in free)
        own |= facts.defined | free
    if not out.later(("star", tuple(chain), given, tuple(taken), kinds)):
        star_kinds(out, tuple(chain), given, tuple(taken), kinds)


def star_kinds(
    out: ProjectImports,
    chain: tuple[ModuleFacts, ...],
    given: frozenset[str] | None,
    taken: tuple[frozenset[str], ...],
    kinds: tuple[tuple[str, str], ...],
) -> None:
    """The port's kinds (all but the classes) and views one star import brings into ``out``
    (see :func:`record_star`); ``taken``: the names bound before each module of ``chain``."""
    for facts, own in zip(chain, taken, strict=True):
        names = {n for _, attr in kinds for n in getattr(facts, attr)} | dict(facts.owners).keys()
        free = {n for n in names if n[0] != "_" and n not in own and (given is None or n in given)}
        for _, attr in kinds:
            if attr != "classes":
                getattr(out, attr).update(free.intersection(getattr(facts, attr)))
        out.viewed.update((n, v) for n, v in facts.views if n in free)

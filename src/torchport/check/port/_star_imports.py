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
from pathlib import Path

from torchport.check.port._module_files import Lookups, find_module
from torchport.check.semantic._star_names import Exports, star_exports, wildcard_of

__all__ = ["star_bindings"]

_DEPTH = 16
# (real path, the dotted name it was imported by) -> (version, its star import's answer)
_CACHE: dict[tuple[str, str | None], tuple[tuple[int, int], Exports | None]] = {}


def star_bindings(path: str, stars: list[ast.ImportFrom]) -> dict[int, Exports | None]:
    """``id(statement)`` -> what each star import of the file at ``path`` binds (None: unknown).

    A file with no path on disk (a string, stdin) knows only torch's star imports.
    """
    lookups = Lookups()
    importer: Path | None = None
    seen: frozenset[str] = frozenset()
    if path and not path.startswith("<"):
        candidate = Path(path)
        try:
            if candidate.is_file():
                importer = candidate
                seen = frozenset({lookups.resolved(path)})
        except (OSError, ValueError):
            importer = None
    return {id(s): _answer(s, importer, lookups, seen) for s in stars}


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
    path: Path, module: str | None, lookups: Lookups, seen: frozenset[str]
) -> Exports | None:
    version = lookups.version(path)
    if version is None:
        return None
    key, stamp = version
    if key in seen:
        return None  # a cycle: cut here
    cached = _CACHE.get((key, module))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="surrogateescape"))
    except (OSError, SyntaxError, ValueError):
        return None
    inside = seen | {key}
    answer = star_exports(tree, module, lambda s: _answer(s, path, lookups, inside))
    # (a module in a cycle is cut below itself wherever it is asked from: its answer is
    # the same unknown from any start)
    _CACHE[(key, module)] = (stamp, answer)
    return answer

"""``torch`` bound only by a star import of a project module that imports it.

``from networks import *`` where ``networks.py`` does ``import torch``: the star import
binds ``torch`` in the importing file too (a module's public names include the modules
it imports, unless its ``__all__`` leaves them out), so ``torch.load(path)`` there is
torch's (round 5d, jinyeying/night-enhancement). :func:`star_binds_torch` answers for one
file, once: whether a module-level star import names a project module (found as the
project view finds one: ``_module_files.py``, ``_script_path.py``) whose top level binds
``torch`` by ``import torch`` / ``import torch.x`` / ``from compat import torch``, or by a
star import of such a module in turn (three steps at most), with no ``__all__`` leaving
``torch`` out. From syntax only, each module read once per process and file version.
"""

from __future__ import annotations

import ast
from pathlib import Path

from torchport.check._context import Context
from torchport.check.port._module_files import Lookups, find_module
from torchport.check.port._script_path import find_on_script_path

__all__ = ["star_binds_torch"]

_MEMO = "star_torch"
_DEPTH = 3
# realpath -> (version, (binds torch itself, its star imports as (module, level)))
_CACHE: dict[str, tuple[tuple[int, int], tuple[bool, tuple[tuple[str | None, int], ...]]]] = {}


def _stars(body: list[ast.stmt]) -> list[ast.ImportFrom]:
    return [
        s for s in body if isinstance(s, ast.ImportFrom) and any(a.name == "*" for a in s.names)
    ]


def star_binds_torch(ctx: Context) -> bool:
    """Whether a module-level star import of the file binds ``torch`` (module docstring)."""
    found = ctx.memo.get(_MEMO)
    if found is None:
        found = False
        if ctx.path and not ctx.path.startswith("<") and Path(ctx.path).is_file():
            lookups, importer = Lookups(), Path(ctx.path)
            for stmt in _stars(ctx.tree.body):
                where = find_on_script_path(ctx, importer, lookups, stmt.module, stmt.level)
                if where is not None and _binds(where, lookups, _DEPTH):
                    found = True
                    break
        ctx.memo[_MEMO] = found
    return found  # type: ignore[return-value]


def _binds(path: Path, lookups: Lookups, depth: int) -> bool:
    facts = _facts(path, lookups)
    if facts is None:
        return False
    itself, stars = facts
    if itself:
        return True
    if depth <= 1:
        return False
    for module, level in stars:
        inner = find_module(path, module, level, lookups)
        if inner is not None and _binds(inner, lookups, depth - 1):
            return True
    return False


def _facts(path: Path, lookups: Lookups) -> tuple[bool, tuple[tuple[str | None, int], ...]] | None:
    version = lookups.version(path)
    if version is None:
        return None
    key, stamp = version
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="surrogateescape"))
    except (OSError, SyntaxError, ValueError):
        return None
    itself = False
    public: set[str] | None = None  # `__all__`'s names, when a literal gives them
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            itself |= any(a.asname is None and a.name.split(".")[0] == "torch" for a in stmt.names)
            itself |= any(a.asname == "torch" and a.name == "torch" for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.module[:5] != "torch":
            itself |= any(a.name == "torch" and a.asname in (None, "torch") for a in stmt.names)
        elif isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets
        ):
            value = stmt.value
            names = value.elts if isinstance(value, ast.List | ast.Tuple) else None
            public = (
                {e.value for e in names if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if names is not None
                else set()  # computed: not told, so `torch` is taken as left out
            )
    stars = tuple((s.module, s.level) for s in _stars(tree.body))
    if public is not None:
        itself, stars = "torch" in public and itself, ()  # `__all__` decides what `*` gives
    facts = (itself, stars)
    _CACHE[key] = (stamp, facts)
    return facts

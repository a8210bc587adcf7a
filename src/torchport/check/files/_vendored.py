"""Vendored code nothing in the project imports: a default run holds its findings, counted.

A repository often keeps another project's source whole (emotion-echo keeps Coqui TTS under
``XTTS/TTS/`` and its server imports only the XTTS parts; index-tts keeps gpt-fast, MaskGCT,
deep_sort ...): findings in the parts nothing runs were judged not real (samples AH, AJ:
class (e), benchmarks/RESULTS.md, branch v34an). A file is **vendored and not reached** when

* it lies in a **vendored subtree**: a folder below the repository's root (the nearest folder
  holding ``.git``) named as a copy of other code (``files/_discovery.VENDOR_FOLDERS``), or
  holding a packaging file and a licence of its own (``files/_discovery.PACKAGING``: a
  project as released, a separate import root) from which a module outside it imports
  something (the project uses it as a library; a packaged folder nothing outside imports, or
  only tests, docs or a ``setup.py`` do, may be a project of the repository's own: it holds
  nothing); the
  outermost such folder is the subtree, and
* no module outside every vendored subtree reaches it through the project's imports,
  transitively: each ``import`` and ``from ... import`` anywhere in a module (a function's,
  a ``try``'s), as the project view resolves it (``port/_module_files.find_module``), else
  against each subtree as an import root (its folder, its ``src/``, a vendor folder's
  children: a copy installed with ``pip install -e``), each package's ``__init__`` on the
  way; a Python string naming a module (``importlib``) or a ``.py`` file, and a shell
  script, Makefile, Dockerfile or YAML/TOML file outside the subtrees naming one, count too.

Any doubt holds nothing: no repository, more files than ``rules/_project_calls`` reads, or a
module outside the subtrees that does not parse (its imports are not known); a module of a
subtree that does not parse and is reached reaches its whole subtree.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from torchport.check.files._discovery import vendored_sign, vendored_signs_above

__all__ = ["HELD_MARK", "unreached_vendored", "vendored_held"]

HELD_MARK = "vendored "  # a held count's key is HELD_MARK + code (files/_text.held_note)
_TEXTS = (".sh", ".bash", ".yaml", ".yml", ".toml", ".cfg", ".md", ".rst", ".txt")
_PROSE = (".md", ".rst", ".txt")
_NAMED_TEXTS = ("Makefile", "Dockerfile")
_WORDS = re.compile(r"[\w./-]+\.(?:py|sh|bash|ya?ml|toml|cfg)\b|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_FILE_WORD = re.compile(r".*\.(?:py|sh|bash|ya?ml|toml|cfg)\Z")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z")


def vendored_held(paths: Iterable[str]) -> frozenset[str]:
    """Of ``paths`` (files a run checks), those vendored and not reached (module docstring)."""
    memo: dict[str, str] = {}
    by_root: dict[str, list[str]] = {}
    for path in paths:
        root = vendored_signs_above(path, memo)
        if root is not None:
            by_root.setdefault(root, []).append(path)
    out: set[str] = set()
    for root, mine in by_root.items():  # (real paths: as the project view resolves imports)
        held = unreached_vendored(os.path.realpath(root))
        out.update(p for p in mine if os.path.realpath(p) in held)
    return frozenset(out)


def unreached_vendored(root: str) -> frozenset[str]:
    """The Python files of the repository at ``root`` vendored and not reached."""
    from torchport.check.rules._project_calls import repository_texts

    texts = repository_texts(root)
    if texts is None:
        return frozenset()
    modules = [f for f, _ in texts if f.endswith(".py")]
    signs: dict[str, str] = {}
    for file in modules:
        folder = os.path.dirname(file)
        while folder != root and folder.startswith(root + os.sep) and folder not in signs:
            signs[folder] = vendored_sign(folder)
            folder = os.path.dirname(folder)
    found = {f: s for f, s in signs.items() if s}
    if not found:
        return frozenset()
    bases = [b for f, s in found.items() for b in _bases(f, s)]
    edges = {f: _edges(f, data, root, bases) for f, data in texts if _wanted(f)}
    active = dict(found)
    while True:
        subtree = {f: _outermost(f, active) for f in modules}
        hosts = [f for f in modules if subtree[f] is None]
        hosts += [f for f in edges if not f.endswith(".py") and _outermost(f, active) is None]
        if any(h in edges and edges[h] is None for h in hosts):
            return frozenset()  # a module outside that does not parse: its imports unknown
        reached = _reach(hosts, edges, subtree)
        # a packaged folder nothing outside it imports from: not a copy others use (a test,
        # the docs' conf.py, a setup.py importing it do not count: a project's own package)
        used = _reach([h for h in hosts if _uses(h)], edges, subtree)
        dropped = [
            f
            for f, s in active.items()
            if s == "packaged" and not any(subtree.get(r) == f for r in used)
        ]
        if not dropped:
            return frozenset(f for f in modules if subtree[f] is not None and f not in reached)
        for f in dropped:
            del active[f]


def _uses(path: str) -> bool:
    """Whether the module at ``path``, importing a packaged folder, makes it a library in use."""
    *folders, name = path.split(os.sep)
    if name in ("setup.py", "conftest.py") or name.startswith("test_") or name.endswith("_test.py"):
        return False
    return not any(f in ("tests", "test", "docs", "doc") for f in folders)


def _outermost(path: str, active: dict[str, str]) -> str | None:
    best = None
    folder = os.path.dirname(path)
    while True:
        if folder in active:
            best = folder
        up = os.path.dirname(folder)
        if up == folder:
            return best
        folder = up


def _reach(
    hosts: list[str], edges: dict[str, set[str] | None], subtree: dict[str, str | None]
) -> set[str]:
    """Every module reached from ``hosts`` (themselves included), breadth first."""
    seen = set(hosts)
    queue = list(hosts)
    while queue:
        here = queue.pop()
        targets = edges.get(here, set())
        if targets is None:  # a module that does not parse: its imports are not known
            mine = subtree.get(here)
            targets = {f for f, s in subtree.items() if s is not None and s == mine}
        for target in targets:
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return seen


def _wanted(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith((".py", *_TEXTS)) or name.startswith(_NAMED_TEXTS)


def _bases(folder: str, sign: str) -> list[str]:
    """The import roots of a vendored folder: itself, its ``src/``, a vendor folder's children."""
    out = [folder, os.path.join(folder, "src")]
    if sign == "named":
        with contextlib.suppress(OSError):
            out += [e.path for e in os.scandir(folder) if e.is_dir()]
    return out


def _edges(file: str, data: bytes, root: str, bases: list[str]) -> set[str] | None:
    """The repository files ``file`` reaches directly; None when it does not parse."""
    from torchport.check.port._module_files import Lookups, find_module

    out: set[str] = set()
    if not file.endswith(".py"):
        prose = file.endswith(_PROSE)  # its files' paths only: a dotted word there is prose
        for word in set(_WORDS.findall(data.decode("utf-8", "surrogateescape"))):
            if not prose or _FILE_WORD.match(word):
                out.update(_named(file, word, root, bases))
        return out
    try:
        tree = ast.parse(data)  # bytes: a BOM, a coding cookie, as Python reads the file
    except (SyntaxError, ValueError):
        return None
    lookups = Lookups()
    for node in ast.walk(tree):
        asked: list[tuple[str | None, int]] = []
        if isinstance(node, ast.Import):
            asked = [(a.name, 0) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            asked = [(node.module, node.level)]
            asked += [(f"{node.module}.{a.name}" if node.module else a.name, node.level)
                      for a in node.names]  # fmt: skip
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if len(text) < 200 and (_FILE_WORD.match(text) or _DOTTED.match(text)):
                out.update(_named(file, text, root, bases))
            continue
        for dotted, level in asked:
            target = find_module(Path(file), dotted, level, lookups)
            if target is None and not level and dotted:
                target = _in_bases(dotted, bases)
            if target is not None:
                out.update(_with_packages(str(target)))
    return out


def _in_bases(dotted: str, bases: list[str]) -> Path | None:
    parts = dotted.split(".")
    for base in bases:
        stem = os.path.join(base, *parts)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            if os.path.isfile(candidate):
                return Path(candidate)
    return None


def _named(file: str, word: str, root: str, bases: list[str]) -> list[str]:
    """The files a string names: a file's path (``.py``, a shell script, a YAML file ...:
    from the root or the file's folder), or a dotted module name resolved against the
    vendored import roots."""
    if _FILE_WORD.match(word):
        for base in (root, os.path.dirname(file)):
            full = os.path.normpath(os.path.join(base, word))
            if os.path.isfile(full):
                return _with_packages(full) if full.endswith(".py") else [full]
        return []
    found = _in_bases(word, bases)
    return [] if found is None else _with_packages(str(found))


def _with_packages(path: str) -> list[str]:
    """``path`` and the ``__init__.py`` of each package holding it (importing runs them)."""
    out = [os.path.abspath(path)]
    folder = os.path.dirname(out[0])
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        out.append(os.path.join(folder, "__init__.py"))
        up = os.path.dirname(folder)
        if up == folder:
            break
        folder = up
    return out

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
  way; a Python string naming a module (``importlib``, ``runpy``, ``-m``), a module's
  attribute (a config's ``_target_``), a ``.py`` file or a folder (a dotted name's beginning
  in an f-string, a ``sys.path`` entry: every module below it), and any text file outside
  the subtrees naming one (a shell script, Makefile, Dockerfile, batch job, YAML/TOML/JSON
  file, a CI workflow under ``.github/`` ...; a notebook's code cells as Python; prose: its
  ``.py`` paths only) count too, a dotted name resolved from the root as well; a package run
  with ``-m`` runs its ``__main__``; a symlinked folder reaches the files it points to.

Any doubt holds nothing: no repository, more files than ``rules/_project_calls`` reads, or a
module outside the subtrees that does not parse (its imports are not known); a module of a
subtree that does not parse and is reached reaches its whole subtree.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from torchport.check.files._discovery import vendored_sign, vendored_signs_above

__all__ = ["HELD_MARK", "unreached_vendored", "vendored_held"]

HELD_MARK = "vendored "  # a held count's key is HELD_MARK + code (files/_text.held_note)
_PROSE = (".md", ".rst", ".txt")
# hidden folders of the root a CI service runs commands from (repository_texts skips them)
_HIDDEN = (".github", ".circleci", ".gitlab", ".buildkite", ".devcontainer", ".azure-pipelines")
_WORDS = re.compile(r"[\w./-]+\.(?:py|sh|bash|ya?ml|toml|cfg)\b|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_FILE_WORD = re.compile(r".*\.(?:py|sh|bash|ya?ml|toml|cfg)\Z")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z")
# a folder: a module name's beginning (`f"vendor.models.{name}"`) or a path (`vendor/x/`,
# `sys.path.insert(0, "third_party/y/lib")`): every module below it counts as reached
_PREFIX = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.\Z|[\w.-]*\w[\w.-]*/[\w./-]*\Z")
_PATHS = re.compile(r"[\w.-]+(?:/[\w.-]+)+/?")
# a text file's line where a folder's path is a place code runs from (not a .gitmodules',
# a linter's `exclude` line): `cd x && python ...`, `PYTHONPATH=x`, a Dockerfile's WORKDIR
_RUNS = re.compile(r"python|\bcd\b|sys\.path|\bWORKDIR\b|\bpushd\b", re.IGNORECASE)


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
    bases.append(root)  # `python -m third_party.x`, `import_module("vendor.y")`: from the root
    bases.append(os.path.join(root, "src"))
    edges = {f: _edges(f, data, root, bases) for f, data in (*texts, *_hidden_texts(root))}
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


def _hidden_texts(root: str) -> list[tuple[str, bytes]]:
    """(path, bytes) of the text files in the root's CI folders (:data:`_HIDDEN`)."""
    out: list[tuple[str, bytes]] = []
    for hidden in _HIDDEN:
        for here, _, names in os.walk(os.path.join(root, hidden)):
            for name in names:
                with contextlib.suppress(OSError), open(os.path.join(here, name), "rb") as f:
                    data = f.read(1 << 20)
                    if b"\0" not in data[:8192]:
                        out.append((os.path.join(here, name), data))
    return out


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
    tree = None
    if file.endswith(".ipynb"):
        tree = _notebook(data)  # its code cells as Python, else its words below
    if not file.endswith(".py"):  # any text file: a launcher (a shell script, a CI job ...)
        prose = file.endswith(_PROSE)  # its files' paths only: a dotted word there is prose
        text = data.decode("utf-8", "surrogateescape")
        folders = [
            w for line in text.splitlines() if _RUNS.search(line) for w in _PATHS.findall(line)
        ]
        for word in set(_WORDS.findall(text) + folders):
            if not prose or _FILE_WORD.match(word):
                out.update(_named(file, word, root, bases))
        if tree is None:
            return out
    else:
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
            if len(text) < 200 and (_FILE_WORD.match(text) or _DOTTED.match(text) or
                                    _PREFIX.match(text)):  # fmt: skip
                out.update(_named(file, text, root, bases))
            continue
        for dotted, level in asked:
            target = find_module(Path(file), dotted, level, lookups)
            if target is None and not level and dotted:
                target = _in_bases(dotted, bases)
            if target is not None:
                out.update(_with_packages(str(target)))
    return out


def _notebook(data: bytes) -> ast.Module | None:
    """A notebook's code cells as one Python module (``!`` and ``%`` lines left out)."""
    try:
        cells = json.loads(data)["cells"]
        lines = [
            line
            for cell in cells
            if cell.get("cell_type") == "code"
            for line in "".join(cell.get("source", ())).splitlines()
            if not line.lstrip().startswith(("!", "%"))
        ]
        return ast.parse("\n".join(lines))
    except (ValueError, TypeError, KeyError, AttributeError, SyntaxError):
        return None


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
    if _PREFIX.match(word) and not _FILE_WORD.match(word):  # a folder: all modules below it
        path = "/" in word  # a path: from the root or the file's folder; a name: an import root
        parts = word.split("/") if path else word.split(".")
        for base in (root, os.path.dirname(file)) if path else bases:
            folder = os.path.normpath(os.path.join(base, *parts))
            if os.path.isdir(folder) and folder.startswith(root + os.sep):
                return [m for p in _below(folder) for m in _with_packages(p)]
        return []
    if _FILE_WORD.match(word):
        for base in (root, os.path.dirname(file)):
            full = os.path.normpath(os.path.join(base, word))
            if os.path.isfile(full):
                return _with_packages(full) if full.endswith(".py") else [full]
        return []
    parts = word.split(".")
    for end in range(len(parts), 0, -1):  # `vendor.x.models.Net` (a config's target): its module
        found = _in_bases(".".join(parts[:end]), bases)
        if found is not None:
            break
    else:
        return []
    main = found.parent / "__main__.py"  # `python -m package` runs its __main__
    extra = [str(main)] if found.name == "__init__.py" and main.is_file() else []
    return [m for p in (str(found), *extra) for m in _with_packages(p)]


def _below(folder: str) -> list[str]:
    return [os.path.join(h, n) for h, _, ns in os.walk(folder) for n in ns if n.endswith(".py")]


def _with_packages(path: str) -> list[str]:
    """``path`` and the ``__init__.py`` of each package holding it (importing runs them);
    real paths: a symlinked folder reaches the files it points to."""
    out = [os.path.realpath(path)]
    folder = os.path.dirname(out[0])
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        out.append(os.path.join(folder, "__init__.py"))
        up = os.path.dirname(folder)
        if up == folder:
            break
        folder = up
    return out

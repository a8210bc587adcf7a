"""A from-imported submodule's text scan comes after the package questions: the same answers.

Branch s31r's ``_star_imports._submodules`` (torch's names through ``from pkg import compat``,
``compat.L``) scanned the file's text for ``<local>.`` of every name of every from-import before
asking anything, 5,804 scans on Lightning (issue 34, branch c34s: 3-5% of its check). Now it
first asks whether the statement names a package of the project and what its ``__init__``
binds: both were asked with the same arguments by ``_named`` for that very statement just
before, so they are kept answers, and the text is scanned only for the names left (29 scans
on Lightning).

The oracle is s31r's own order, kept here as it was (:func:`_scan_first`): on generated
projects (a package whose ``__init__`` binds nothing, a name of its own, or torch's ``nn``;
submodules binding torch's names, a nested package; scripts and package modules importing
them absolutely, relatively, aliased, reading them in code, comments and strings), both
give the same ``torch_bindings`` answers and note the same paths (the check cache's record),
in one span from cleared caches; and the text is scanned only for names of a package's
``__init__`` (a mutant scanning every name again fails the count).
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._listing import listed_once, recorded
from torchport.check.port import _star_imports
from torchport.check.port._module_files import Lookups, find_module
from torchport.check.semantic._binding import statement_facts
from torchport.check.semantic._star_names import is_star, wildcard_of

_INIT = (
    "",
    "from torch import nn\n",
    "compat = 1\n",
    "from . import compat\n",
    "from .compat import L\n",
    "from .sub import tools\n",
)
_COMPAT = (
    "from torch import load as L\nfrom torch import nn\n",
    "import torch as T\n",
    "L = 1\n",
    "from .helper import L\n",
)
# the lines of an importing file: its imports, then reads of the names they may bind
_IMPORTS = (
    "from pkg import compat",
    "from pkg import compat as cm",
    "from pkg import nn, compat",
    "from pkg.sub import tools",
    "from pkg import sub",
    "from pkg.compat import L",
    "import pkg.compat as cm",
    "from os import path",
    "from pkg import helper",
    "from . import compat",
    "from . import compat as cm",
    "from .sub import tools as cm",
)
_READS = (
    "x = compat.L('w.pt')",
    "y = cm.nn.Linear(2, 2)",
    "# compat.T in a comment",
    "s = 'cm.L'",
    "z = sub.tools.T.zeros(1)",
    "w = tools.T.ones(1)",
    "v = helper.L",
    "u = nn.Linear(1, 1)",
    "t = path.join('a')",
    "r = xcompat.L",
)


def _write(root: Path, init: int, compat: int, imports: list[int], reads: list[int]) -> list[Path]:
    pkg = root / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text(_INIT[init], encoding="utf-8")
    (pkg / "compat.py").write_text(_COMPAT[compat], encoding="utf-8")
    (pkg / "helper.py").write_text("from torch import load as L\n", encoding="utf-8")
    (pkg / "sub" / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "sub" / "tools.py").write_text("import torch as T\n", encoding="utf-8")
    body = [*(_IMPORTS[i] for i in imports), *(_READS[r] for r in reads)]
    script = [line for line in body if not line.startswith("from .")]
    (root / "main.py").write_text("\n".join(script) + "\n", encoding="utf-8")
    (pkg / "train.py").write_text("\n".join(body) + "\n", encoding="utf-8")
    return [root / "main.py", pkg / "train.py", pkg / "__init__.py", pkg / "sub" / "tools.py"]


def _scan_first(
    stmt: ast.ImportFrom,
    importer: Path,
    lookups: Lookups,
    seen: frozenset[str],
    source: str,
) -> dict[str, tuple[str, dict[str, str]]]:
    """s31r's ``_submodules`` as it was (43866f45): the text first, every name."""
    if is_star(stmt) or wildcard_of(stmt) is not None or len(seen) > _star_imports._DEPTH:
        return {}
    if not stmt.level and (stmt.module or "").partition(".")[0] == "torch":
        return {}
    read = {a.name: _star_imports._attributes_read(source, a.asname or a.name) for a in stmt.names}
    if not any(read.values()):
        return {}
    package = find_module(importer, stmt.module, stmt.level, lookups)
    if package is None or package.name != "__init__.py":
        return {}
    module = None if stmt.level else stmt.module
    exports = _star_imports._exports(package, module, lookups, seen, every=True)
    if exports is None:
        return {}
    dotted = "." * stmt.level + (stmt.module or "")
    found: dict[str, tuple[str, dict[str, str]]] = {}
    for alias in stmt.names:
        if not read[alias.name]:
            continue
        key = f"{dotted}.{alias.name}" if stmt.module else f"{dotted}{alias.name}"
        bound = exports[0].get(alias.name, key)
        own_import = bound is None and _binds_only_its_submodule(package, alias.name)
        if alias.name in exports[0] and bound != key and not own_import:
            continue
        if _star_imports._submodule(stmt.module, alias.name, stmt.level, importer, lookups) is None:
            continue
        dotted_name = f"{stmt.module}.{alias.name}" if stmt.module else alias.name
        names = _star_imports._module_names(dotted_name, stmt.level, importer, lookups, seen)
        reached = {n: t for n, t in (names or {}).items() if n in read[alias.name]}
        if reached:
            found[alias.asname or alias.name] = (key, reached)
    return found


def _binds_only_its_submodule(package: Path, name: str) -> bool:
    """Every statement of the ``__init__`` binding ``name`` is ``from . import name`` (the
    lead's addition to s31r's order, 2026-11-30: that binding is the submodule itself)."""
    binders: list[tuple[ast.AST, ast.alias | None]] = []
    for node in ast.walk(ast.parse(package.read_text())):
        if isinstance(node, ast.Import | ast.ImportFrom):
            hits = [a for a in node.names if (a.asname or a.name.split(".")[0]) == name]
            binders += [(node, a) for a in hits]
        elif isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            binders.append((node, None))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            binders += [(node, None)] if node.name == name else []
    return bool(binders) and all(
        isinstance(n, ast.ImportFrom) and n.level == 1 and n.module is None and a and a.name == name
        for n, a in binders
    )


def _answers(paths: list[Path]) -> tuple[list[object], dict[str, object], int]:
    """Each file's torch_bindings from cleared caches in one span, the paths noted, and how
    many times the text was scanned."""
    _star_imports._CACHE.clear()
    _star_imports._TORCH_NAMES.clear()
    scans = [0]
    scan = _star_imports._attributes_read

    def counted(source: str, local: str) -> set[str]:
        scans[0] += 1
        return scan(source, local)

    out: list[object] = []
    with pytest.MonkeyPatch.context() as patch, listed_once(), recorded() as reads:
        patch.setattr(_star_imports, "_attributes_read", counted)
        for path in paths:
            source = path.read_text(encoding="utf-8")
            facts = statement_facts(ast.parse(source))
            found = _star_imports.torch_bindings(str(path), facts.froms, facts.plain, source)
            order = {id(s): i for i, s in enumerate(facts.froms)}
            out.append((sorted((order[k], v) for k, v in found[0].items()), found[1]))
    return out, dict(reads), scans[0]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, len(_INIT) - 1),
    st.integers(0, len(_COMPAT) - 1),
    st.lists(st.integers(0, len(_IMPORTS) - 1), max_size=5),
    st.lists(st.integers(0, len(_READS) - 1), max_size=6),
    st.permutations(range(4)),
)
def test_the_same_answers_as_the_text_first(
    init: int, compat: int, imports: list[int], reads: list[int], order: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = _write(Path(folder), init, compat, imports, reads)
        paths = [paths[i] for i in order]
        answers, reads, scans = _answers(paths)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_star_imports, "_submodules", _scan_first)
            old_answers, old_reads, old_scans = _answers(paths)
        assert answers == old_answers
        assert reads == old_reads
        assert scans <= old_scans


def test_a_statement_of_no_package_scans_nothing() -> None:
    """``from os import path`` (none of the project's) and ``from pkg.compat import L`` (a
    module, no package): no scan. ``from pkg import nn, compat`` where ``pkg/__init__.py``
    binds ``nn`` to torch's: ``compat`` alone is scanned. ``from pkg import compat`` of a
    package binding nothing: one scan, and ``compat.L`` is torch's load."""
    with tempfile.TemporaryDirectory() as folder:
        paths = _write(Path(folder, "a"), 0, 0, [7, 5], [8, 0])
        answers, _, scans = _answers(paths[:1])
        assert (answers, scans) == ([([(0, {"L": "torch.load"})], {})], 0)
        paths = _write(Path(folder, "b"), 1, 0, [2, 2], [7, 0])
        answers, _, scans = _answers(paths[:1])
        found = {"pkg.compat": {"L": "torch.load"}}
        nn = {"nn": "torch.nn"}
        assert (answers, scans) == ([([(0, nn), (1, nn)], found)], 2)
        paths = _write(Path(folder, "c"), 0, 0, [7, 5, 0], [8, 0, 0])
        answers, _, scans = _answers(paths[:1])
        assert (answers, scans) == ([([(1, {"L": "torch.load"})], found)], 1)

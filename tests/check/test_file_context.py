"""A file's check takes the ``Context`` a project view made of its parse: as if it made its own.

``_file_context``: a project view reads each module through a ``Context`` of it; the
module's own check later in the run takes that one (one statement-facts walk, one reading
of its named and star imports). The oracle is the run that makes every check its own
``Context`` (``_file_context.file_context`` replaced by the plain constructor): on generated
projects (models, loaders a check reports, star imports, sibling modules and a package,
each run in one process with its views), a check and a port give the same findings, fixes
and texts, and every checked file's record of what it read besides itself (what the check
cache replays it by) is the same, paths and states, in the same order.
"""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import _file_context, _syntax, check_paths
from torchport.check._context import Context
from torchport.check._file_context import file_context, view_context
from torchport.check._listing import recorded
from torchport.check.files import _paths, _work
from torchport.check.port import _project
from torchport.check.port._rewrite import port_paths

_LOADER = (
    "class Net(nn.Module):\n    @classmethod\n"
    "    def load_from_file(cls, path, map_location=None):\n"
    "        return torch.load(path, map_location=map_location)\n\n"
    "    def forward(self, x):\n        return x\n"
)
_PARTS = {
    "model.py": ["import torch\nfrom torch import nn\n", _LOADER, "t = torch.ones(2).cuda()\n"],
    "helpers.py": [
        "import torch\n",
        "from model import *\n",
        "def make_mask(n):\n    return torch.ones(n)\n",
        "from torch import load as L\n",
    ],
    "pkg/__init__.py": ["from .nets import Net\n", "from model import Net\n", ""],
    "pkg/nets.py": [
        "import torch\nfrom torch import nn\n",
        _LOADER,
        "from helpers import *\n",
        "u = L('w.pt')\nv = make_mask(2).cuda()\n",
    ],
    "a.py": [  # (checked first: its views read the others before their own checks)
        "import torch\n",
        "from model import Net\n",
        "from pkg import Net\n",
        "from helpers import make_mask, L\n",
        "from helpers import *\n",
        "import helpers as h\n",
        'm = Net.load_from_file("w.pt")\n',
        "m = Net()\nm.cuda()\n",
        'x = make_mask(3).cuda()\ny = L("w.pt")\n',
        "net = Net().to('cuda')\n",
    ],
}


@st.composite
def projects(draw: st.DrawFn) -> dict[str, str]:
    files = {}
    for rel, parts in _PARTS.items():
        chosen = draw(st.lists(st.sampled_from(parts), min_size=1, max_size=len(parts)))
        files[rel] = "".join(dict.fromkeys(chosen))  # each part once, in the drawn order
    return files


@contextmanager
def _own_contexts(mp: pytest.MonkeyPatch, own: bool) -> Iterator[dict[str, object]]:
    """Every check's ``Context`` its own (``own``), or as the run gives it; the records each
    checked file made of what it read, by path."""
    reads: dict[str, object] = {}
    if own:
        mp.setattr(
            _file_context,
            "file_context",
            lambda source, path, tree, target: Context(source, path, tree, target_torch=target),
        )
    original = _work.check_chunk

    def chunk(chunk: object) -> list[_work.Report]:
        reports = original(chunk)  # type: ignore[arg-type]
        for report in reports:
            reads[str(report.path)] = dict(report.reads)  # (its order: the caches warm or not)
        return reports

    mp.setattr(_paths, "check_chunk", chunk)
    mp.setattr(_project, "_CACHE", {})  # (each run works its views out afresh)
    yield reads


def _settled(path: Path) -> None:
    """Written 10 s ago: a file changed in the last 2 s is noted with a hash of its bytes
    (``_listing.state``), which a run 2 s later would note without (a loaded machine)."""
    stamp = path.stat().st_mtime - 10
    os.utime(path, (stamp, stamp))


def _run(root: Path, own: bool) -> tuple[object, ...]:
    cache = root.parent / "cache"  # (a cached run records what each file read)
    shutil.rmtree(cache, ignore_errors=True)
    here = Path.cwd()
    with pytest.MonkeyPatch.context() as mp:
        os.chdir(root)
        try:
            with _own_contexts(mp, own) as reads:
                checked = check_paths(["."], select=["ALL"], jobs=1, cache=cache)
            ported = port_paths(["."], diff=True, jobs=1)
        finally:
            os.chdir(here)
    findings = [(str(f), f.fix) for f in checked.findings]
    return findings, list(checked.errors), reads, str(ported)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(projects())
def test_a_check_with_a_view_s_context_is_the_check_with_its_own(files: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "p"
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
            _settled(root / rel)
        _run(root, own=True)  # (the process's caches warm for both: a warm run notes less)
        assert _run(root, own=False) == _run(root, own=True)


def test_the_view_s_context_is_taken_where_a_view_made_one(tmp_path: Path) -> None:
    """The oracle above compares something: a module checked after a view read it walks
    with the view's ``Context``."""
    files = {
        "a.py": _PARTS["a.py"][1] + _PARTS["a.py"][6],
        "model.py": "".join(_PARTS["model.py"]),
    }
    for rel, text in files.items():
        (tmp_path / rel).write_text(text, encoding="utf-8")
    shared: list[str] = []
    real = _file_context.file_context

    def spy(source: str, path: str, tree: ast.Module, target: tuple[int, int] | None) -> Context:
        offered = _syntax._ADOPT[0][1] if _syntax._ADOPT else None
        ctx = real(source, path, tree, target)
        if ctx is offered:
            shared.append(Path(path).name)
        return ctx

    here = Path.cwd()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_project, "_CACHE", {})
        mp.setattr(_file_context, "file_context", spy)
        os.chdir(tmp_path)
        try:
            result = check_paths(["a.py", "model.py"], jobs=1)
        finally:
            os.chdir(here)
    assert shared == ["model.py"]  # a.py's loader asked model.py's owners: the view's Context
    assert "TP310" in [f.code for f in result.findings]


def test_what_making_the_context_read_is_in_the_check_s_own_record(tmp_path: Path) -> None:
    """``b.py`` reads ``compat.py`` only to make its Context (``L`` is torch's ``load``):
    taken from ``a.py``'s view, the check of ``b.py`` still records it (its cache entry is
    dropped when ``compat.py`` changes)."""
    files = {
        "a.py": 'from b import Net\nm = Net.load_from_file("w.pt")\n',
        "b.py": "import torch\nfrom torch import nn\nfrom compat import L\n\n\n"
        + _LOADER
        + 'x = L("w.pt")\n',
        "compat.py": "from torch import load as L\n",
    }
    root = tmp_path / "p"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
        _settled(root / rel)
    _run(root, own=True)  # (the process's caches warm for both)
    shared, own = _run(root, own=False), _run(root, own=True)
    assert shared == own
    reads = shared[2]
    assert isinstance(reads, dict)
    assert str(root.resolve() / "compat.py") in reads["b.py"]


def test_taking_a_view_s_context_notes_what_making_it_noted(tmp_path: Path) -> None:
    """The oracle: the record of making the Context in the check itself."""
    root = tmp_path.resolve()
    (root / "compat.py").write_text("from torch import load as L\n", encoding="utf-8")
    source = 'from compat import L\nx = L("w.pt")\n'
    (root / "b.py").write_text(source, encoding="utf-8")
    path = str(root / "b.py")
    with recorded() as plain:
        Context(source, path, ast.parse(source))
    tree = ast.parse(source)
    made = view_context(source, path, tree)
    _syntax.offer_scopes(tree, made)  # (as parse_source hands the view's kept parse on)
    with recorded() as taken:
        ctx = file_context(source, path, tree, None)
    assert ctx is made and ctx.path == path
    assert str(root / "compat.py") in plain
    assert taken == plain

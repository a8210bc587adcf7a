"""A check hands the trees of files it checked to a later project view that reads them.

TP310 builds a file's project view, which reads the modules the file imports for their
facts; a module checked earlier in the run was parsed for its own check already
(``_syntax.keep_checked``, once a view has been built in the process). The invariants: a
reader gets a kept tree only for the same file and text; what is kept is bounded; a
process that built no view keeps nothing; and a check's findings are the same with and
without the sharing (the oracle: a run that keeps nothing).
"""

from __future__ import annotations

import ast
import os
from collections import Counter, OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import _syntax, check_paths
from torchport.check._syntax import keep_checked, parsed_module, retain_checked
from torchport.check.port import _project

LOADER = (
    "import torch\n\n\nclass {name}:\n    @classmethod\n"
    "    def load_from_file(cls, path, map_location=None):\n"
    "        return torch.load(path, map_location=map_location)\n"
)
# Sorted so: a_first.py builds the run's first view, b_loaders.py is checked next (no view
# of its own), c_main.py's view reads b_loaders.py for its facts.
FILES = {
    "a_first.py": "from z_other import Other\n\nother = Other.load_from_file('o.pt')\n",
    "b_loaders.py": LOADER.format(name="Net"),
    "c_main.py": "from b_loaders import Net\n\nnet = Net.load_from_file('n.pt')\n",
    "z_other.py": LOADER.format(name="Other"),
}


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """No tree kept, no view built yet, no module facts known: a process's first run."""
    monkeypatch.setattr(_syntax, "_CHECKED", OrderedDict())
    monkeypatch.setattr(_syntax, "_KEPT", OrderedDict())
    monkeypatch.setattr(_syntax, "_checked", [False, 0])
    monkeypatch.setattr(_project, "_CACHE", {})


def _project_and_parser(
    root: Path, files: dict[str, str]
) -> tuple[Counter[str], Callable[..., ast.Module]]:
    """Write ``files`` under ``root``; a stand-in for ``ast.parse`` counting each text's parses."""
    root.mkdir()
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")
    parsed: Counter[str] = Counter()
    real = ast.parse

    def counting(source: Any, *args: Any, **kwargs: Any) -> ast.Module:
        parsed[source] += 1
        return real(source, *args, **kwargs)

    return parsed, counting


def _check(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], Counter[str]]:
    """The findings of a check of ``root`` in this process, and each text's parses."""
    parsed, counting = _project_and_parser(root, FILES)
    with monkeypatch.context() as mp:
        mp.setattr(ast, "parse", counting)
        result = check_paths([root], jobs=1)
    assert not result.errors, result.errors
    return sorted(f"{Path(f.path).name}:{f.line} {f.code}" for f in result.findings), parsed


@pytest.mark.usefixtures("fresh")
def test_a_module_checked_before_a_view_reads_it_is_not_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared, parsed = _check(tmp_path / "shared", monkeypatch)
    assert parsed[FILES["b_loaders.py"]] == 1, parsed  # checked, then read by c_main's view
    # The oracle: nothing kept (every reader parses for itself), module facts made anew.
    monkeypatch.setattr(_syntax, "_CHECKED_CHARS", 0)
    monkeypatch.setattr(_project, "_CACHE", {})
    alone, parsed_alone = _check(tmp_path / "alone", monkeypatch)
    assert parsed_alone[FILES["b_loaders.py"]] == 2, parsed_alone
    assert shared == alone
    assert "c_main.py:3 TP310" in shared and "a_first.py:3 TP310" in shared, shared


@pytest.mark.usefixtures("fresh")
def test_nothing_is_kept_before_a_view_and_a_tree_only_for_its_own_text(tmp_path: Path) -> None:
    path, text = str(tmp_path / "m.py"), "x = 1\n"
    tree = ast.parse(text)
    early = str(tmp_path / "early.py")
    keep_checked(early, text, tree)
    assert parsed_module(early, text) is not tree  # no view built yet: nothing was kept
    retain_checked()
    keep_checked(path, text, tree)
    assert parsed_module(path, text) is tree
    assert parsed_module(path, text) is tree  # left for the next reader
    other = parsed_module(path, "x = 2\n")  # the file changed since its check
    assert other is not tree and ast.dump(other) == ast.dump(ast.parse("x = 2\n"))


@pytest.mark.usefixtures("fresh")
def test_the_kept_trees_are_bounded_oldest_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_syntax, "_CHECKED_CHARS", 40)
    retain_checked()
    real = os.path.realpath(tmp_path)
    texts = {f"{real}/m{i}.py": f"x{i} = {i}\n" for i in range(8)}  # 7 characters each
    for path, text in texts.items():
        keep_checked(path, text, ast.parse(text))
    assert list(_syntax._CHECKED) == list(texts)[-5:]  # 5 of 7 fit in 40
    assert _syntax._checked[1] == sum(len(t) for t in list(texts.values())[-5:])
    keep_checked(f"{real}/big.py", "y = 1\n" * 2, ast.parse("y = 1\n" * 2))  # over 40 / 4
    assert f"{real}/big.py" not in _syntax._CHECKED


_NAMES = ("a", "b", "c", "d")


@st.composite
def _projects(draw: st.DrawFn) -> dict[str, str]:
    """Modules importing each other's classes (cycles too), some classes loaders, some
    calls of ``Cls.load_from_file(...)`` and ``.cuda()``: views read modules checked before."""
    files: dict[str, str] = {}
    for name in draw(st.lists(st.sampled_from(_NAMES), min_size=2, max_size=4, unique=True)):
        lines = ["import torch"]
        sources = draw(st.lists(st.sampled_from(_NAMES), max_size=3, unique=True))
        lines += [f"from {m} import {m.upper()}" for m in sources if m != name]
        loader = draw(st.booleans())
        lines.append(
            (LOADER if loader else "\n\nclass {name}:\n    pass\n").format(name=name.upper())
        )
        for m in sources:
            if m != name and draw(st.booleans()):
                lines.append(f"x_{m} = {m.upper()}.load_from_file('{m}.pt')")
            if draw(st.booleans()):
                lines.append(f"y_{m} = {m.upper()}().cuda()")
        files[f"{name}.py"] = "\n".join(lines) + "\n"
    return files


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(files=_projects())
def test_the_findings_are_the_same_with_and_without_the_kept_trees(
    files: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    found = []
    for chars in (_syntax._CHECKED_CHARS, 0):  # the oracle: nothing kept
        root = tmp_path_factory.mktemp("kept")
        for rel, text in files.items():
            (root / rel).write_text(text, encoding="utf-8")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_syntax, "_CHECKED", OrderedDict())
            mp.setattr(_syntax, "_KEPT", OrderedDict())
            mp.setattr(_syntax, "_checked", [False, 0])
            mp.setattr(_syntax, "_CHECKED_CHARS", chars)
            mp.setattr(_project, "_CACHE", {})
            result = check_paths([root], jobs=1, select=["ALL"])
        assert not result.errors, result.errors
        found.append(
            sorted((Path(f.path).name, f.line, f.code, f.message) for f in result.findings)
        )
    assert found[0] == found[1]


# A port (fix's run, every file's port analysis and its project view) hands its trees on
# as a check does: a file ported before a later view or star import reads it is not parsed
# again, and the tree handed on is the very tree ``ast.parse`` makes of the file's text
# (the port's analysis and its fixes leave it as they found it).


def _port(root: Path, files: dict[str, str], chars: int) -> tuple[list[object], Counter[str]]:
    """The port's diffs and findings of ``files`` under ``root`` in a fresh process state
    keeping up to ``chars`` characters of checked trees, and each text's parses."""
    from torchport.check import port_paths

    parsed, counting = _project_and_parser(root, files)
    real = ast.parse
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_syntax, "_CHECKED", OrderedDict())
        mp.setattr(_syntax, "_KEPT", OrderedDict())
        mp.setattr(_syntax, "_checked", [False, 0])
        mp.setattr(_syntax, "_CHECKED_CHARS", chars)
        mp.setattr(_project, "_CACHE", {})
        mp.setattr(ast, "parse", counting)
        result = port_paths([root], diff=True, jobs=1)
        # What the port kept is each file's text parsed, untouched by its analysis.
        for source, tree in _syntax._CHECKED.values():
            want = real(source)
            assert ast.dump(tree, include_attributes=True) == ast.dump(
                want, include_attributes=True
            )
    assert not result.errors, result.errors
    diffs = sorted((Path(c.path).name, c.diff.replace(str(root), "ROOT")) for c in result.changed)
    left = sorted((Path(f.path).name, f.line, f.col, f.code, f.message) for f in result.remaining)
    return [diffs, left], parsed


def test_a_module_ported_before_a_view_reads_it_is_not_parsed_again(tmp_path: Path) -> None:
    files = {
        "a_first.py": "import torch\nfrom z_other import Other\n\nother = Other()\n",
        "b_net.py": "import torch\n\n\nclass Net(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x * torch.ones(2)\n",
        "c_main.py": "import torch\nfrom b_net import Net\n\nout = Net()(torch.ones(2))\n",
        "z_other.py": "class Other:\n    pass\n",
    }
    shared, parsed = _port(tmp_path / "shared", files, _syntax._CHECKED_CHARS)
    assert parsed[files["b_net.py"]] == 1, parsed  # ported, then read by c_main's view
    alone, parsed_alone = _port(tmp_path / "alone", files, 0)  # the oracle: nothing kept
    assert parsed_alone[files["b_net.py"]] == 2, parsed_alone
    assert shared == alone
    assert shared[0], shared  # c_main.py's port moves its model: the view read b_net.py


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(files=_projects())
def test_the_port_is_the_same_with_and_without_the_kept_trees(
    files: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    shared, _ = _port(tmp_path_factory.mktemp("kept") / "p", files, _syntax._CHECKED_CHARS)
    alone, _ = _port(tmp_path_factory.mktemp("alone") / "p", files, 0)
    assert shared == alone


@pytest.mark.usefixtures("fresh")
def test_a_command_line_importer_is_read_from_its_kept_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchport.check.port._command_line import _declared

    path = tmp_path / "train.py"
    text = (
        "import argparse\nfrom helpers import step\nLR = 0.1\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--lr', default=LR)\n"
        "parser.add_argument('--name', type=str)\nparser.add_argument('--w', type=Weights)\n"
        "args = parser.parse_args()\nargs.extra = make()\n"
    )
    path.write_text(text, encoding="utf-8")
    alone = _declared(path)  # nothing kept: parsed here (and kept for the file's own parse)
    assert alone == (
        frozenset({"argparse", "helpers"}),
        frozenset({"lr", "name"}),
        frozenset({"w", "extra"}),
    )
    parsed: list[str] = []
    real = ast.parse
    monkeypatch.setattr(
        ast, "parse", lambda source, *a, **k: parsed.append(source) or real(source, *a, **k)
    )
    assert _declared(path) == alone  # the tree kept by the first read: no second parse
    assert parsed == []

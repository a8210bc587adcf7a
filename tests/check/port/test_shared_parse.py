"""One parse and one scope map per file, whichever role of the port comes first.

The port reads a project's sibling modules for their facts (``from model import
Net``) before their own turn to be ported comes; that parse and its scope map are
kept (``_syntax.keep_parsed``) and taken by the file's own parse. The invariants:
a file is parsed once per port run when its text did not change; what is taken is
what a parse of that text gives (never a tree of other text); and the port's
output is the same with and without the sharing (the oracle: a run with nothing
kept).
"""

from __future__ import annotations

import ast
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.check.port.siblings import load
from torchport.check import _syntax, port_paths
from torchport.check._context import Context
from torchport.check._syntax import keep_parsed, parse_source, parsed_module
from torchport.check.port import _project

HERE = Path(__file__).parent
project_fuzz = load("test_project_fuzz_for_sharing", HERE / "test_project_fuzz.py")

MODEL = (
    "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
    "    def forward(self, x):\n        return self.fc(x)\n"
)
# Sorted before model.py: the script is ported first, and reads model.py for its facts.
TRAIN = "import torch\nfrom model import Net\n\nnet = Net()\nprint(net(torch.ones(1, 4)))\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _port(root: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """(path, diff) of each file the port would change, and the findings it leaves."""
    result = port_paths([root], diff=True, jobs=1)
    assert not result.errors, result.errors
    changed = sorted((Path(c.path).name, c.diff) for c in result.changed)
    return changed, sorted(str(f) for f in result.remaining)


def _port_counting_parses(
    files: dict[str, str],
) -> tuple[list[tuple[str, str]], list[str], Counter[str]]:
    """Port ``files`` in a fresh folder; also how often each source text was parsed."""
    parsed: Counter[str] = Counter()
    real = ast.parse

    def counting(source: Any, *args: Any, **kwargs: Any) -> ast.Module:
        parsed[source] += 1
        return real(source, *args, **kwargs)

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp)
        _write(root, files)
        mp.setattr(ast, "parse", counting)
        changed, left = _port(root)
    return changed, left, parsed


def test_a_sibling_read_for_its_facts_is_not_parsed_again() -> None:
    changed, _, parsed = _port_counting_parses({"a_train.py": TRAIN, "model.py": MODEL})
    assert [name for name, _ in changed] == ["a_train.py"]  # the sibling was read and known
    assert parsed[MODEL] == 1, parsed[MODEL]  # read for its facts, then ported: one parse


def test_a_kept_tree_is_taken_once_and_only_for_the_same_text() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "m.py")
        kept = ast.parse("x = 1\n")
        keep_parsed(path, "x = 1\n", kept, None)
        other = parse_source("x = 2\n", path)  # the file changed since: parsed anew
        assert other is not kept and ast.dump(other) == ast.dump(ast.parse("x = 2\n"))
        assert parse_source("x = 1\n", path) is not kept  # the kept tree went with the miss
        keep_parsed(path, "x = 1\n", kept, None)
        assert parse_source("x = 1\n", path) is kept
        assert parse_source("x = 1\n", path) is not kept  # taken once


def test_the_walk_adopts_the_scope_map_kept_with_the_tree() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "m.py")
        source = "import torch\nx = torch.ones(1)\n"
        sibling = Context(source, path, ast.parse(source))
        scopes = sibling.scopes
        keep_parsed(path, source, sibling.tree, scopes)
        tree = parse_source(source, path)
        assert tree is sibling.tree
        assert Context(source, path, tree).scopes is scopes
        # A tree parsed anew gets its own scope map, never another tree's.
        fresh = parse_source(source, path)
        assert Context(source, path, fresh).scopes is not scopes


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(project_fuzz.projects())
def test_the_port_is_the_same_with_and_without_the_shared_parse(files: dict[str, str]) -> None:
    files = {("a_" + k if k == "train.py" else k): v for k, v in files.items()}
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp)
        _write(root, files)
        mp.setattr(_project, "_CACHE", {})
        shared = _port(root)
        mp.setattr(_project, "_CACHE", {})
        mp.setattr(_syntax, "_KEPT_MAX", 0)  # nothing kept: every file parsed for itself
        alone = _port(root)
    assert shared == alone


# A script that star-imports the model's module: the module is read for the names it
# exports, for its own star imports, for its facts, and then ported itself.
STARRED = "from model import *\n\nnet = Net()\nprint(net(torch.ones(1, 4)))\n"
file_gate = load("test_file_gate_for_sharing", HERE / "test_file_gate.py")


def test_a_star_imported_sibling_is_parsed_once() -> None:
    _, left, parsed = _port_counting_parses({"a_train.py": STARRED, "model.py": MODEL})
    assert any(" TP501 " in f for f in left), left  # `Net` known through the star
    assert parsed[MODEL] == 1, parsed[MODEL]  # its names, its stars, its facts, its port


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(files=file_gate._projects())
def test_star_imports_read_the_same_with_and_without_the_shared_parse(
    files: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Projects whose modules star-import each other (cycles too), each ported in a fresh
    copy: with the parse shared, and with nothing kept (every reader parses for itself)."""
    root = tmp_path_factory.mktemp("stars")
    with pytest.MonkeyPatch.context() as mp:
        _write(root / "shared", files)
        shared = _port(root / "shared")
        mp.setattr(_syntax, "_KEPT_MAX", 0)
        _write(root / "alone", files)
        alone = _port(root / "alone")
    here, there = f"{root}/shared/", f"{root}/alone/"
    assert [(name, diff.replace(here, there)) for name, diff in shared[0]] == alone[0]
    assert [f.replace(here, there) for f in shared[1]] == alone[1]


def test_a_reader_gets_the_kept_tree_only_for_the_same_text_and_leaves_it() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "m.py")
        kept = ast.parse("x = 1\n")
        keep_parsed(path, "x = 1\n", kept, None)
        assert parsed_module(path, "x = 1\n") is kept
        assert parsed_module(path, "x = 1\n") is kept  # left for the file's own parse
        other = parsed_module(path, "x = 2\n")  # the file changed: parsed anew, and kept
        assert other is not kept and ast.dump(other) == ast.dump(ast.parse("x = 2\n"))
        assert parse_source("x = 2\n", path) is other

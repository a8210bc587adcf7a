"""Findings in vendored code nothing in the project imports: held by a default run, counted.

The oracle draws a project (a host package ``app``, a vendored package ``vpkg`` under a folder
with a vendor folder's name, with a packaging file and a licence, or with neither) and its
import edges at random, writes the modules, and computes what a default run holds with a
breadth-first search of its own over the drawn edges: the vendored modules no host module
reaches, where the folder bears a sign (a packaged one only when a host module reaches some
module of it). ``files/_vendored.unreached_vendored`` reads the files and must agree.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths, fix_paths
from torchport.check.files._text import held_note
from torchport.check.files._vendored import HELD_MARK, unreached_vendored

SRC = str(Path(__file__).resolve().parents[2] / "src")
SIGNS = ("named", "packaged", "none")
_COUNT = itertools.count()


def _folder(sign: str) -> str:
    return {"named": "third_party", "packaged": "extlib", "none": "tools"}[sign]


@st.composite
def projects(draw: st.DrawFn) -> tuple[str, int, int, list[tuple[str, str]]]:
    sign = draw(st.sampled_from(SIGNS))
    hosts, vendored = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    names = [f"app.m{i}" for i in range(hosts)] + [f"vpkg.v{j}" for j in range(vendored)]
    pairs = [(a, b) for a in names for b in names if a != b]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=8, unique=True))
    return sign, hosts, vendored, edges


def _write(
    root: Path, sign: str, hosts: int, vendored: int, edges: list[tuple[str, str]]
) -> dict[str, Path]:
    (root / ".git").mkdir(parents=True)
    outer = root / _folder(sign)
    files = {"app": root / "app" / "__init__.py", "vpkg": outer / "vpkg" / "__init__.py"}
    files |= {f"app.m{i}": root / "app" / f"m{i}.py" for i in range(hosts)}
    files |= {f"vpkg.v{j}": outer / "vpkg" / f"v{j}.py" for j in range(vendored)}
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    if sign == "packaged":
        files["setup"] = outer / "setup.py"
        (outer / "setup.py").write_text("from setuptools import setup\nsetup(name='vpkg')\n")
        (outer / "LICENSE").write_text("MIT\n")
    for source, target in edges:
        with files[source].open("a") as out:
            out.write(f"import {target}\n")
    return files


def _oracle(sign: str, hosts: int, vendored: int, edges: list[tuple[str, str]]) -> set[str]:
    """The drawn vendored modules a default run holds, by a search over the drawn edges."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:  # importing `vpkg.v1` runs `vpkg/__init__` first
        graph.setdefault(source, set()).update({target, target.partition(".")[0]})
    host_set = {"app", *(f"app.m{i}" for i in range(hosts))}
    seen, queue = set(host_set), list(host_set)
    while queue:
        for target in graph.get(queue.pop(), ()):
            if target not in seen:
                seen.add(target)
                queue.append(target)
    ours = {"vpkg", *(f"vpkg.v{j}" for j in range(vendored))}
    if sign == "packaged":
        ours.add("setup")  # a module of the copy too, which nothing imports
    if sign == "none" or (sign == "packaged" and not ours & seen):
        return set()
    return ours - seen


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(projects())
def test_held_modules_are_those_no_host_module_reaches(
    tmp_path: Path, drawn: tuple[str, int, int, list[tuple[str, str]]]
) -> None:
    sign, hosts, vendored, edges = drawn
    root = tmp_path / f"p{next(_COUNT)}"
    files = _write(root, sign, hosts, vendored, edges)
    held = unreached_vendored(str(root))
    expected = {str(files[name]) for name in _oracle(sign, hosts, vendored, edges)}
    assert set(held) == expected, (sign, edges)


def _project(root: Path) -> None:
    """A host script using one module of a vendored copy; another module of it unused."""
    (root / ".git").mkdir(parents=True)
    (root / "third_party" / "lib").mkdir(parents=True)
    (root / "third_party" / "lib" / "__init__.py").write_text("")
    (root / "third_party" / "lib" / "used.py").write_text(
        "import torch\nx = torch.ones(2).cuda()\n"
    )
    (root / "third_party" / "lib" / "unused.py").write_text(
        "import torch\ny = torch.ones(2).cuda()\n"
    )
    (root / "main.py").write_text("import torch\nfrom lib import used\nz = torch.ones(2).cuda()\n")


def test_a_default_run_counts_what_it_holds_and_extend_select_lists_it(tmp_path: Path) -> None:
    _project(tmp_path)
    result = check_paths([tmp_path], cache=False, config=None)
    paths = sorted({os.path.basename(f.path) for f in result.findings})
    assert paths == ["main.py", "used.py"]
    unused = str(tmp_path / "third_party" / "lib" / "unused.py")
    assert result.held == {unused: {HELD_MARK + "TP101": 1}}
    assert "1 finding in vendored code nothing in the project imports (TP101) in 1 file" in (
        held_note(result.held)
    )
    listed = check_paths([tmp_path], cache=False, extend_select=["TP101"])
    assert unused in {f.path for f in listed.findings} and not listed.held
    named = check_paths([tmp_path], cache=False, select=["TP101"])
    assert unused in {f.path for f in named.findings} and not named.held


def test_fix_leaves_held_code_as_it_is_and_says_so(tmp_path: Path) -> None:
    _project(tmp_path)
    unused = tmp_path / "third_party" / "lib" / "unused.py"
    before = unused.read_text()
    result = fix_paths([tmp_path], diff=True)
    assert str(unused) not in {f.path for f in result.changed}
    assert result.held == {str(unused): {HELD_MARK + "TP101": 1}}
    fix_paths([tmp_path])
    assert unused.read_text() == before
    assert "torch.ones(2).cuda()" not in (tmp_path / "main.py").read_text()


def test_the_summary_and_statistics_say_what_is_held(tmp_path: Path) -> None:
    _project(tmp_path)
    for extra in ([], ["--statistics"]):
        run = subprocess.run(
            [sys.executable, "-m", "torchport", "check", "--no-cache", *extra, str(tmp_path)],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC}, check=False,
        )  # fmt: skip
        assert "in vendored code nothing in the project imports (TP101)" in run.stdout, run.stdout
        assert "`--extend-select TP101` lists it" in run.stdout
    json_run = ["check", "--no-cache", "--format", "json", str(tmp_path)]
    run = subprocess.run(
        [sys.executable, "-m", "torchport", *json_run],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC}, check=False,
    )  # fmt: skip
    listed = {
        os.path.basename(i["path"]) for i in json.loads(run.stdout) if i.get("kind") == "finding"
    }
    assert listed == {"main.py", "used.py"}


def test_both_kinds_of_held_findings_are_said_apart() -> None:
    note = held_note({"a.py": {"TP101": 2}, "b.py": {HELD_MARK + "TP109": 1}})
    assert note.startswith("a default run leaves out 2 findings of rules naming CUDA (TP101)")
    assert "; a default run leaves out 1 finding in vendored code" in note
    assert "(TP109) in 1 file; `--extend-select TP109` lists it" in note


@pytest.mark.parametrize("sign", ["packaged", "none"])
def test_a_packaged_or_plain_folder_nothing_uses_holds_nothing(tmp_path: Path, sign: str) -> None:
    """A packaged folder no host module imports from may be a project of the repository's own."""
    files = _write(tmp_path, sign, 1, 2, [("vpkg.v0", "vpkg.v1")])
    assert unreached_vendored(str(tmp_path)) == frozenset(), files

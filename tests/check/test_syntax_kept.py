"""What ``_syntax`` keeps for a file's own parse, and what it lets go (issue 34).

Invariants held here, on generated projects:

* Nothing dropped from the stores (pushed out of the full ``_KEPT``, replaced, left
  unadopted) is left as cyclic garbage: a port and a check of projects after the store is
  full leave no analysis object to the collector. Oracle: the collector's own count.
* Dropping is sound: what is released is referred to by nothing else when it is dropped
  (oracle: ``gc.get_referrers``), and a run that drops at every step (the store holding one
  entry) reports and ports exactly what a run that drops nothing does.
"""

from __future__ import annotations

import ast
import gc
from collections import Counter, OrderedDict
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import _syntax, check_paths
from torchport.check._context import Context
from torchport.check.port import port_paths

# A module: the earlier modules it imports a class from, and how it places its model.
_MODULE = st.tuples(st.sets(st.integers(0, 3), max_size=2), st.sampled_from(["cuda", "to", "cpu"]))
_PROJECT = st.lists(_MODULE, min_size=2, max_size=4)
_FIXTURE = HealthCheck.function_scoped_fixture
_PLACE = {"cuda": ".cuda()", "to": '.to("cuda")', "cpu": ""}


def _write(folder: Path, project: list[tuple[set[int], str]]) -> None:
    folder.mkdir(parents=True)
    for i, (imports, place) in enumerate(project):
        bases = sorted(j for j in imports if j < i)
        lines = ["import torch", "from torch import nn"]
        lines += [f"from m{j} import Net{j}" for j in bases]
        base = f"Net{bases[0]}" if bases else "nn.Module"
        lines += [
            f"class Net{i}({base}):",
            "    def __init__(self):",
            "        super().__init__()",
            "        self.fc = nn.Linear(4, 2)",
            "    def forward(self, x):",
            "        return self.fc(x)",
            f"net{i} = Net{i}(){_PLACE[place]}",
            f"def run{i}():",
            f"    return net{i}(torch.ones(3, 4){_PLACE[place]})",
        ]
        (folder / f"m{i}.py").write_text("\n".join(lines) + "\n")
    runs = "".join(f"from m{i} import run{i}\nrun{i}()\n" for i in range(len(project)))
    (folder / "train.py").write_text("import torch\n" + runs)


def _fill(count: int) -> None:
    """Fill the store with Contexts of files no parse will ask for (another worker's)."""
    for i in range(count):
        src = f"import torch\nx{i} = torch.ones(2)\ndef f():\n    return x{i}\n"
        tree = ast.parse(src)
        ctx = Context(src, f"/nonexistent/g34x/m{i}.py", tree)
        ctx.scopes  # noqa: B018 (the scope map: the cycle a dropped Context would leave)
        _syntax.keep_parsed(ctx.path, src, tree, ctx)


def _analysis_garbage(run: object) -> Counter[str]:
    """Analysis objects (syntax trees, the checker's objects) the collector finds unreachable
    after ``run()``, the collector paused meanwhile."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    debug = gc.get_debug()
    try:
        run()  # type: ignore[operator]
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return Counter(
            type(o).__qualname__
            for o in gc.garbage
            if isinstance(o, ast.AST) or type(o).__module__.startswith("torchport.check")
        )
    finally:
        gc.set_debug(debug)
        gc.garbage.clear()
        if was:
            gc.enable()


@pytest.fixture
def fresh_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty stores of this test's own (restored after it), a small cap: full quickly."""
    monkeypatch.setattr(_syntax, "_KEPT", OrderedDict())
    monkeypatch.setattr(_syntax, "_ADOPT", [])
    monkeypatch.setattr(_syntax, "_KEPT_MAX", 4)


@settings(max_examples=4, deadline=None, suppress_health_check=[_FIXTURE])
@given(projects=st.lists(_PROJECT, min_size=1, max_size=3))
def test_a_full_store_leaves_no_analysis_garbage(
    tmp_path_factory: pytest.TempPathFactory,
    fresh_stores: None,
    projects: list[list[tuple[set[int], str]]],
) -> None:
    root = tmp_path_factory.mktemp("kept")
    warm, folder = root / "warm", root / "projects"
    _write(warm, projects[0])
    for n, project in enumerate(projects):
        _write(folder / f"p{n}", project)
    port_paths([warm], diff=True, jobs=1)  # first-use objects (lazy imports, caches) made here
    check_paths([warm], jobs=1)
    _syntax._KEPT.clear()
    _fill(_syntax._KEPT_MAX + 2)  # full: each file a view reads pushes a Context out

    def run() -> None:
        port_paths([folder], diff=True, jobs=1)
        check_paths([folder], jobs=1)
        _fill(_syntax._KEPT_MAX + 2)  # and pushes out what the runs left kept

    garbage = _analysis_garbage(run)
    assert garbage.total() == 0, garbage.most_common(5)


def _store_entry(obj: object, scopes: object) -> bool:
    """Whether ``obj`` is the stores' own entry of ``scopes`` (``_KEPT``'s, ``_ADOPT``'s)."""
    if not isinstance(obj, tuple) or not obj or obj[-1] is not scopes:
        return False
    return (len(obj) == 3 and isinstance(obj[1], ast.Module)) or (
        len(obj) == 2 and isinstance(obj[0], ast.Module)
    )


def _outputs(folder: Path) -> tuple[list[str], list[str]]:
    """The port's diffs and the check's findings of ``folder``, its path left out."""
    ported = port_paths([folder], diff=True, jobs=1)
    checked = check_paths([folder], jobs=1)
    prefix = str(folder)
    diffs = sorted(f"{f.path}\n{f.diff}".replace(prefix, "<p>") for f in ported.changed)
    findings = sorted(repr(f).replace(prefix, "<p>") for f in checked.findings)
    return diffs, findings


@settings(max_examples=4, deadline=None, suppress_health_check=[_FIXTURE])
@given(project=_PROJECT)
def test_dropping_releases_only_what_nothing_else_holds(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    fresh_stores: None,
    project: list[tuple[set[int], str]],
) -> None:
    root = tmp_path_factory.mktemp("sound")
    _write(root / "whole", project)
    monkeypatch.setattr(_syntax, "_KEPT_MAX", 10_000)  # nothing pushed out
    whole = _outputs(root / "whole")

    dropped: list[str] = []
    held: list[tuple[str, list[str]]] = []  # (not raised there: a port turns it into a file error)
    release = _syntax._drop

    def drop(scopes: object | None) -> None:
        if isinstance(scopes, Context):
            # (a loop, not a comprehension: one would hold ``scopes`` in a cell of its own)
            others = []
            for r in gc.get_referrers(scopes):
                own = r is scopes.__dict__ or isinstance(r, FrameType) or _store_entry(r, scopes)
                if not own:
                    others.append(type(r).__qualname__)
            if others:
                held.append((scopes.path, others))
            dropped.append(scopes.path)
        release(scopes)

    monkeypatch.setattr(_syntax, "_drop", drop)
    monkeypatch.setattr(_syntax, "_KEPT_MAX", 1)  # a view's second module pushes out its first
    _write(root / "tight", project)
    tight = _outputs(root / "tight")
    assert not held, f"dropped while something else refers to it: {held}"
    assert tight == whole
    assert dropped or len(project) < 3, "the test pushed nothing out: it holds nothing"

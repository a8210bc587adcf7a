"""An in-place port's cost: a listing span per chunk, and workers only on idle cores (issue 31).

A port that writes (``torchport port PATH``) could not take ``port --diff``'s span of
folder listings for its whole chunk: it changed the tree between files. Outside a span
every kept answer (a module's facts, a folder's CUDA extensions) checked each path it
read with its own ``stat`` each time it was asked: timm's in-place port made 4.8 million
``stat`` calls (``_listing.same``) where ``--diff`` made 170,000, and took 38 s of CPU
against 15. Each file's fix then became a span of its own; since no file is written
before every file is fixed (``files/_commit.py``, issue 31/34), a writing chunk runs in one
span, as ``--diff``'s.

The default number of workers is the cores no other process keeps busy (the load
average's), one process below two: each worker works out its files' project views again.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from torchport.check import _fix, _listing
from torchport.check.files import _fixing, _plan, _work
from torchport.check.port._rewrite import PORT_REPORTS, PORT_SELECT, port_paths

_PROJECT = {
    "pkg/__init__.py": "from .model import Net\n",
    "pkg/layers.py": (
        "import torch\nfrom torch import nn\n\n\nclass Shift(nn.Module):\n"
        "    def forward(self, x):\n        return x + torch.ones(x.shape[-1])\n"
    ),
    "pkg/model.py": (
        "import torch\nfrom torch import nn\nfrom pkg.layers import Shift\n\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n        self.shift = Shift()\n\n"
        "    def forward(self, x):\n        return self.shift(self.fc(x))\n"
    ),
    "tools/eval.py": (
        "import torch\nfrom pkg.model import Net\n\nnet = Net()\n"
        "net.load_state_dict(torch.load('w.pt'))\nprint(net(torch.ones(1, 4)).numpy())\n"
    ),
    "train.py": (
        "import torch\nfrom pkg.model import Net\n\nmodel = Net()\nx = torch.randn(2, 4)\n"
        "print(model(x).numpy())\n"
    ),
}


def _project(root: Path) -> Path:
    for name, text in _PROJECT.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _ported(root: Path) -> tuple[dict[str, str], list[tuple[str, int, int, str, str]], int]:
    result = port_paths([root], jobs=1)
    texts = {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.py"))}
    left = [(Path(f.path).name, f.line, f.col, f.code, f.message) for f in result.remaining]
    return texts, left, len(result.changed)


def _spans(root: Path, monkeypatch: pytest.MonkeyPatch, *, diff: bool) -> list[int]:
    """The listing span each file's fix ran in (-1: none), counted from the run's first."""
    spans: list[int] = []
    fix_text = _fix.fix_text

    def seen(*args: object, **kwargs: object) -> object:
        spans.append(_listing.span())
        return fix_text(*args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(_fix, "fix_text", seen)
        port_paths([root], jobs=1, diff=diff)
    return [s - spans[0] if s != -1 else -1 for s in spans]


def test_an_in_place_port_checks_kept_answers_once_a_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a span each kept answer's every read is ``stat``-ed whenever it is asked
    (``_listing.same``); in a chunk's span once for all the answers of its files, and the
    in-place port's chunks are ``--diff``'s, span for span (nothing is written meanwhile)."""
    root = _project(tmp_path / "a")
    calls: list[str] = []
    same = _listing.same

    def counted(path: str, then: list[object] | None) -> bool:
        calls.append(path)
        return same(path, then)

    monkeypatch.setattr(_listing, "same", counted)
    dry = _spans(root, monkeypatch, diff=True)
    spans = _spans(root, monkeypatch, diff=False)
    assert calls == []  # (before: every kept answer's reads, once per question)
    assert len(spans) == len(_PROJECT) and -1 not in spans
    assert spans == dry and len(set(spans)) < len(spans)  # a chunk's files share its span
    assert _ported(_project(tmp_path / "b"))[2] >= 3  # it writes files later ones read


def test_an_in_place_port_with_a_span_a_file_writes_what_it_wrote_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The oracle: the same project ported in place with no span at all (the code before)."""
    with_spans = _ported(_project(tmp_path / "a"))
    monkeypatch.setattr(_fixing, "listed_once", contextlib.nullcontext)
    without = _ported(_project(tmp_path / "b"))
    assert with_spans == without
    assert with_spans[0] != _PROJECT  # something was ported


@pytest.mark.parametrize(
    ("cpus", "load", "jobs"),
    [(2, 0.0, 2), (2, 0.4, 2), (2, 0.7, 1), (2, 5.0, 1), (16, 3.2, 13), (16, 40.0, 1), (4, 2.0, 2)],
)
def test_default_workers_are_the_idle_cores(
    monkeypatch: pytest.MonkeyPatch, cpus: int, load: float, jobs: int
) -> None:
    monkeypatch.setattr(_plan.os, "getloadavg", lambda: (load, load, load))
    assert _plan._free_cores(cpus) == jobs


def test_default_workers_without_a_load_average(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> tuple[float, float, float]:
        raise OSError("no load average")

    monkeypatch.setattr(_plan.os, "getloadavg", missing)
    assert _plan._free_cores(4) == 4


def test_a_loaded_machine_ports_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many files, two cores, load 5: the default is one process; ``jobs=2`` stays 2."""
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text(f"import torch\nx{i} = torch.zeros(3)\n")
    monkeypatch.setattr(_plan, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(_plan.os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    template = _work.Chunk((), (), unsafe=True, diff=True, stdin=None)

    def jobs(given: int | None) -> int:
        select = (*PORT_SELECT, *PORT_REPORTS)
        run = _plan.plan([tmp_path], select, None, None, None, given, template, speed=True)
        return run.jobs

    monkeypatch.setattr(_plan.os, "getloadavg", lambda: (5.0, 5.0, 5.0))
    assert (jobs(None), jobs(2)) == (1, 2)
    monkeypatch.setattr(_plan.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert jobs(None) == 2


_EVERYWHERE = """
import torch
f = lambda t: t * 2
@(lambda fn: fn)
def g(x, k=lambda: 1, *, j=(lambda: 2)) -> (lambda: int):
    h = lambda y, z=lambda: 3: (lambda w: w)(y)
    return [lambda: i for i in range(3)], {k: lambda: v for k, v in {}.items()}
class C:
    key = staticmethod(lambda s: s)
    attr: (lambda: int) = lambda: 4
    def m(self, a: (lambda: int) = lambda: 5):
        return sorted(a, key=lambda e: e)
print(f"{(lambda: 6)()}", *(lambda: [7])())
"""


def test_the_structure_walk_records_every_lambda_and_name() -> None:
    """``followed_lambdas`` reads the port's structure walk's lambdas and names, not its own
    ``ast.walk``: the walk must hold every one (decorators, defaults, annotations, class
    bodies, comprehensions, f-strings), here and in the tutorial scripts."""
    import ast

    from torchport.check.port._facts import PortScope
    from torchport.check.port._structure import FileStructure

    scripts = Path(__file__).parents[1] / "port" / "scripts"
    texts = [_EVERYWHERE, *(p.read_text(encoding="utf-8") for p in sorted(scripts.glob("*.py")))]
    for text in texts:
        tree = ast.parse(text)
        walked = FileStructure(tree, PortScope(tree), walk=True)
        every = list(ast.walk(tree))
        lambdas = [id(n) for n in every if isinstance(n, ast.Lambda)]
        names = [id(n) for n in every if isinstance(n, ast.Name)]
        assert sorted(map(id, walked.lambdas)) == sorted(lambdas)
        assert sorted(id(n) for found in walked.names.values() for n in found) == sorted(names)
    assert len([n for n in ast.walk(ast.parse(_EVERYWHERE)) if isinstance(n, ast.Lambda)]) == 18

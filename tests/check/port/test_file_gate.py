"""The port's file gate (``port/_gate.py``) changes no port: with it and without it, the same.

The gate lets the port's rules skip a file that holds neither ``torch`` nor ``numpy`` as a
word, no star import, and an empty project view. The oracle is the port with the gate
turned off (every file walked, as before it): on generated single files that write torch
and numpy every way the text can hide them (a fullwidth identifier, an escape, split
constants, a star import) or not at all, and on generated projects of three modules
importing each other (cycles included: the project view's cuts must meet the same files
first), the port writes the same text and leaves the same findings, with the same
messages; and on a script that reaches torch's and numpy's names only through a compat
module of the project (a star import, its names, aliases of them, the module itself), stored
as UTF-8, with a BOM, under a latin-1 coding cookie, or as a notebook. Each project is
ported in two fresh copies, so no cache of the first port answers the second.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import torchport.check._engine as engine
from torchport.check import port_paths
from torchport.check._context import Context
from torchport.check.port import port_text
from torchport.check.port._gate import may_report

SCRIPTS = Path(__file__).parent / "scripts"

_WIDE = "".join(chr(ord(c) + 0xFEE0) for c in "torch")  # fullwidth: NFKC makes it `torch`
# Lines a file may start with: torch and numpy imported, hidden, or absent.
_HEADS = (
    "import torch\nfrom torch import nn\n",
    f"import {_WIDE}\n",  # NFKC: `import torch`, though the text never says "torch"
    "import numpy as np\n",
    "from helpers import *\n",
    "import os\n",
    "",
)
# Lines of a script: what the port rules report (a model, a tensor meeting it, a `.numpy()`
# of a device tensor, `torch.load`), and what none of them does.
_LINES = (
    "model = nn.Linear(4, 2)\nout = model(torch.zeros(3, 4))\n",
    f"net = {_WIDE}.nn.Linear(4, 2)\ny = net({_WIDE}.ones(2, 4))\n",
    f"state = {_WIDE}.load('m.pt')\n",
    "state = torch.load('m.pt')\n",
    "arr = data.cuda().numpy()\n",
    "arr = data.to(dev).numpy()\n",
    "arr = getattr(data.to(dev), 'nump\\x79')()\n",
    "name = 'tor' 'ch'\n",
    'name = "\\x74orch"\n',
    "values = [v * 2 for v in range(3)]\n",
    "for batch in loader:\n    out = model(batch)\n",
    "class Net(nn.Module):\n    def forward(self, x):\n        return x + torch.ones(2)\n",
    "def step(x):\n    return x.cpu()\n",
)


def _with_gate(on: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate as it is (``on``), or turned off: every file may report."""
    if not on:
        monkeypatch.setattr(engine, "port_may_report", lambda ctx: True)


def _ported(source: str, on: bool) -> tuple[str, list[tuple[int, int, str, str]]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _with_gate(on, monkeypatch)
        outcome = port_text(source, "<string>")
    left = [(f.line, f.col, f.code, f.message) for f in outcome.remaining]
    return outcome.source, left


@settings(max_examples=80, deadline=None)
@example([f"import {_WIDE}\n"], [f"state = {_WIDE}.load('m.pt')\n"])
@example([], ["arr = data.cuda().numpy()\n"])
@given(
    st.lists(st.sampled_from(_HEADS), max_size=2),
    st.lists(st.sampled_from(_LINES), min_size=1, max_size=4),
)
def test_the_gate_changes_no_port_of_a_file(heads: list[str], lines: list[str]) -> None:
    source = "".join(heads) + "".join(lines)
    assert _ported(source, True) == _ported(source, False)


def test_the_port_scripts_are_ported_the_same_through_the_gate() -> None:
    scripts = sorted(SCRIPTS.glob("*.py"))
    assert scripts
    for script in scripts:
        source = script.read_text(encoding="utf-8")
        assert _ported(source, True) == _ported(source, False), script.name


def _may(source: str) -> bool:
    import ast

    return may_report(Context(source, "<string>", ast.parse(source)))


def test_the_gate_keeps_every_file_that_may_name_torch_or_numpy() -> None:
    assert not _may("import os\nvalues = [v for v in range(3)]\n")
    assert not _may("arr = data.cuda()\nname = 'tor' + 'ch'\n")  # no constant is "torch"
    for kept in (
        "import torch\n",
        f"import {_WIDE}\n",
        "arr = data.cuda().numpy()\n",
        "name = 'tor' 'ch'\n",
        "name = '\\x74orch'\n",
        "from helpers import *\n",
    ):
        assert _may(kept), kept


# ------------------------------------------------------------------ projects

_MODULES = ("train", "model", "util")
# What a module of a project may hold: imports of the others (cycles too), torch or not.
_PARTS = {
    "torch": "import torch\nfrom torch import nn\n",
    "net": (
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n        return self.fc(x)\n"
    ),
    "plain": "class Net:\n    def __call__(self, x):\n        return x\n",
    "make": "def make(n):\n    return torch.ones(n, 4)\n",
    "size": "SIZE = 4\n",
    "use": "net = Net()\nout = net(data)\n",
    "use_made": "out = Net()(make(2))\n",
    "numpy": "arr = out.numpy()\n",
    # torch's names through another module's star import: `load` is `torch.load` (TP301)
    "star_torch": "from torch import *\n",
    "load": "state = load('m.pt')\n",
}
_IMPORTS = (
    "from {m} import Net\n",
    "from {m} import make\n",
    "from {m} import SIZE\n",
    "import {m}\n",
    "from {m} import *\n",
)


@st.composite
def _projects(draw: st.DrawFn) -> dict[str, str]:
    files = {}
    for name in _MODULES:
        others = [m for m in _MODULES if m != name]
        imports = draw(
            st.lists(st.tuples(st.sampled_from(_IMPORTS), st.sampled_from(others)), max_size=2)
        )
        parts = draw(st.lists(st.sampled_from(sorted(_PARTS)), max_size=3, unique=True))
        head = "".join(template.format(m=m) for template, m in imports)
        files[f"{name}.py"] = head + "".join(_PARTS[p] for p in parts)
    return files


def _port_copy(files: dict[str, str], where: Path, on: bool) -> tuple[list[str], list[str]]:
    encoded = {name: text.encode("utf-8") for name, text in files.items()}
    diffs, left, _errors = _port_tree(encoded, where, on)
    return diffs, left


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(  # a script without torch that builds the project's model: its view keeps it
    files={
        "model.py": _PARTS["torch"] + _PARTS["net"],
        "train.py": "from model import Net\n" + _PARTS["use"],
        "util.py": "",
    }
)
@example(  # `load` is torch's through a star import: the star import keeps the file
    files={"util.py": _PARTS["star_torch"], "train.py": "from util import *\n" + _PARTS["load"]}
)
@given(files=_projects())
def test_the_gate_changes_no_port_of_a_project(
    files: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("gate")
    try:
        assert _port_copy(files, root / "on", True) == _port_copy(files, root / "off", False)
    finally:
        shutil.rmtree(root)


def test_a_script_without_torch_that_imports_the_model_is_ported(tmp_path: Path) -> None:
    """The project view keeps a file the text alone would drop: it builds the model."""
    files = {
        "model.py": _PARTS["torch"] + _PARTS["net"],
        "train.py": "from model import Net\n" + _PARTS["use"],
        "notes.py": "SIZE = 4\n",
    }
    asked: list[tuple[str, bool]] = []

    def counted(ctx: Context) -> bool:
        found = may_report(ctx)
        asked.append((Path(ctx.path).name, found))
        return found

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(engine, "port_may_report", counted)
        on = _port_copy(files, tmp_path / "on", True)
    assert sorted(set(asked)) == [("model.py", True), ("notes.py", False), ("train.py", True)]
    assert on == _port_copy(files, tmp_path / "off", False)
    assert any("train.py" in d and ".to(device)" in d for d in on[0])


# ------------------------------------------------ compat modules, notebooks, encodings

# A compat module binds torch's and numpy's names under others; the script reaches them by a
# star import, by name, under an alias of its own or through the module, and writes neither
# `torch`, `numpy`, `load` nor `DataLoader` itself (the star import and the project view are
# all that can keep it).
_COMPAT = (
    "import torch as T\nfrom torch import load as L\nfrom torch import nn as N\n"
    "from torch.utils.data import DataLoader as DL\nimport numpy as A\n"
)
_NAMES = ("L", "T", "N", "DL", "A")
# how the script reaches them: (its import line, what each name is called there)
_REACH = {
    "star": ("from compat import *\n", {n: n for n in _NAMES}),
    "names": ("from compat import L, T, N, DL, A\n", {n: n for n in _NAMES}),
    "aliases": (
        "from compat import L as Q, T as U, N as M, DL as D, A as B\n",
        dict(zip(_NAMES, ("Q", "U", "M", "D", "B"), strict=True)),
    ),
    "module": ("import compat as c\n", {n: f"c.{n}" for n in _NAMES}),
}
# what each port rule would report, written with those names
_USES = (
    "state = {L}('m.pt')\n",  # TP301
    "net = {N}.Linear(4, 2)\nout = net({T}.zeros(3, 4))\n",  # TP501, TP503
    "loader = {DL}(data)\nfor x in loader:\n    y = net(x)\n",  # TP505, TP502
    "dev = {T}.device('cpu')\n",  # TP507
    "m = {A}.mean(net(x))\n",  # TP522
    "class Block({N}.Module):\n    def forward(self, x):\n        return x + {T}.ones(2)\n",
)
# how the script is stored: the text the port reads is the same, the bytes are not
_LATIN = "# -*- coding: latin-1 -*-\n# caf\xe9\n"


def _stored(kind: str, text: str) -> tuple[str, bytes]:
    """The script's file name and bytes: UTF-8, a BOM, a latin-1 cookie, or a notebook."""
    if kind == "bom":
        return "train.py", b"\xef\xbb\xbf" + text.encode()
    if kind == "latin-1":
        return "train.py", (_LATIN + text).encode("latin-1")
    if kind == "notebook":
        cells = [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
             "source": cell.splitlines(keepends=True)}
            for cell in text.split("\n\n") if cell
        ]  # fmt: skip
        notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        return "train.ipynb", json.dumps(notebook, indent=1).encode()
    return "train.py", text.encode()


def _port_bytes(files: dict[str, bytes], where: Path, on: bool) -> tuple[list[str], list[str]]:
    diffs, left, errors = _port_tree(files, where, on)
    return diffs, left + errors


def _port_tree(
    files: dict[str, bytes], where: Path, on: bool
) -> tuple[list[str], list[str], list[str]]:
    """Port a tree written from ``files`` with the gate on or off: the diffs, the findings
    left and the errors, with the tree's folder spelled ``<tree>``."""
    where.mkdir()
    for name, data in files.items():
        (where / name).write_bytes(data)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _with_gate(on, monkeypatch)
        result = port_paths([str(where)], diff=True, jobs=1)
    prefix = str(where)
    diffs = [f.diff.replace(prefix, "<tree>") for f in result.changed]
    left = [
        f"{f.path.replace(prefix, '<tree>')}:{f.line}:{f.col} {f.code} {f.message}"
        for f in result.remaining
    ]
    return diffs, left, [str(e).replace(prefix, "<tree>") for e in result.errors]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# gated (no word, an empty view): `Q` is `compat.Q` to the port's rules too, never torch.load
@example(reach="aliases", uses=[0], kind="bom", compat=True)
# kept by the star import (and a notebook's cell markers hold the word `torch`): ported
@example(reach="star", uses=[0, 3], kind="notebook", compat=True)
@given(
    reach=st.sampled_from(sorted(_REACH)),
    uses=st.lists(st.integers(0, len(_USES) - 1), min_size=1, max_size=3, unique=True),
    kind=st.sampled_from(("py", "bom", "latin-1", "notebook")),
    compat=st.booleans(),  # False: the compat module is missing (nothing to resolve)
)
def test_the_gate_changes_no_port_through_a_compat_module(
    reach: str, uses: list[int], kind: str, compat: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    head, names = _REACH[reach]
    text = head + "\n" + "\n".join(_USES[i].format(**names) for i in uses)
    name, data = _stored(kind, text)
    files = {name: data, **({"compat.py": _COMPAT.encode()} if compat else {})}
    root = tmp_path_factory.mktemp("compat")
    try:
        assert _port_bytes(files, root / "on", True) == _port_bytes(files, root / "off", False)
    finally:
        shutil.rmtree(root)

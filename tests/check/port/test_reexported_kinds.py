"""What a package re-exports, of every kind: the port must not depend on the spelling.

Branch x31aj made a model class re-exported by a package's ``__init__`` (``from pkg import
Net``) known where it is used; the other kinds the port knows of a project module were
read only where they are defined: ``from pkg import make_model`` (a factory returning the
model), a helper returning a CPU tensor, a module-level tensor or device, a function
returning a view of its argument. Re-exported, the factory's model and the module tensor
were silent (left on the CPU, "0 left"), and the helper's tensor reported (TP521) where the
direct import moved it (branch r31ak: ``port/_reexports.py``).

The invariant, metamorphic (it needs no run): the port of the script is the same whether it
imports a project name from the module defining it or from a package re-exporting it, the
same script text but for the import line, and the same findings left at the same lines.
Generated over the kind of the name, how the package binds it (a re-export, absolute or
relative, up a package (``..``), a star import with or without ``__all__``, an alias
``make_model = _make_model``, ``from . import model`` and ``make_model = model.make_model``,
an import in an ``except`` block, an import cycle), the depth of the chain of packages
re-exporting it, and the script's spelling (``from pkg import``, ``import pkg``, ``import
pkg as p``, ``from pkg import *``; the direct one ``from pkg.model import``, ``import
pkg.model as pkg`` ...). Where the package binds the name twice the view cannot resolve it:
a factory's call is reported (TP523) instead.

The oracle is the port of the direct spelling, which the simulated accelerator holds to
placed-or-reported: a few cases in the default run (one child), every one in the slow run
(``no_cuda_sim.in_a_child``: the original on the CPU, the port on ``sim``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import in_a_child
from tests.check.port.test_project_reexports import _CHILD, judged
from torchport.check import port_paths

_MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def make_model():
    return Net()


def make_mask():
    return torch.ones(2, 2)


def first_rows(source, i):
    return source[i : i + 2]


SCALE = torch.full((2, 2), 0.5)
DEV = torch.device("cpu")
build = make_model
"""
NAMES = ("Net", "make_model", "make_mask", "first_rows", "SCALE", "DEV", "build")

# (the names imported, the script's lines after the import; `{q}`: the names' prefix)
KINDS: dict[str, tuple[str, str]] = {
    "model class": ("Net", "net = {q}Net()\nx = torch.randn(2, 4)\nOUT.append(net(x))\n"),
    "factory": ("make_model", "net = {q}make_model()\nx = torch.randn(2, 4)\nOUT.append(net(x))\n"),
    "factory alias": ("build", "net = {q}build()\nx = torch.randn(2, 4)\nOUT.append(net(x))\n"),
    "tensor helper": (
        "Net, make_mask",
        "net = {q}Net()\nx = torch.randn(2, 4)\nOUT.append(net(x) * {q}make_mask())\n",
    ),
    "module tensor": (
        "Net, SCALE",
        "net = {q}Net()\nx = torch.randn(2, 4)\nOUT.append(net(x) * {q}SCALE)\n",
    ),
    "device": (
        "Net, DEV",
        "net = {q}Net().to({q}DEV)\nx = torch.randn(2, 4, device={q}DEV)\nOUT.append(net(x))\n",
    ),
    "view function": (
        "make_model, first_rows",
        "net = {q}make_model()\ndata = torch.randn(6, 4)\n"
        "OUT.append(net({q}first_rows(data, 1)))\n",
    ),
}


def _level(form: str, inner: str) -> str:
    """A package ``__init__`` binding every name of ``NAMES`` from its module ``inner``
    (relative ``.inner``; ``absolute``: its dotted name) as ``form`` says."""
    names = ", ".join(NAMES)
    rel = "." + inner.rpartition(".")[2]
    if form == "absolute":
        return f"from {inner} import {names}\n"
    if form in ("star", "star_all"):
        return f"from {rel} import *\n"
    if form == "alias":
        hidden = ", ".join(f"{n} as _{n}" for n in NAMES)
        return f"from {rel} import {hidden}\n\n" + "".join(f"{n} = _{n}\n" for n in NAMES)
    if form == "submodule":
        module = inner.rpartition(".")[2]
        return f"from . import {module}\n\n" + "".join(f"{n} = {module}.{n}\n" for n in NAMES)
    if form == "except":
        fallback = f"except ImportError:\n    from {rel} import {names}\n"
        return f"try:\n    from .fast import {names}\n{fallback}"
    return f"from {rel} import {names}\n"


FORMS = ("reexport", "absolute", "star", "star_all", "alias", "submodule", "except", "up", "cycle")


def project(form: str, depth: int) -> tuple[dict[str, str], str]:
    """The project's files (relative path -> text) and the dotted name of the module defining
    the names: ``pkg`` re-exports them from ``pkg.l1...l<depth>.model``, each package of the
    chain from the next as ``form`` says (``up``: through ``pkg.a.b``, ``from ..`` there)."""
    chain = ["pkg", *(f"l{i}" for i in range(1, depth + 1))]
    model = ".".join([*chain, "model"])
    files: dict[str, str] = {}
    body = _MODEL
    if form == "star_all":
        body = f"__all__ = {list(NAMES)!r}\n\n{_MODEL}"
    elif form == "cycle":  # the module imports the package re-exporting it
        body = f"import pkg\n{_MODEL}"
    files["/".join([*chain, "model.py"])] = body
    for i, package in enumerate(chain):
        inner = ".".join([*chain[: i + 1], chain[i + 1] if i + 1 < len(chain) else "model"])
        path = "/".join([*chain[: i + 1], "__init__.py"])
        if form == "up" and i == 0:
            files[path] = f"from .a.b import {', '.join(NAMES)}\n"
            files["pkg/a/__init__.py"] = ""
            files["pkg/a/b.py"] = f"from ..{inner.partition('.')[2]} import {', '.join(NAMES)}\n"
        else:
            files[path] = _level("reexport" if form in ("up", "cycle") else form, inner)
        del package
    return files, model


# The script's spelling: (the import of the re-exporting package, of the defining module,
# the names' prefix); `{names}`, `{model}` filled in
SPELLINGS: dict[str, tuple[str, str, str]] = {
    "from": ("from pkg import {names}", "from {model} import {names}", ""),
    "import": ("import pkg", "import {model} as pkg", "pkg."),
    "import_as": ("import pkg as p", "import {model} as p", "p."),
    "star": ("from pkg import *", "from {model} import *", ""),
}
CASES = [
    (kind, form, depth, spelling)
    for kind in KINDS
    for form in FORMS
    for depth in (0, 1, 2)
    for spelling in SPELLINGS
]


def _scripts(kind: str, spelling: str, model: str) -> tuple[str, str]:
    """The script importing the names from the package, and from the defining module."""
    names, body = KINDS[kind]
    package, direct, prefix = SPELLINGS[spelling]
    text = body.format(q=prefix)
    return (
        f"import torch\n{package.format(names=names)}\n\n{text}",
        f"import torch\n{direct.format(names=names, model=model)}\n\n{text}",
    )


def _write(root: Path, files: dict[str, str], script: str) -> None:
    for rel, text in {**files, "train.py": script}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def _port(root: Path, files: dict[str, str], script: str) -> tuple[str, list[str]]:
    """The ported script (its import line dropped) and the findings left, by file and line."""
    _write(root, files, script)
    result = port_paths([root], jobs=1)
    assert not result.errors, result.errors
    text = (root / "train.py").read_text(encoding="utf-8")
    imported = script.splitlines()[1]
    ported = "\n".join(line for line in text.splitlines() if line != imported)
    left = sorted(f"{Path(f.path).name}:{f.line} {f.code}" for f in result.remaining)
    return ported, left


def same_either_way(kind: str, form: str, depth: int, spelling: str) -> tuple[str, list[str]]:
    """The invariant (module docstring) on one case; the direct port."""
    files, model = project(form, depth)
    via_package, direct_script = _scripts(kind, spelling, model)
    with tempfile.TemporaryDirectory() as tmp:
        direct = _port(Path(tmp) / "direct", files, direct_script)
        reexported = _port(Path(tmp) / "reexported", files, via_package)
    assert direct[0] != direct_script.split("\n", 2)[2].rstrip("\n") or direct[1], (
        "the direct port did nothing"
    )
    assert reexported == direct
    return direct


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(KINDS)),
    st.sampled_from(FORMS),
    st.integers(0, 2),
    st.sampled_from(sorted(SPELLINGS)),
)
def test_a_reexported_name_is_ported_as_imported_where_defined(
    kind: str, form: str, depth: int, spelling: str
) -> None:
    same_either_way(kind, form, depth, spelling)


@pytest.mark.slow  # every kind, form, depth and spelling: ~670 ports
def test_every_kind_form_depth_and_spelling() -> None:
    for case in CASES:
        same_either_way(*case)


def placed_or_reported(cases: list[tuple[str, str, int, str]]) -> list[dict[str, Any]]:
    """The re-exported spelling's port of each case, run on the simulated accelerator against
    the original on the CPU (one child): what it left reported, or its outputs the original's
    values on ``sim``."""
    with tempfile.TemporaryDirectory() as tmp:
        pairs, records = [], []
        for i, (kind, form, depth, spelling) in enumerate(cases):
            files, model = project(form, depth)
            script = _scripts(kind, spelling, model)[0]
            original, ported = Path(tmp) / f"o{i}", Path(tmp) / f"p{i}"
            _write(original, files, script)
            _write(ported, files, script)
            result = port_paths([ported], jobs=1)
            assert not result.errors, result.errors
            left = [f"{Path(f.path).name}:{f.line} {f.code}" for f in result.remaining]
            records.append({"case": (kind, form, depth, spelling), "left": left})
            pairs.append((str(original), str(ported)))
        results = in_a_child(_CHILD, pairs)
    return judged(records, results)


# The cases run: a device the program makes on the CPU itself (`torch.device("cpu")`) is
# its choice, which the port keeps either way (the metamorphic test holds it to the direct)
RUN = [case for case in CASES if case[0] != "device"]


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(RUN), min_size=3, max_size=3, unique=True))
def test_a_reexported_name_is_placed_or_reported(cases: list[tuple[str, str, int, str]]) -> None:
    """See :func:`placed_or_reported` (one child)."""
    placed_or_reported(cases)


@pytest.mark.slow  # a child of every kind and form (depth 1, each spelling in turn)
def test_every_kind_and_form_is_placed_or_reported() -> None:
    spellings = sorted(SPELLINGS)
    cases = [
        (kind, form, 1, spellings[i % len(spellings)])
        for i, (kind, form) in enumerate((k, f) for k in KINDS for f in FORMS if k != "device")
    ]
    placed_or_reported(cases)


# How a package binds `make_model` that the view cannot resolve: the name bound twice there
UNSURE = {
    "twice": "from .model import make_model\n\nif False:\n    make_model = None\n",
    "twice_def": (
        "from .model import make_model\n\nif False:\n\n    def make_model():\n        return None\n"
    ),
    "twice_alias": "from .model import make_model, build\n\nif False:\n    make_model = build\n",
}


@pytest.mark.parametrize("layout", sorted(UNSURE))
@pytest.mark.parametrize("spelling", ["from", "import"])
def test_a_factory_the_package_binds_twice_is_reported(layout: str, spelling: str) -> None:
    """Which binding an importer gets, the code decides when it runs: the call is reported
    (TP523), not left on the CPU with "0 left" (the direct spelling is ported)."""
    files = {"pkg/__init__.py": UNSURE[layout], "pkg/model.py": _MODEL}
    via_package = _scripts("factory", spelling, "pkg.model")[0]
    with tempfile.TemporaryDirectory() as tmp:
        ported, left = _port(Path(tmp), files, via_package)
    assert left == ["train.py:4 TP523"], (ported, left)

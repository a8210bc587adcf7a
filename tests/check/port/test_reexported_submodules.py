"""A model class reached through a submodule its package re-exports (``pkg.model.Net()``).

The class (r31ak, "what a package re-exports, of every kind"; ``port/_reexports.py``): an
importer of a package gets what the package binds. Its near forms that held: the importer
imports the submodule itself (``import pkg.model`` then ``pkg.model.Net()``, or ``import
pkg.model as m``): the model and its input are moved. Silent on a7c33bbe (b31al, 0b4c999a):
the package binds the submodule (``pkg/__init__.py``: ``import pkg.model`` or ``from . import
model``) and the importer reaches it through the package (``import pkg`` then
``pkg.model.Net()``): the model and its input stayed on the CPU, "0 left".

x31an: placed. Importing a package's submodule in any form binds it on the package, so the
view of an importer of ``pkg`` binds ``pkg.model`` to the submodule's facts when the package's
``__init__`` loads it (``port/_attribute_modules.py``), and a module's own ``import utils``
likewise (``mod.utils``). The invariant, generated over how the ``__init__`` loads the
submodule (``import pkg.model``, ``from . import model [as m]``, ``from .model import Net``,
``from pkg.model import Net``, ``from pkg import model``, a nested package), how the script
imports the package (``import pkg``, ``import pkg as p``) and what it calls there (the model
class, a factory, a tensor function): on the simulated accelerator the port computes the
original's values with every output on ``sim:0``, or leaves a finding
(``no_cuda_sim.projects_placed_or_said``: the original on the CPU, the port on ``sim``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import port_paths

_MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def make():
    return Net()


def make_input(n):
    return torch.ones(n, 4) / 3
"""
_USE = "net = {call}()\nx = torch.randn(3, 4)\nOUT.append(net(x))\n"
HOLDS = {  # (pkg/__init__.py, the script's import, the call)
    "the submodule imported": ("", "import pkg.model", "pkg.model.Net"),
    "the submodule imported as": ("", "import pkg.model as m", "m.Net"),
}
LEFT = {
    "the package imports it": ("import pkg.model\n", "import pkg", "pkg.model.Net"),
    "the package imports it relatively": ("from . import model\n", "import pkg", "pkg.model.Net"),
}


def _placed_or_said(init: str, imported: str, call: str) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pkg").mkdir()
        (root / "pkg" / "__init__.py").write_text(init, encoding="utf-8")
        (root / "pkg" / "model.py").write_text(_MODEL, encoding="utf-8")
        script = f"import torch\n{imported}\n\n" + _USE.format(call=call)
        (root / "train.py").write_text(script, encoding="utf-8")
        result = port_paths([root], jobs=1)
        assert not result.errors, result.errors
        ported = (root / "train.py").read_text(encoding="utf-8")
    placed = f"{call}().to(device)" in ported and "torch.randn(3, 4).to(device)" in ported
    return placed or bool(result.remaining)


@pytest.mark.parametrize("case", sorted(HOLDS))
def test_a_submodule_the_script_imports_is_followed(case: str) -> None:
    assert _placed_or_said(*HOLDS[case])


@pytest.mark.parametrize("case", sorted(LEFT))
def test_a_submodule_the_package_binds_is_followed(case: str) -> None:
    assert _placed_or_said(*LEFT[case])


# How the package's __init__ loads its submodule `model` (the folder `{inner}`: `pkg`, or
# `pkg/nets` reached as `pkg.nets`)
_LOADS = (
    "import {dotted}.model\n",
    "from . import model\n",
    "from . import model as m\n",
    "from .model import Net\n",
    "from {dotted}.model import make\n",
    "from {dotted} import model\n",
)
_CALLS = (  # what the script calls: (the model, its input)
    ("{reach}.model.Net()", "torch.randn(3, 4)"),
    ("{reach}.model.make()", "torch.randn(3, 4)"),
    ("{reach}.model.Net()", "{reach}.model.make_input(3)"),
)


def _project(load: int, nested: bool, alias: bool, call: int) -> dict[str, str]:
    dotted = "pkg.nets" if nested else "pkg"
    folder = dotted.replace(".", "/")
    files = {
        f"{folder}/__init__.py": _LOADS[load].format(dotted=dotted),
        f"{folder}/model.py": _MODEL,
    }
    if nested:
        files["pkg/__init__.py"] = "from . import nets\n"
    reach = ("p" if alias else "pkg") + (".nets" if nested else "")
    made, given = (part.format(reach=reach) for part in _CALLS[call])
    imported = "import pkg as p" if alias else "import pkg"
    files["train.py"] = (
        f"import torch\n{imported}\n\nnet = {made}\nx = {given}\nOUT.append(net(x))\n"
    )
    return files


_PROJECTS = st.builds(
    _project,
    st.integers(0, len(_LOADS) - 1),
    st.booleans(),
    st.booleans(),
    st.integers(0, len(_CALLS) - 1),
)


def test_every_load_of_the_submodule_is_placed_in_the_port() -> None:
    """No child: the script's model and input are moved, nothing left (the run is below)."""
    for load in range(len(_LOADS)):
        for nested in (False, True):
            files = _project(load, nested, load % 2 == 0, load % len(_CALLS))
            with tempfile.TemporaryDirectory() as tmp:
                for rel, text in files.items():
                    (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
                    (Path(tmp) / rel).write_text(text, encoding="utf-8")
                result = port_paths([Path(tmp)], jobs=1)
                assert not result.errors and not result.remaining, (files, result.remaining)
                script = (Path(tmp) / "train.py").read_text(encoding="utf-8")
            assert script.count(".to(device)") == 2 or "device=device" in script, script


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PROJECTS, min_size=2, max_size=3))
def test_submodules_reached_through_the_package_are_placed_or_said(
    projects: list[dict[str, str]],
) -> None:
    """One child (one example of a few projects): the original on the CPU, the port on sim;
    every form in one child is the slow test below."""
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import projects_placed_or_said

    projects_placed_or_said(projects)


@pytest.mark.slow  # one child of every form
def test_every_form_is_placed_or_said() -> None:
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import projects_placed_or_said

    forms = [
        _project(load, nested, alias, call)
        for load in range(len(_LOADS))
        for nested in (False, True)
        for alias in (False, True)
        for call in range(len(_CALLS))
    ]
    projects_placed_or_said(forms)

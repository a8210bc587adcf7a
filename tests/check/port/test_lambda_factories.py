"""A model factory written as a lambda (``Net = lambda: _Net()``): placed as a ``def`` factory is.

Branch k31ak, breaking x31aj's class (a model behind a name the port must see through): with
``Net = lambda: _Net()`` and ``net = Net()`` the port moved the model inside the lambda (TP501)
and left the input ``net`` meets on the CPU, "0 left": the port stopped on any accelerator
(``Expected all tensors to be on the same device``), in the file defining the lambda and in a
script importing it from a project module. ``def Net(): return _Net()`` was placed: the near
form that holds. The invariant: a lambda bound by a plain ``name = lambda ...: body``, the
only binding of ``name`` in the file (module), is a function returning ``body`` to the
factories (``port/_lambda_factories.py`` in the file, ``_port_kinds._bound_lambdas`` for a
project module's importers).

The same class, other spellings (k31ak's strict xfail, each "0 left" with the model and its
input on the CPU on be62ecb8): ``functools.partial(_Net)``, a dict registry (``MODELS["net"]``),
a class attribute holding the class (``Models.Net``) and ``globals()["_Net"]``. Since x31al
each is a factory making a call of that class (``_lambda_factories.spelled_factories`` in the
file, ``_port_kinds._bound_spellings`` for a project module's importers), whose model is moved
where the name is called; generated over the spelling (``partial`` imported from
``functools``, a registry of two, a class attribute among others), in the file and imported
from a project module both ways. The spelling called in place (x31al's near forms, silent on
0b4c999a): a registry (a module-level dict literal of model classes) called by a computed key,
the most frequent real form (``MODELS[args.arch](...)``), and ``functools.partial(_Net)()``
are constructors (``_models.registries``); ``globals()[arch]()`` is said (TP523: which class a
computed name looks up, only a run tells).

The oracle shares no code with the port: the original runs on the CPU and the port on the
simulated accelerator (``no_cuda_sim``): a finding left, or the original's values on ``sim:0``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.check.port.no_cuda_sim import in_a_child, placed_or_said
from tests.check.port.test_project_reexports import _CHILD
from torchport.check import port_paths
from torchport.check.port import port_text

pytest.importorskip("torch")

_NET = """import functools
import torch
from torch import nn


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)

"""
_USE = "net = Net()\nx = torch.randn(2, 4)\nOUT.append(net(x))\n"
FACTORIES = {  # how the file binds `Net`, a callable making the model
    "a def (near form)": "def Net():\n    return _Net()\n",
    "a lambda": "Net = lambda: _Net()\n",
    "a lambda with a parameter": "Net = lambda n=4: _Net()\n",
}
LEFT = {  # the same class (k31ak's, "0 left" and the model on the CPU on be62ecb8): placed
    "functools.partial": "Net = functools.partial(_Net)\n",
    "a dict registry": "MODELS = {'net': _Net}\nNet = MODELS['net']\n",
    "a class attribute": "class Models:\n    Net = _Net\n\n\nNet = Models.Net\n",
    "globals()": "Net = globals()['_Net']\n",
}
SPELLED = {  # near forms of LEFT (x31al)
    "partial imported": "from functools import partial\n\nNet = partial(_Net)\n",
    "a registry of two": "MODELS = {'small': _Net, 'net': _Net}\nNet = MODELS['net']\n",
    "a class attribute among others": (
        "class Models:\n    depth = 2\n    Net = _Net\n\n\nNet = Models.Net\n"
    ),
}


def test_a_lambda_factory_in_the_file_is_moved_with_its_input() -> None:
    """No child: the model and the input it meets are both moved, nothing left."""
    for made in FACTORIES.values():
        ported = port_text(_NET + made + _USE)
        assert ported.remaining == [], made  # placed, nothing said
        assert "_Net().to(device)" in ported.source, ported.source
        assert "x = torch.randn(2, 4).to(device)" in ported.source, ported.source


@pytest.mark.slow  # one child of three programs
def test_a_lambda_factory_in_the_file_is_placed() -> None:
    placed_or_said([_NET + made + _USE for made in FACTORIES.values()])


def _project(made: str, spelling: str) -> dict[str, str]:
    imported, expr = {
        "from": ("from pkg.model import Net", "Net"),
        "module": ("import pkg.model as m", "m.Net"),
    }[spelling]
    use = _USE.replace("Net()", f"{expr}()")
    return {
        "pkg/__init__.py": "",
        "pkg/model.py": _NET + made,
        "train.py": f"import torch\n{imported}\n\n{use}",
    }


def _ported_projects(cases: list[tuple[str, str]]) -> list[tuple[list[str], dict[str, object]]]:
    """Each project ported in place (a copy kept as the original); the child's records."""
    with tempfile.TemporaryDirectory() as tmp:
        pairs, lefts = [], []
        for i, (made, spelling) in enumerate(cases):
            original, ported = Path(tmp) / f"o{i}", Path(tmp) / f"p{i}"
            for root in (original, ported):
                for rel, text in _project(made, spelling).items():
                    (root / rel).parent.mkdir(parents=True, exist_ok=True)
                    (root / rel).write_text(text, encoding="utf-8")
            result = port_paths([ported], jobs=1)
            assert not result.errors, (made, result.errors)
            lefts.append([f"{Path(f.path).name}:{f.line} {f.code}" for f in result.remaining])
            pairs.append((str(original), str(ported)))
        return list(zip(lefts, in_a_child(_CHILD, pairs), strict=True))


def _placed(record: dict[str, object]) -> bool:
    return record.get("now") is None and bool(record.get("same")) and record["devices"] == ["sim:0"]


def test_a_lambda_factory_imported_from_a_project_module_is_moved_with_its_input() -> None:
    """No child: the script's model and input are both moved, nothing left (the run below)."""
    with tempfile.TemporaryDirectory() as tmp:
        for i, made in enumerate(FACTORIES.values()):
            script = _ported_script(Path(tmp) / f"p{i}", made, "module")
            assert "m.Net().to(device)" in script and "4).to(device)" in script, script


def _ported_script(root: Path, made: str, spelling: str) -> str:
    """The project's ``train.py`` after ``port`` of ``root``, which must leave nothing."""
    for rel, text in _project(made, spelling).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    result = port_paths([root], jobs=1)
    assert not result.errors and not result.remaining, (made, result.remaining)
    return (root / "train.py").read_text(encoding="utf-8")


@pytest.mark.slow  # one child of six projects
def test_a_lambda_factory_imported_from_a_project_module_is_placed() -> None:
    cases = [(made, spelling) for made in FACTORIES.values() for spelling in ("from", "module")]
    for case, (left, record) in zip(cases, _ported_projects(cases), strict=True):
        assert record["cpu"] is None, (case, record)  # the original runs
        assert not left and _placed(record), (case, left, record)


_INPUT = "x = torch.randn(2, 4)\nOUT.append(net(x))\n"
CALLED = {  # the model made by calling the spelling itself (x31al): placed
    "a registry by a computed key": (
        "import sys\n\nMODELS = {'a': _Net, 'b': _Net}\nnet = MODELS[sys.argv[0][:0] + 'a']()\n"
    ),
    "a registry by a constant key": "MODELS = {'net': _Net}\nnet = MODELS['net']()\n",
    "functools.partial called": "net = functools.partial(_Net)()\n",
}
SAID = {  # which class a computed name looks up, only a run tells: TP523 at the call
    "globals() by a computed key": "arch = '_N' + 'et'\nnet = globals()[arch]()\n",
}


def test_a_spelling_called_in_place_is_placed_or_said() -> None:
    """No child: a registry (a module-level dict literal of model classes, bound once, no
    item stored into it) called by any key, or ``functools.partial(_Net)()``, is a model
    moved where it is made, its input too; ``globals()[arch]()`` is said (the run is slow)."""
    for made in CALLED.values():
        ported = port_text(_NET + made + _INPUT)
        assert ported.remaining == [], (made, ported.remaining)
        assert "().to(device)\n" in ported.source, ported.source
        assert "x = torch.randn(2, 4).to(device)" in ported.source, ported.source
    for made in SAID.values():
        ported = port_text(_NET + made + _INPUT)
        line = 1 + ported.source.splitlines().index("net = globals()[arch]()")
        assert [(f.line, f.code) for f in ported.remaining] == [(line, "TP523")], ported


@pytest.mark.slow  # one child of four programs (each silent on 0b4c999a)
def test_a_spelling_called_in_place_runs_placed_or_said() -> None:
    placed_or_said([_NET + made + _INPUT for made in [*CALLED.values(), *SAID.values()]])


def test_other_factory_spellings_are_moved_with_their_input() -> None:
    """No child: in the file and in a project module, the model and its input are both
    moved where the name is called, nothing left (the runs are below, slow)."""
    for made in [*LEFT.values(), *SPELLED.values()]:
        ported = port_text(_NET + made + _USE)
        assert ported.remaining == [], (made, ported.remaining)
        assert "net = Net().to(device)" in ported.source, ported.source
        assert "x = torch.randn(2, 4).to(device)" in ported.source, ported.source
    with tempfile.TemporaryDirectory() as tmp:
        for i, made in enumerate(LEFT.values()):
            script = _ported_script(Path(tmp) / f"p{i}", made, "from")
            assert "net = Net().to(device)" in script and "4).to(device)" in script, script


@pytest.mark.slow  # one child of seven programs (LEFT's four silent on be62ecb8)
def test_other_factory_spellings_are_placed_or_said() -> None:
    placed_or_said([_NET + made + _USE for made in [*LEFT.values(), *SPELLED.values()]])


@pytest.mark.slow  # one child of fourteen projects
def test_other_factory_spellings_imported_from_a_project_module_are_placed() -> None:
    spellings = [*LEFT.values(), *SPELLED.values()]
    cases = [(made, spelling) for made in spellings for spelling in ("from", "module")]
    for case, (left, record) in zip(cases, _ported_projects(cases), strict=True):
        assert record["cpu"] is None, (case, record)  # the original runs
        assert not left and _placed(record), (case, left, record)

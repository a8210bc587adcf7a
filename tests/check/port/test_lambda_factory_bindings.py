"""A lambda model factory bound by other spellings than ``Net = lambda: _Net()``.

The class (k31ak, ``port/_lambda_factories.py`` in the file, ``_port_kinds._bound_lambdas``
for a project module's importers): the port moves the model inside a lambda (TP501), so the
lambda must be known as a factory for the input its model meets to be moved too. Its near
form that held on the base: a plain ``Net = lambda: _Net()``. Silent on the base (b31al,
0b4c999a): the annotated binding ``Net: Callable[[], nn.Module] = lambda: _Net()``: the model
moved inside the lambda, its input left on the CPU, "0 left" (on ``sim``: ``mat1 is on cpu,
different from other tensors on sim:0``), in the file and through a project module's
importer. Now an annotated binding is offered as the plain one is.

Left (strict xfail, slow): a walrus binding, a tuple binding (``Net, scale = lambda: _Net(),
2.0``), a conditional of two lambdas, a lambda returned by a lambda (``outer = lambda:
(lambda: _Net())``; ``Net = outer()``): the same stop on ``sim``, "0 left".

The oracle shares no code with the port: the original on the CPU, the port on the simulated
accelerator (``no_cuda_sim.placed_or_said``); the child-free tests read the ported text.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import port_paths
from torchport.check.port import port_text

_NET = """from typing import Callable

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
ANNOTATED = {
    "annotated": "Net: Callable[[], nn.Module] = lambda: _Net()\n",
    "annotated by a string": "Net: 'Callable[[], _Net]' = lambda: _Net()\n",
}
LEFT = {
    "a walrus": "if (Net := lambda: _Net()):\n    pass\n",
    "a tuple": "Net, scale = lambda: _Net(), 2.0\n",
    "a conditional": "big = False\nNet = (lambda: _Net()) if big else (lambda: _Net())\n",
    "a lambda's lambda": "outer = lambda: (lambda: _Net())\nNet = outer()\n",
}


@pytest.mark.parametrize("binding", sorted(ANNOTATED))
def test_an_annotated_lambda_factory_is_moved_with_its_input(binding: str) -> None:
    ported = port_text(_NET + ANNOTATED[binding] + _USE)
    assert ported.remaining == [], ported.remaining
    assert "_Net().to(device)" in ported.source, ported.source
    assert "x = torch.randn(2, 4).to(device)" in ported.source, ported.source


@pytest.mark.parametrize("binding", sorted(ANNOTATED))
def test_an_annotated_lambda_factory_of_a_project_module_is_moved_with_its_input(
    binding: str,
) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/model.py": _NET + ANNOTATED[binding],
        "train.py": "import torch\nimport pkg.model as m\n\n" + _USE.replace("Net()", "m.Net()"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).write_text(text, encoding="utf-8")
        result = port_paths([Path(tmp)], jobs=1)
        assert not result.errors and not result.remaining, result.remaining
        script = (Path(tmp) / "train.py").read_text(encoding="utf-8")
    assert "m.Net().to(device)" in script and "4).to(device)" in script, script


@pytest.mark.slow  # one child of two programs
def test_an_annotated_lambda_factory_is_placed() -> None:
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said([_NET + made + _USE for made in ANNOTATED.values()])


@pytest.mark.slow  # one child of four programs
def test_other_lambda_bindings_are_placed_or_said() -> None:
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said([_NET + made + _USE for made in LEFT.values()])


# x31an: the left spellings placed (``_lambda_factories.bound_lambdas``), in the file and in a
# project module (``_port_kinds._bound_lambdas``). Generated: each spelling of the binding,
# the factory called with no argument or one, at module level or in a function.
_MADE = "_Net()"
SPELLINGS = {
    "plain": "Net = lambda *a: MADE\n",
    "annotated": "Net: Callable[..., nn.Module] = lambda *a: MADE\n",
    "a walrus in an if": "if (Net := lambda *a: MADE):\n    pass\n",
    "a walrus in an expression": "(Net := lambda *a: MADE)\n",
    "a tuple, first": "Net, scale = lambda *a: MADE, 2.0\n",
    "a tuple, second": "scale, Net = 2.0, lambda *a: MADE\n",
    "a list": "[Net, scale] = [lambda *a: MADE, 2.0]\n",
    "a conditional": "big = False\nNet = (lambda *a: MADE) if big else (lambda *a: MADE)\n",
    "a lambda's lambda": "outer = lambda: (lambda *a: MADE)\nNet = outer()\n",
    "a lambda's conditional": "outer = lambda: (lambda *a: MADE) if True else (lambda *a: MADE)\n"
    "Net = outer()\n",
}
_CALLED = ("Net()", "Net(3)")


def _bound_program(spelling: str, called: str, in_function: bool) -> str:
    binding = SPELLINGS[spelling].replace("MADE", _MADE)
    use = _USE.replace("Net()", called)
    if in_function:
        body = binding + use
        return (
            _NET
            + "def main():\n"
            + "".join(f"    {line}\n" for line in body.splitlines())[:-1]
            + "\n\nmain()\n"
        )
    return _NET + binding + use


_BOUND = st.builds(
    _bound_program,
    st.sampled_from(sorted(SPELLINGS)),
    st.sampled_from(_CALLED),
    st.booleans(),
)


def test_every_spelling_is_placed_in_the_port() -> None:
    """No child: nothing left, the model moved inside the lambda and the input moved."""
    for spelling in sorted(SPELLINGS):
        for in_function in (False, True):
            ported = port_text(_bound_program(spelling, "Net()", in_function))
            assert ported.remaining == [], (spelling, in_function, ported.remaining)
            assert "_Net().to(device)" in ported.source, ported.source
            assert "torch.randn(2, 4).to(device)" in ported.source, ported.source


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_BOUND, min_size=2, max_size=3))
def test_lambda_bindings_are_placed_or_said(programs: list[str]) -> None:
    """One child (one example of a few programs); every form in one child is slow, below."""
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said(programs)


@pytest.mark.slow  # one child of every form
def test_every_lambda_binding_is_placed_or_said() -> None:
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said(
        [_bound_program(s, c, f) for s in sorted(SPELLINGS) for c in _CALLED for f in (False, True)]
    )


def test_every_spelling_of_a_project_module_is_placed() -> None:
    """One project, a module per spelling (one port): each input the importer hands its
    model is moved, nothing left."""
    names = sorted(SPELLINGS)
    files = {"pkg/__init__.py": ""}
    script = ["import torch"]
    uses = []
    for index, spelling in enumerate(names):
        files[f"pkg/model{index}.py"] = _NET + SPELLINGS[spelling].replace("MADE", _MADE)
        script.append(f"import pkg.model{index} as m{index}")
        uses.append(f"net{index} = m{index}.Net()\nx{index} = torch.randn(2, 4)\n")
        uses.append(f"OUT.append(net{index}(x{index}))\n")
    files["train.py"] = "\n".join(script) + "\n\n" + "".join(uses)
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).write_text(text, encoding="utf-8")
        result = port_paths([Path(tmp)], jobs=1)
        assert not result.errors and not result.remaining, result.remaining
        ported = (Path(tmp) / "train.py").read_text(encoding="utf-8")
    for index, spelling in enumerate(names):
        assert f"x{index} = torch.randn(2, 4).to(device)" in ported, (spelling, ported)

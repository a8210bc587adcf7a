"""Model classes kept in a registry the file fills, read back by key: placed or said.

Silent on a7c33bbe (x31an): ``@register("net") class Net(nn.Module)`` with a decorator that
stores the class into ``REGISTRY``, then ``model = REGISTRY[name]()`` (or ``.get``, a class
read into a name, a ``build(name)`` helper): the port moved nothing and said nothing ("0 left",
the model and its input on the CPU). So was a model class stored by ``MODELS["net"] = Net`` or
``MODELS.update(net=Net)``; and ``Net = MODELS["net"]`` of a literal the file changes after
(``MODELS.update(net=Other)``) or ``globals()["_Net"]`` after ``globals()["_Net"] = Other``
moved the literal's class (q31am's strict xfail: a plain class's ``.to``, "0 left").

Now TP523 says each read of such a registry (``port/_registries.py``): which class it gives,
only a run tells; the literal's class is read only where nothing changes the literal or
``globals()`` (``_lambda_factories.changed_after``). The invariant, generated over how the
registry is filled and read, with a second class registered or not (a model or a plain
class): on the simulated accelerator the port computes the original's values on ``sim:0``,
or leaves a finding (``no_cuda_sim.placed_or_said``: the original on the CPU, the port on
``sim``).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

from tests.check.port.no_cuda_sim import placed_or_said
from torchport.check.port import port_text

_HEAD = """import torch
from torch import nn


class Other(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4, 2))

    def forward(self, x):
        return x @ self.w


class Plain:
    def __init__(self):
        self.w = torch.ones(4, 2)

    def __call__(self, x):
        return x @ self.w


"""
_NET = """class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


"""
_DECORATOR = (
    "REGISTRY = {}\n\n\ndef register(name):\n    def deco(cls):\n        REGISTRY[name] = cls\n"
    "        return cls\n    return deco\n\n\n"
)
_BARE = (
    "REGISTRY = {}\n\n\ndef register(cls):\n    REGISTRY[cls.__name__.lower()] = cls\n"
    "    return cls\n\n\n"
)
FILLS = {  # how `REGISTRY["net"]` comes to hold a class (SECOND: another class, or a plain one)
    "a decorator with a key": _DECORATOR + '@register("net")\n' + _NET,
    "a bare decorator": _BARE + "@register\n" + _NET,
    "an item stored": _NET + "REGISTRY = {}\nREGISTRY['net'] = Net\n",
    "update": _NET + "REGISTRY = {}\nREGISTRY.update(net=Net)\n",
    "a literal updated": _NET + "REGISTRY = {'net': Net}\nREGISTRY.update(net=SECOND)\n",
    "a literal's item stored": _NET + "REGISTRY = {'net': Net}\nREGISTRY['net'] = SECOND\n",
}
READS = {  # how the script makes its model from the registry
    "a key": "model = REGISTRY['net']()\n",
    "a key in a name": "name = 'net'\nmodel = REGISTRY[name]()\n",
    "get": "model = REGISTRY.get('net')()\n",
    "a class read": "cls = REGISTRY['net']\nmodel = cls()\n",
    "a bound class": "Made = REGISTRY['net']\nmodel = Made()\n",
    "a builder": "def build(name):\n    return REGISTRY[name]()\n\n\nmodel = build('net')\n",
}
_TAIL = "x = torch.randn(2, 4)\nOUT.append(model(x))\n"
# q31am's: the key `globals()` gives rebound before it is read
_GLOBALS = _NET + "globals()['Net'] = SECOND\nMade = globals()['Net']\nmodel = Made()\n"


def _program(fill: str, read: str, second: str) -> str:
    body = _GLOBALS if fill == "globals" else FILLS[fill] + READS[read]
    return _HEAD + body.replace("SECOND", second) + _TAIL


_FILLS = [*FILLS, "globals"]
_PROGRAMS = st.builds(
    _program,
    st.sampled_from(_FILLS),
    st.sampled_from(sorted(READS)),
    st.sampled_from(("Other", "Plain")),
)


def test_every_registry_read_is_said() -> None:
    """No child: each generated form leaves TP523 at the read, or ports with nothing left
    where the port follows it (the run is below)."""
    for fill in _FILLS:
        for read in sorted(READS):
            ported = port_text(_program(fill, read, "Other"))
            assert not ported.failures, ported.failures
            assert {f.code for f in ported.remaining} == {"TP523"}, (fill, read, ported.source)


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PROGRAMS, min_size=2, max_size=3))
def test_registry_reads_are_placed_or_said(programs: list[str]) -> None:
    """One child (one example of a few programs); every form in one child is slow, below."""
    placed_or_said(programs)


@pytest.mark.slow  # one child of every form
def test_every_registry_form_is_placed_or_said() -> None:
    placed_or_said(
        [_program(f, r, s) for f in _FILLS for r in sorted(READS) for s in ("Other", "Plain")]
    )

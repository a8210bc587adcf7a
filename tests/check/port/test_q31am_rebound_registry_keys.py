"""A factory spelling whose key is rebound to a class that is no model: ``.to(device)`` on it.

Class: x31al's factory spellings (``_lambda_factories.spelled_factories``: a dict literal's
item, ``globals()["_Net"]``). Broken by q31am, "0 left" and the port stopped on ``sim``
(``'_Plain' object has no attribute 'to'``) on ce9723d1 (strict xfail, one child each): the
registry's key rebound by ``MODELS.update(net=_Plain)``, or ``globals()["_Net"] = _Plain``,
before ``Net = MODELS["net"]`` / ``Net = globals()["_Net"]``: the port reads the literal's
class and moves what ``Net()`` makes. The near form that holds: ``MODELS["net"] = _Plain``
(an item stored: no factory, left on the CPU with the original's values; a stored model class,
``MODELS["net"] = _Net`` over ``_Plain``, is likewise left on the CPU, a miss, not a wrong
value).

x31an: said. A literal the file changes after (``.update``, an item stored, handed on) is no
longer read as its class (``_models.changed_after``), nor ``globals()[k]`` where the file
writes ``globals()``; TP523 says each read of such a registry (``port/_registries.py``).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from tests.check.port.no_cuda_sim import ports_on_sim_or_stops
from torchport.check.port import port_text

_NET = (
    "import torch\nfrom torch import nn\n\n\nclass _Net(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
    "    def forward(self, x):\n        return self.fc(x)\n\n\n"
    "class _Plain:\n    def __init__(self):\n        self.w = torch.ones(4, 2)\n\n"
    "    def __call__(self, x):\n        return x @ self.w\n\n\n"
)
_USE = "net = Net()\nx = torch.randn(2, 4)\nOUT.append(net(x))\n"
REBOUND = {
    "update": "MODELS = {'net': _Net}\nMODELS.update(net=_Plain)\nNet = MODELS['net']\n",
    "globals": "globals()['_Net'] = _Plain\nNet = globals()['_Net']\n",
}


def _said_or_right(spelling: str) -> None:
    source = _NET + spelling + _USE
    ported = port_text(source)
    (run,) = ports_on_sim_or_stops([(source, ported.source)])
    assert ported.remaining or run.get("same"), (run, ported.source)


def test_an_item_stored_is_no_factory() -> None:
    _said_or_right("MODELS = {'net': _Net}\nMODELS['net'] = _Plain\nNet = MODELS['net']\n")


@pytest.mark.parametrize("name", sorted(REBOUND))
@pytest.mark.slow  # (a child per case)
def test_a_rebound_key_is_said_or_left(name: str) -> None:
    _said_or_right(REBOUND[name])

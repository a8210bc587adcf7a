"""A star of a mixed literal list, and a pair whose positions swap: a host tensor left on the CPU.

Classes: x31al's stars handed on (``port/_handed_on.py``) and pairs from literal rows and own
tuple returns (``_iterated.positions_taken``). Broken by q31am, each "0 left" and the port
stopped on ``sim`` (``Expected all tensors to be on the same device``) on ce9723d1 (strict
xfail, one child each):

- ``g(*[torch.ones(2), y])`` with ``y`` a device value (``def g(a, b)`` or ``def g(*ts)``): the
  literal list's host item is not moved; the near forms that hold: the list bound to a name
  first (``args = [torch.ones(2), y]; g(*args)``), a ``**`` dict, a star handed on by
  ``def f(*a): return g(*a)``;
- ``for t, w in [(y, c), (c, y)]`` and ``zip([y, c], [c, y])``: each position takes a device
  value in one row and the host ``c`` in the other, ``c`` left on the CPU; an own function
  returning ``(y, c)`` on one branch and ``(c, y)`` on the other likewise. The near forms that
  hold: ``t, w = (y, c) if flag else (c, y)``, the swap over an ``if`` statement, ``t, w = w, t``.

The oracle (``no_cuda_sim``, apart from the port): the original on the CPU, the port on the
simulated accelerator: a finding left, or the original's values with every output on ``sim:0``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from tests.check.port.no_cuda_sim import placed_or_said

_HEAD = (
    "import torch\nimport torch.nn as nn\n\nmodel = nn.Linear(3, 2)\n"
    "y = model(torch.randn(2, 3))\nc = torch.ones(2, 2)\n\n"
)
_G = "def g(a, b):\n    return a + b\n\n\n"
HOLDING = {
    "a named list": _G + "args = [torch.ones(2), y]\nOUT.append(g(*args))\n",
    "a ** dict": _G + "kw = {'a': torch.ones(2), 'b': y}\nOUT.append(g(**kw))\n",
    "handed on": _G + "def f(*a):\n    return g(*a)\n\n\nOUT.append(f(torch.ones(2), y))\n",
    "a conditional swap": "flag = False\nt, w = (y, c) if flag else (c, y)\nOUT.append(t @ w)\n",
    "an if swap": "if False:\n    t, w = y, c\nelse:\n    w, t = y, c\nOUT.append(t @ w)\n",
    "swapped in place": "t, w = y, c\nt, w = w, t\nOUT.append(t @ w)\n",
}
LEFT = {
    "a literal list": _G + "OUT.append(g(*[torch.ones(2), y]))\n",
    "a literal list to *ts": "def g(*ts):\n    return ts[0] * ts[1]\n\n\n"
    "OUT.append(g(*[y, torch.ones(2)]))\n",
    "literal rows swapped": "for t, w in [(y, c), (c, y)]:\n    OUT.append(t @ w)\n",
    "zip swapped": "for t, w in zip([y, c], [c, y]):\n    OUT.append(t @ w)\n",
    "own returns swapped": "def make(flag):\n    if flag:\n        return y, c\n"
    "    return c, y\n\n\nt, w = make(False)\nOUT.append(t @ w)\n",
}


def test_the_near_forms_are_placed() -> None:
    placed_or_said([_HEAD + s for s in HOLDING.values()])


@pytest.mark.parametrize("name", sorted(LEFT))
@pytest.mark.slow  # (a child per case)
@pytest.mark.xfail(strict=True, reason="q31am: 0 left, the port stops on the device")
def test_a_host_tensor_in_a_mixed_star_or_a_swapped_pair(name: str) -> None:
    placed_or_said([_HEAD + LEFT[name]])

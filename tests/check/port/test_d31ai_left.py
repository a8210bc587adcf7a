"""Port classes branch d31ai found silent and left (its RESULTS section, "Left"), closed by g31ak.

Each program here meets a value the model made in a form the port's flow does not follow yet:
the port says "0 left", and the ported program mixes devices on the accelerator. The oracle is
``no_cuda_sim.placed_or_said``: the original on the CPU against the port on ``sim`` (each port
leaves a finding, or computes the original's values with every printed tensor on ``sim:0``).
One ``sim`` child a test, in the slow run; the ``for`` statement is the near form that held.
Branch g31ak closed the class (every iteration and unpacking form, ``_iterated``): its table is
``test_iterated_items``.
"""

from __future__ import annotations

import pytest

from tests.check.port.no_cuda_sim import placed_or_said

_HEAD = "import torch\nfrom torch import nn\n\nnet = nn.Linear(2, 2)\nx = torch.randn(3, 2)\n"

# a comprehension or loop over a tuple or list of the model's outputs, with a host tensor made
# beside each item
LEFT = {
    # (`print(*...)`: the oracle's `print` hands on the tensors among its arguments, not a list's)
    "list comprehension": "ts = (net(x), net(x) * 2)\nprint(*[t * torch.ones(2) for t in ts])\n",
    "generator in sum": "ts = [net(x), net(x)]\nprint(sum(t * torch.ones(2) for t in ts))\n",
}
# the near form that holds: a `for` statement over the same list
NEAR = "ts = [net(x), net(x)]\nfor t in ts:\n    print(t + torch.zeros(2))\n"


@pytest.mark.slow
def test_a_host_tensor_met_in_a_for_statement_over_device_values_is_placed_or_said() -> None:
    placed_or_said([_HEAD + NEAR], printed=True)


@pytest.mark.slow  # (a strict xfail until g31ak: the whole class is test_iterated_items)
def test_a_host_tensor_met_in_a_loop_over_device_values_is_placed_or_said() -> None:
    placed_or_said([_HEAD + body for body in LEFT.values()], printed=True)

"""Left by n31al (found while judging Lightning's `fabric.py` TP523s): a parameter rebound by a
comprehension over itself, ``def run(*xs): xs = [model(x) for x in xs]``.

The flow reads a name whatever binding a read sees (flow-insensitive): ``xs`` is a device
value (the list of the model's outputs), so the comprehension's ``x`` is taken for an item of
one, and ``model(x)`` for a forward of a device value. The parameter's own binding (the
caller's CPU tensors) is asked nowhere: the port says "0 left" and the port stops on the
simulated accelerator at ``model(x)`` ("mat1 is on cpu", checked with ``no_cuda_sim`` by hand
at n31al's base 0b4c999a and its head). A module-level ``xs = [...]`` then ``xs = [model(x) for
x in xs]`` is placed (the assignments' invariant moves the first list's items); a parameter has
no such invariant. The same cause gives Lightning's `fabric.py:468/474` TP523 noise
(``dataloaders = [self._setup_dataloader(d) for d in dataloaders]``, a `*dataloaders`
parameter): ``d`` is taken for a device value and what meets it there is reported.

Was a strict xfail, port only (no child): the port must leave a finding or move the arguments.
Fixed by n31an: the read of ``xs`` in the comprehension sees the parameter
(``Reaching.reaching_parameters``: no other binding before the read's statement; the
comprehension's items are not device values by the name alone, and the origins follow the
parameter), and a ``*xs`` parameter's
origins are the arguments past the named ones; the port now reports the caller's tensors
(TP523). ``test_n31an_rebound_parameters`` runs these on ``sim``.
"""

from __future__ import annotations

import pytest

from torchport.check.port import port_text

_HEAD = "import torch\n\nmodel = torch.nn.Linear(4, 2)\n\n"
PROGRAMS = {
    "a vararg": "def run(*xs):\n    xs = [model(x) for x in xs]\n    return xs\n\n"
    "OUT = run(torch.ones(3, 4), torch.zeros(3, 4))\n",
    "a list parameter, in a loop": "def run(xs):\n    for _ in range(1):\n"
    "        xs = [model(x) for x in xs]\n    return xs\n\n"
    "OUT = run([torch.ones(3, 4), torch.zeros(3, 4)])\n",
}


@pytest.mark.parametrize("form", sorted(PROGRAMS))
def test_a_parameter_rebound_by_a_comprehension_over_itself_is_placed_or_said(form: str) -> None:
    ported = port_text(_HEAD + PROGRAMS[form])
    moved = "torch.ones(3, 4, device=device)" in ported.source
    assert ported.remaining or moved, ported.source

"""A tensor sharing an array's memory, written where the walk did not look (b31an).

The class (``port/_shared_memory``, issue 31): ``t = torch.from_numpy(a)`` is moved only where
no write to it can reach ``a``, which the program reads again; a place the walk cannot follow
counts as a write. b31an's silent forms (the port moved the tensor, "0 left", and the write no
longer reached ``a``): the tensor kept by a class of the file (``H(t)``, ``h.set(t)`` then
``self.buf.mul_`` in another method, a class body's ``x = t``), by a callable that holds what
it is handed (``setattr``, ``functools.partial``, ``getattr(t, "mul_")``, ``operator.iadd``,
``nn.Parameter``, ``register_buffer``, ``contextlib.nullcontext``), handed to a lambda, returned
by the file's function (``def ident(x): return x``), a comprehension's item, ``enumerate(t)``'s
rows, a walrus's name. The noise half: a list handed to other code (``model([t, u])``) reads it
as ``model(t)`` does, and a list literal iterated by a loop is followed to its items.

The oracle is apart from the port: the original on the CPU against the port on the simulated
accelerator (``no_cuda_sim.placed_or_said``: a finding left, or the original's values on
``sim:0``).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check.port import port_text

_HEAD = """import contextlib
import functools
import operator

import numpy as np
import torch
import torch.nn as nn

a = np.ones((3, 4), dtype=np.float32)
t = torch.from_numpy(a)
"""
_TAIL = """
model = nn.Linear(4, 2)
OUT.append(model(t) + float(a.sum()))
"""
# Each writes `t` (so `a`) where the walk did not look before b31an.
WRITES = {
    "a class's method": "class H:\n    def __init__(self, x):\n        self.x = x\n"
    "    def bump(self):\n        self.x[0, 0] = 9.0\n\nH(t).bump()",
    "an attribute set in one method, written in another": "class H:\n    def set(self, x):\n"
    "        self.buf = x\n    def bump(self):\n        self.buf.mul_(2.0)\n\n"
    "h = H()\nh.set(t)\nh.bump()",
    "a class body": "class C:\n    x = t\n\nC.x[0, 0] = 9.0",
    "a lambda": "f = lambda x: x.mul_(2.0)\nf(t)",
    "setattr": "class B:\n    pass\n\nb = B()\nsetattr(b, 'x', t)\nb.x[0, 0] = 9.0",
    "functools.partial": "def bump(x):\n    x[0, 0] = 9.0\n\nfunctools.partial(bump, t)()",
    "getattr": "getattr(t, 'mul_')(2.0)",
    "operator.iadd": "operator.iadd(t, 1.0)",
    "operator.setitem": "operator.setitem(t, (0, 0), 9.0)",
    "nn.Parameter": "p = nn.Parameter(t, requires_grad=False)\np.data.mul_(2.0)",
    "register_buffer": "m = nn.Module()\nm.register_buffer('b', t)\nm.b.mul_(2.0)",
    "contextlib.nullcontext": "with contextlib.nullcontext(t) as x:\n    x[0, 0] = 9.0",
    "returned by the file's function": "def ident(x):\n    return x\n\nu = ident(t)\nu[0, 0] = 9.0",
    "returned, unnamed": "def ident(x):\n    return x\n\nident(t)[0, 0] = 9.0",
    "a list comprehension": "xs = [t for _ in range(1)]\nxs[0][0, 0] = 9.0",
    "a dict comprehension": "d = {k: t for k in 'x'}\nd['x'][0, 0] = 9.0",
    "a comprehension's rows": "[x.mul_(2.0) for x in t]",
    "enumerate's rows": "for i, x in enumerate(t):\n    x[0] = 9.0",
    "a walrus": "(u := t)[0, 0] = 9.0",
    "a list to map": "def bump(x):\n    x[0, 0] = 9.0\n\nlist(map(bump, [t]))",
    "a list to zip": "for x, y in zip([t], [1]):\n    x[0, 0] = 9.0",
    "a list literal looped": "for x in [t]:\n    x[0] = 9.0",
}
# Each only reads `t`: moved, nothing said.
READS = {
    "TensorDataset": "from torch.utils.data import DataLoader, TensorDataset\n"
    "for xb, yb in DataLoader(TensorDataset(t, torch.zeros(3)), batch_size=2):\n"
    "    print(xb.shape)",
    "a list to a module": "class Two(nn.Module):\n    def forward(self, xs):\n"
    "        return xs[0] + xs[1]\n\nprint(Two()([t, t]).shape)",
    "a list to a builtin": "print(max([float(t.sum()), 1.0]))",
    "a list literal looped": "for x in [t, t]:\n    print(x.sum())",
    "a class that reads": "class DS(torch.utils.data.Dataset):\n    def __init__(self, x):\n"
    "        self.x = x\n    def __len__(self):\n        return len(self.x)\n"
    "    def __getitem__(self, i):\n        return self.x[i]\n\nprint(DS(t)[0].shape)",
    "the file's function that reads": "def train(m, x):\n    return m(x).sum()\n\n"
    "print(float(train(nn.Linear(4, 1), t)))",
}


def program(body: str) -> str:
    return _HEAD + body + _TAIL


@pytest.mark.parametrize("form", sorted(WRITES))
def test_a_write_out_of_the_walks_old_sight_is_said(form: str) -> None:
    outcome = port_text(program(WRITES[form]), "p.py")
    assert "torch.from_numpy(a).to(" not in outcome.source, outcome.source
    assert any(f.code == "TP503" for f in outcome.remaining), outcome.remaining


@pytest.mark.parametrize("form", sorted(READS))
def test_a_read_is_placed_with_nothing_said(form: str) -> None:
    outcome = port_text(program(READS[form]), "p.py")
    assert "torch.from_numpy(a).to(" in outcome.source, outcome.source
    assert not [f for f in outcome.remaining if f.code == "TP503"], outcome.remaining


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(sorted(WRITES)), min_size=4, max_size=4, unique=True),
    st.lists(st.sampled_from(sorted(READS)), min_size=2, max_size=2, unique=True),
)
def test_placed_or_said_on_sim(writes: list, reads: list) -> None:
    """The oracle apart from the port (one simulated-accelerator child per example)."""
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said([program(WRITES[f]) for f in writes] + [program(READS[f]) for f in reads])


@pytest.mark.slow  # every form in one child
def test_every_form_on_sim() -> None:
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said([program(b) for b in (*WRITES.values(), *READS.values())])

"""A tensor sharing an array's memory, handed where a write may happen out of the walk's sight.

The class (``port/_shared_memory``, issue 31): ``t = torch.from_numpy(a)`` is moved only where
no write to it can reach ``a``, which the program reads again. b31al's and q31am's silent forms
(strict xfails until now): the tensor written in a function that reads it as a free name, by
the file's own function it is handed to, by a ``torch.nn.init`` function, through a container
or a tuple unpacked, or as an unnamed tensor (``bump(torch.from_numpy(a))``). The port moved it
("0 left") and the write no longer reached ``a``. The invariant now: each place the tensor
goes is followed (a callee's parameter, a nested function's free name, a view's name), and a
place the walk cannot follow (a container, an attribute, a star) counts as a write.

The oracle is apart from the port: each program is built from a route (how the tensor goes
on) and an act at its end (a write, or a read), and the original runs on the CPU against the
port on the simulated accelerator (``no_cuda_sim.placed_or_said``: a finding left, or the
original's values on ``sim:0``). The second half, no new noise where the walk can see: a
followed route that ends in a read is placed with nothing left, by construction (no act
writes).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check.port import port_text

# How the tensor reaches the act on `x`: `{t}` is what is handed on, `{act}` the act. The
# walk follows these (a callee's parameter, a function's free name):
FOLLOWED = {
    "own function": "def use(x):\n    {act}\n\nuse({t})",
    "own function, keyword": "def use(x=None):\n    {act}\n\nuse(x={t})",
    "two functions deep": "def use(x):\n    {act}\n\ndef pass_on(y):\n    use(y)\n\npass_on({t})",
    "free name in a function": "def use():\n    x = {t}\n    {act}\n\nuse()",
}
# and not these: each counts as a write, whatever the act (said, never silent)
UNFOLLOWED = {
    "a list": "held = [{t}]\nx = held[0]\n{act}",
    "a dict": "held = {{'t': {t}}}\nx = held['t']\n{act}",
    "unpacked": "x, w = {t}, 1\n{act}",
}
ROUTES = {**FOLLOWED, **UNFOLLOWED}
# The act at the end, on `x`: writes reach `a` on the CPU (not on the device); reads do not.
WRITES = {
    "item set": "x[0, 0] = 9.0",
    "in place": "x.mul_(2.0)",
    "nn.init": "torch.nn.init.zeros_(x)",
    "out=": "torch.add(x, 1.0, out=x)",
}
READS = {
    "sum": "print(float(x.sum()))",
    "a new tensor": "y = x * 2.0; y[0, 0] = 9.0",
    "torch function": "print(float(torch.cat([x, x]).mean()))",
}

ACTS = {**WRITES, **READS}

_PROGRAM = """import numpy as np
import torch
import torch.nn as nn

a = np.ones((3, 4), dtype=np.float32)
t = torch.from_numpy(a)
{route}
model = nn.Linear(4, 2)
OUT.append(model(t) + float(a.sum()))
"""


def program(route: str, act: str, unnamed: bool = False) -> str:
    """One program; ``unnamed``: the route is handed ``torch.from_numpy(a)`` itself (only the
    routes that take an expression once: a call, a container, an unpacking)."""
    text = ROUTES[route].format(t="torch.from_numpy(a)" if unnamed else "t", act=act)
    return _PROGRAM.format(route=text)


NAMED = [(r, a) for r in ROUTES for a in ACTS]
UNNAMED = [(r, a) for r in ROUTES if r != "free name in a function" for a in ACTS]


@pytest.mark.parametrize(("route", "act"), [(r, a) for r in FOLLOWED for a in READS])
def test_a_read_at_the_end_of_a_followed_route_is_placed(route: str, act: str) -> None:
    """No noise where the walk can see: nothing writes, so the tensor is moved."""
    outcome = port_text(program(route, READS[act]), "p.py")
    assert "torch.from_numpy(a).to(" in outcome.source, outcome.source
    assert not [f for f in outcome.remaining if f.code == "TP503"], outcome.remaining


@pytest.mark.parametrize(
    ("route", "act"),
    [(r, a) for r in FOLLOWED for a in WRITES] + [(r, a) for r in UNFOLLOWED for a in ACTS],
)
def test_a_write_or_an_unfollowed_route_is_said(route: str, act: str) -> None:
    outcome = port_text(program(route, ACTS[act]), "p.py")
    assert "torch.from_numpy(a).to(" not in outcome.source, outcome.source
    assert any(f.code == "TP503" for f in outcome.remaining), outcome.remaining


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(NAMED), min_size=4, max_size=4, unique=True),
    st.lists(st.sampled_from(UNNAMED), min_size=2, max_size=2, unique=True),
)
def test_handed_on_tensors_are_placed_or_said_on_sim(named: list, unnamed: list) -> None:
    """The oracle apart from the port (one simulated-accelerator child per example)."""
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said(
        [program(r, ACTS[a]) for r, a in named]
        + [program(r, ACTS[a], unnamed=True) for r, a in unnamed]
    )


@pytest.mark.slow  # every route and act, named and unnamed, in one child
def test_every_route_and_act_on_sim() -> None:
    pytest.importorskip("torch")
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said(
        [program(r, ACTS[a]) for r, a in NAMED]
        + [program(r, ACTS[a], unnamed=True) for r, a in UNNAMED]
    )

"""The CPU prediction against the simulated device for tensors made by
``torch.from_numpy``/``torch.frombuffer`` (and ``tensor``/``as_tensor``) reached through
names the program bound itself: in a function or a method while the audit watches, or
before it started as an instance's or a class's attribute or a default argument, in
objects young or old (``gc.collect()`` before the audit: the collector lists referrers
youngest first, and which of them owns a dict must not depend on that order).

Oracle: the simulated accelerator (``sim:0``) runs each program with CUDA's device rules and
counts every copy and host wait it really makes; ``tp.audit()`` on the CPU predicts the same
run (see test_agreement.py). Per source line they must count the same, and neither run may
leave a line unpredicted. Such tensors are the host's in both runs: reading them waits for
nothing, indexing a device tensor with them copies them.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sim.isolated import assert_predicted_as_measured

pytestmark = [pytest.mark.needs_simulator, pytest.mark.slow]  # a child process per example

# bound when the module runs, before the audit starts
_HEAD = """import numpy as np
import torch
class Held:
    make = torch.{name}
    def __init__(self):
        self.fn = torch.{name}
    def inner(self, a, **k):
        from torch import {name}
        return {name}(a, **k)
def by_default(a, make=torch.{name}, **k):
    return make(a, **k)
def by_keyword(a, *, make=torch.{name}, **k):
    return make(a, **k)
def imported(a, **k):
    from torch import {name} as make
    return make(a, **k)
H = Held()
def prog(dev):
    x = torch.randn(16).to(dev)
"""
# how the maker is reached, called with the data `a`
CALLS = [
    "H.fn({a})",
    "Held.make({a})",
    "H.make({a})",
    "H.inner({a})",
    "by_default({a})",
    "by_keyword({a})",
    "imported({a})",
    "Held().fn({a})",
]
DATA = {
    "from_numpy": "np.arange(4, dtype=np.int64)",
    "frombuffer": "bytearray(np.arange(4, dtype=np.int64).tobytes()), dtype=torch.int64",
    "as_tensor": "np.arange(4, dtype=np.int64)",
    "tensor": "[0, 1, 2, 3]",
}
USES = [
    "_ = float(t.sum())",
    "t[0] = 1",
    "_ = int(t[1])",
    "_ = x[t]",
    "x[t] = 0.0",
    "_ = t.to(dev)",
    "_ = t.tolist()",
]


@st.composite
def programs(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(sorted(DATA)))
    call = draw(st.sampled_from(CALLS)).format(a=DATA[name])
    uses = draw(st.lists(st.sampled_from(USES), min_size=1, max_size=4))
    body = [f"t = {call}", *uses]
    head = _HEAD.format(name=name)
    if draw(st.booleans()):  # the program's objects are old, as in a program that has run a while
        head = head.replace("H = Held()\n", "H = Held()\nimport gc\ngc.collect()\n")
    return head + "".join(f"    {line}\n" for line in body)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(programs(), min_size=8, max_size=8))
def test_host_makers_bound_by_the_program_anywhere_are_predicted_as_measured(
    sources: list[str],
) -> None:
    assert_predicted_as_measured(sources)


def test_the_program_s_names_are_its_own_again_after_the_audit() -> None:
    source = _HEAD.format(name="from_numpy") + "    _ = H.fn(np.zeros(2))\n"
    check = """
import torchport as tp
scope = {}
exec(compile(SOURCE, "<held>", "exec"), scope)
held, cls, made = scope["H"], scope["Held"], torch.from_numpy
with tp.audit():
    inside = [held.fn is made, scope["by_default"].__defaults__[0] is made]
after = [
    held.fn is torch.from_numpy,
    vars(cls)["make"] is torch.from_numpy,
    scope["by_default"].__defaults__[0] is torch.from_numpy,
    scope["by_keyword"].__kwdefaults__["make"] is torch.from_numpy,
]
print(json.dumps({"inside": inside, "after": after}))
""".replace("SOURCE", repr(source))
    from tests.sim.isolated import run_isolated

    assert run_isolated(check) == {"inside": [False, False], "after": [True] * 4}

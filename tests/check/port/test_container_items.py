"""An item taken out of a container the code fills: what was put in, never a plain value.

``memory = collections.deque()``, ``memory.append(t)``, then ``model(memory.popleft())``:
the port took any method of a standard-library object (a ``queue.Queue``, a ``deque``, an
empty ``{}`` or ``[]``) for a plain value, as a string's method is, moved nothing and
reported nothing, and the program stopped on the device. Now such an item is of the kind
of what the code puts in (a number: plain; a forward's output: on the device), or "not
sure" where a use of the container is not seen (it is handed to a function).

Programs are generated: a container of one of six forms (a list, a deque, a queue, a dict,
a list an object keeps on ``self``, read on the object or in its method), filled with a CPU
tensor, a number or a forward's output, directly or by a function it is handed to; an item
taken out meets the model's output. A string's method stands beside it. The oracle is the
ported program on the simulated accelerator in a child: it stops at the line that uses the
item exactly when the port leaves a finding there.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import stops_exactly_where_reported

pytest.importorskip("torch")

# form -> (how it is made, how a value goes in, how an item comes out)
_FORMS = {
    "list": ("[]", "m.append({v})", "m.pop()"),
    "deque": ("collections.deque(maxlen=3)", "m.append({v})", "m.popleft()"),
    "queue": ("queue.Queue()", "m.put({v})", "m.get()"),
    "dict": ("{{}}", 'm["k"] = {v}', 'm.get("k")'),
    "object": ("Memory()", "m.items.append({v})", "m.items.pop()"),
    "own": ("Memory()", "m.items.append({v})", "m.use()"),  # `self.items.pop()` in a method
}
_PUT = {
    "cpu tensor": "torch.ones(4)",
    "number": "2.0",
    "device value": "layer(torch.ones(4))",
}


def _program(form: str, put: str, handed: bool) -> str:
    made, store, take = _FORMS[form]
    value = _PUT[put]
    lines = [
        "import collections",
        "import queue",
        "",
        "import torch",
        "import torch.nn as nn",
        "",
        "model = nn.Linear(4, 4)",
        "layer = nn.Linear(4, 4)",
        "",
        "",
        "class Memory:",
        "    def __init__(self):",
        "        self.items = []",
        "",
        "    def use(self):",
        "        return (model(torch.ones(4)) * self.items.pop()).sum().item()",
        "",
        "",
        "def fill(m):",
        "    " + store.format(v=value),
        "",
        "",
        f"m = {made.format()}",
        "fill(m)" if handed else store.format(v=value),
        "s = ' a b '.strip()",
        f"print({take}, s.split())"
        if form == "own"
        else f"print((model(torch.ones(4)) * {take}).sum().item(), s.split())",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@example(
    cases=[("deque", "cpu tensor", False), ("list", "number", False), ("own", "cpu tensor", False)]
)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(
        st.tuples(st.sampled_from(sorted(_FORMS)), st.sampled_from(sorted(_PUT)), st.booleans()),
        min_size=1,
        max_size=8,
    )
)
def test_an_item_of_a_filled_container_is_what_was_put_in(
    cases: list[tuple[str, str, bool]],
) -> None:
    cases = [c for c in cases if not (c[2] and c[1] != "cpu tensor")]  # (see below)
    if not cases:
        return
    stops_exactly_where_reported(
        cases,
        [_program(form, put, handed) for form, put, handed in cases],
        lambda source, case: {
            i for i, line in enumerate(source.splitlines(), 1) if _uses_the_item(line, case[0])
        },
    )


def _uses_the_item(line: str, form: str) -> bool:
    """The line where the item meets the model's output (in ``Memory.use`` for ``own``)."""
    return "self.items.pop()" in line if form == "own" else line.startswith("print((")


# (Left out: a container handed to a function that fills it with numbers or device values
# is "not sure" and reported, though the run shows it fine: what a function of the file
# puts in a container it is handed is not followed; so is one filled by a method of its
# object, `self.items.append(t)` in `add(self, t)`, whose `t` the port cannot tell.)

"""A comprehension's target is its own name: placed or reported apart from a loop's (issue 31).

Found by s31an: ``for x in loader: out = model(x)`` and then ``outs = [model(x) for x in
loader]`` in one scope. The port moved the loop's ``x`` (``x = x.to(device)``) and said "0
left", and the ported program stopped on any accelerator at the comprehension's ``model(x)``:
its ``x`` is bound by the comprehension alone (Python 3 gives a comprehension a scope of its
own), but the port filed it under the enclosing scope's names, and a name that scope moves
(the loop's own ``x = x.to(device)``, written by the port or by the program) was taken for
moved in the comprehension too. Standing alone, the comprehension is reported (TP523).

The invariant: each binding of a name that is a comprehension's target is placed or
reported on its own, whatever else binds that name in the scope. Programs are generated:
the comprehension's form (list, set, dict, generator, nested, in a lambda, with a walrus,
over a dict's values),
where it runs (the module body, a function, a function whose parameter has the target's
name), where the loop runs, which comes first, and whether the program moves the loop's
batch itself. Oracle apart from the port (``no_cuda_sim.placed_or_said``): the original on
the CPU and the port on the simulated accelerator; with no finding left, the original's
values, every output on ``sim:0``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

from tests.check.port.no_cuda_sim import placed_or_said

# Each form: the expression, and how its value becomes a list of the model's outputs.
FORMS = {
    "list": ("[model(x) for x in loader]", "{c}"),
    "set": ("{model(x) for x in loader}", "sorted({c}, key=lambda t: t.sum().item())"),
    "dict": ("{i: model(x) for i, x in enumerate(loader)}", "list({c}.values())"),
    "generator": ("(model(x) for x in loader)", "list({c})"),
    "nested": ("[y for ys in [[model(x) for x in loader]] for y in ys]", "{c}"),
    "two fors": ("[model(x) for _ in range(1) for x in loader]", "{c}"),
    "in a lambda": ("(lambda: [model(x) for x in loader])", "{c}()"),
    "a walrus": ("[(z := model(x)) for x in loader]", "{c} + [z]"),
    "a dict's values": ("[model(x) for x in named.values()]", "{c}"),
}
WHERE = ("the module", "a function", "a function with a parameter x")
LOOP_WHERE = ("the module", "a function")

_HEAD = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader

model = nn.Linear(3, 3)
loader = DataLoader(torch.randn(8, 3), batch_size=2)
named = {"a": torch.randn(2, 3), "b": torch.ones(2, 3)}
"""
_DEVICE = (  # the program's own placement: the model and the loop's batch
    "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available()"
    ' else torch.device("cpu")\nmodel = model.to(device)\n'
)


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def _loop(where: str, moves: bool) -> list[str]:
    body = ["for x in loader:", *(["    x = x.to(device)"] if moves else []), "    out = model(x)"]
    if where == "the module":
        return [*body, "OUT.append(out)"]
    return ["def train():", *_indent([*body, "return out"]), "", "OUT.append(train())"]


def _comprehension(form: str, where: str) -> list[str]:
    expr, listed = FORMS[form]
    made = [f"outs = {listed.format(c=expr)}"]
    if where == "the module":
        return [*made, "OUT.extend(outs)"]
    if where == "a function":
        return ["def evaluate():", *_indent([*made, "return outs"]), "", "OUT.extend(evaluate())"]
    return [  # the target's name is the function's parameter too
        "def evaluate(x):",
        *_indent([*made, "return outs + [model(x)]"]),
        "",
        "OUT.extend(evaluate(torch.ones(2, 3)))",
    ]


def program(form: str, where: str, loop_where: str, loop_first: bool, moves: bool) -> str:
    parts = [_loop(loop_where, moves), _comprehension(form, where)]
    if not loop_first:
        parts.reverse()
    lines = [line for part in parts for line in (*part, "")]
    return _HEAD + (_DEVICE if moves else "") + "\n" + "\n".join(lines)


S31AN = """import torch
from torch import nn
from torch.utils.data import DataLoader

net = nn.Linear(3, 3)
batches = DataLoader(torch.randn(8, 3), batch_size=2)
for b in batches:
    y = net(b)
ys = [net(b) for b in batches]
OUT.extend(ys)
"""

_PROGRAMS = st.builds(
    program,
    st.sampled_from(sorted(FORMS)),
    st.sampled_from(WHERE),
    st.sampled_from(LOOP_WHERE),
    st.booleans(),
    st.booleans(),
)


def test_a_loop_then_a_comprehension_over_the_same_name_is_placed_or_said() -> None:
    """s31an's case, in our words: the loop's batch moved, the comprehension's left."""
    placed_or_said([S31AN])


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_PROGRAMS, min_size=6, max_size=6))
def test_each_binding_of_a_comprehension_target_is_placed_or_said(programs: list[str]) -> None:
    placed_or_said(programs)


@pytest.mark.slow
def test_every_mix_of_comprehension_targets_and_loops_is_placed_or_said() -> None:
    placed_or_said(
        [
            program(form, where, loop_where, first, moves)
            for form in sorted(FORMS)
            for where in WHERE
            for loop_where in LOOP_WHERE
            for first in (True, False)
            for moves in (True, False)
        ]
    )

"""Names bound together by unpacking a tuple written out (``t, w = model(x), torch.ones(2)``).

The flow took each name of such a statement for the whole pair: ``w`` was a device value
because ``model(x)`` is one, so nothing moved the ones that meet ``t``, and the port said
"0 left" of a program that stops on any accelerator (issue 31; found by d31ai beside the
handed parameters, silent on the base). The invariant (``_structure._pairs``): a tuple or
list unpacked item by item into as many targets, none starred, binds each name to its own
item; every other assignment binds its targets to the whole value, as before.

The oracle (``no_cuda_sim``, written apart from the port): each original on the CPU, its port
on the simulated accelerator: nothing left means the original's values with each output on
``sim:0`` (a host copy's on the CPU), a finding left means the port stops there.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import ports_on_sim_or_stops
from torchport.check.port import port_text

pytest.importorskip("torch")

PAIRS = {  # the statement binding `t` (from `{v}`) and `w` (a tensor made here)
    "device first": "t, w = {v}, {made}",
    "made first": "w, t = {made}, {v}",
    "a list": "[t, w] = [{v}, {made}]",
    "three items": "t, k, w = {v}, 3, {made}",
    "parenthesized": "(t, w) = ({v}, {made})",
}
MADE = {
    "ones": "torch.ones(2)",
    "arange": "torch.arange(2).float()",
    "full": "torch.full((2,), 0.5)",
}
OPS = {"times": "t * w", "a torch function": "torch.add(t, w)", "w first": "w - t"}
VALUES = {  # what `t` is: (its expression, the output's device on `sim`)
    "the model's output": ("model(x)", "sim:0"),
    "a host copy": ("model(x).detach().cpu()", "cpu"),
    "a parameter": ("y", "sim:0"),  # (in `f(y)`, handed the model's output)
}
CASE = st.tuples(
    st.sampled_from(sorted(PAIRS)),
    st.sampled_from(sorted(MADE)),
    st.sampled_from(sorted(OPS)),
    st.sampled_from(sorted(VALUES)),
    st.booleans(),
)
_EACH = [(p, "ones", "times", "the model's output", False) for p in sorted(PAIRS)]
_EACH += [
    ("device first", m, o, "a parameter", True)
    for m, o in zip(sorted(MADE), sorted(OPS), strict=True)
]
_EACH += [("made first", "full", "w first", "a host copy", False)]


def _program(pair: str, made: str, op: str, value: str, in_main: bool) -> str:
    head = "import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2)\n"
    bind = PAIRS[pair].format(v=VALUES[value][0], made=MADE[made])
    lines = ["x = torch.ones(3, 4)"]
    if value == "a parameter":
        head += f"def f(y):\n    {bind}\n    return {OPS[op]}\n"
        lines += ["OUT.append(f(model(x)).detach())"]
    else:
        lines += [bind, f"OUT.append(({OPS[op]}).detach())"]
    if in_main:
        return head + "def main():\n" + "".join(f"    {b}\n" for b in lines) + "main()\n"
    return head + "".join(f"{b}\n" for b in lines)


def _check(cases: list[tuple[str, str, str, str, bool]]) -> None:
    sources = [_program(*case) for case in cases]
    ports = [port_text(source) for source in sources]
    runs = ports_on_sim_or_stops([(s, p.source) for s, p in zip(sources, ports, strict=True)])
    for case, ported, run in zip(cases, ports, runs, strict=True):
        assert port_text(ported.source).source == ported.source, case  # idempotent
        if ported.remaining:
            assert "error" in run, (case, run, ported.remaining, ported.source)  # it is real
            continue
        assert run.get("same") and run["devices"] == [VALUES[case[3]][1]], (case, run, ported)


# the default run: the explicit cases only (each example is a child's run on `sim`); the
# whole table, every case drawn here, is the slow test below (`-m slow`)
@settings(deadline=None, phases=(Phase.explicit,))
@given(st.lists(CASE, min_size=4, max_size=8))
@example(_EACH)
def test_a_tensor_unpacked_beside_a_device_value_is_placed_or_said(
    cases: list[tuple[str, str, str, str, bool]],
) -> None:
    _check(cases)


@pytest.mark.slow  # the whole table (270 programs) in one child
def test_every_unpacked_pair_is_placed_or_said() -> None:
    _check(
        list(
            itertools.product(
                sorted(PAIRS), sorted(MADE), sorted(OPS), sorted(VALUES), (False, True)
            )
        )
    )


def test_a_creator_s_sizes_are_no_data_that_meets_the_device() -> None:
    """timm's ``profile_fvcore``: with ``device`` read per item, ``torch.ones((batch_size,) +
    input_size, device=device)`` meets the model, and its sizes were taken for data meeting
    it (TP520 on ``input_size`` and ``batch_size``, a tuple of ints and an int; the same on
    the base with one name per line). A sized creator's arguments are no data
    (``_device_flow._SIZED``): nothing left."""
    source = (
        "import torch\n\n\ndef profile(model, input_size=(3, 224, 224), batch_size=1):\n"
        "    device, dtype = next(model.parameters()).device, next(model.parameters()).dtype\n"
        "    example_input = torch.ones((batch_size,) + input_size, device=device, dtype=dtype)\n"
        "    return model(example_input)\n"
    )
    assert port_text(source).remaining == []

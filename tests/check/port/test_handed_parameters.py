"""A parameter whose callers hand it both device values and host copies, or that is handed
device values where the flow did not look (``*args``, ``**kwargs``): placed or said.

Issue 31, silent until d31ai: ``def f(t, w=torch.ones(2))`` handed the model's output and a
``.cpu()`` copy of it left the default where the program made it, and the port said "0 left"
(its device call stopped on any accelerator); ``def f(*ts)`` and ``def f(**kw)`` were handed
nothing at all, so what their items met stayed on the CPU, said nowhere. The invariant
(``_guesses._guessed_defaults``, ``_call_flow._handed``): a default that meets only values
some callers leave on the host is reported where it is made (TP503), never moved to the
device; a default meeting only device values is moved (TP502's move of the parameter); what
``*args`` and ``**kwargs`` are handed is followed as a named parameter's is.

The oracle (``no_cuda_sim``, written apart from the port): each original on the CPU, its port
on the simulated accelerator; nothing left means the port runs to its end with the original's
values and each output where its call put it (a host copy's on the CPU); a finding left
means the port stops there (it is real).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import ports_on_sim_or_stops
from torchport.check.port import port_text

pytest.importorskip("torch")

HOLDERS = {  # (the function, how a call hands it `{v}`): `{op}` combines its two tensors
    "a default": ("def f(t, w=torch.ones(2)):\n    return {op}\n", "f({v})"),
    "a keyword-only default": ("def f(t, *, w=torch.ones(2)):\n    return {op}\n", "f({v})"),
    "a default through a name": (
        "def f(t, w=torch.ones(2)):\n    u = w * 2\n    return {op_u}\n",
        "f({v})",
    ),
    "a method's default": (
        "class A:\n    def f(self, t, w=torch.ones(2)):\n        return {op}\na = A()\n",
        "a.f({v})",
    ),
    "*args": ("def f(*ts):\n    t = ts[0]\n    w = torch.ones(2)\n    return {op}\n", "f({v})"),
    "*args and a default": (
        "def f(*ts, w=torch.ones(2)):\n    t = ts[0]\n    return {op}\n",
        "f({v})",
    ),
    "**kwargs": (
        'def f(**kw):\n    t = kw["t"]\n    w = torch.full((2,), 3.0)\n    return {op}\n',
        "f(t={v})",
    ),
}
OPS = {"times": "t * w", "a torch function": "torch.add(t, w)", "w first": "w - t"}
CALLS = {  # what the calls hand: (values, their outputs' devices on `sim`)
    "the model's output": (("model(x)",), ["sim:0"]),
    "twice on the device": (("model(x)", "model(x) * 2"), ["sim:0", "sim:0"]),
    "and a host copy": (("model(x)", "model(x).detach().cpu()"), ["sim:0", "cpu"]),
}
CASE = st.tuples(
    st.sampled_from(sorted(HOLDERS)),
    st.sampled_from(sorted(OPS)),
    st.sampled_from(sorted(CALLS)),
    st.booleans(),
)
TABLE = list(itertools.product(sorted(HOLDERS), sorted(OPS), sorted(CALLS), (False, True)))
# each holder handed a host copy once (each was silent on the base but `*args` alone and
# `**kwargs` alone, which the base left unmoved on both paths: right by chance), and each
# `*args`/`**kwargs` holder on the device only (silent on the base: the item met a CPU tensor)
_EACH = [(h, "times", "and a host copy", False) for h in sorted(HOLDERS)]
_EACH += [(h, "a torch function", "the model's output", True) for h in sorted(HOLDERS)[:3]]


def _program(holder: str, op: str, calls: str, in_main: bool) -> str:
    func, call = HOLDERS[holder]
    expr = OPS[op]
    head = "import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2)\n"
    head += func.format(op=expr, op_u=expr.replace("w", "u"))
    lines = ["x = torch.ones(3, 4)"]
    lines += [f"OUT.append({call.format(v=v)}.detach())" for v in CALLS[calls][0]]
    if in_main:
        return head + "def main():\n" + "".join(f"    {b}\n" for b in lines) + "main()\n"
    return head + "".join(f"{b}\n" for b in lines)


def _check(cases: list[tuple[str, str, str, bool]]) -> None:
    sources = [_program(*case) for case in cases]
    ports = [port_text(source) for source in sources]
    runs = ports_on_sim_or_stops([(s, p.source) for s, p in zip(sources, ports, strict=True)])
    for case, ported, run in zip(cases, ports, runs, strict=True):
        assert port_text(ported.source).source == ported.source, case  # idempotent
        if ported.remaining:
            assert "error" in run, (case, run, ported.remaining, ported.source)  # it is real
            continue
        devices = CALLS[case[2]][1]
        assert run.get("same") and run["devices"] == devices, (case, run, ported.source)


# the default run: the explicit cases only (each example is a child's run on `sim`); the
# whole table, every case drawn here, is the slow test below (`-m slow`)
@settings(deadline=None, phases=(Phase.explicit,))
@given(st.lists(CASE, min_size=4, max_size=8))
@example(_EACH)
def test_a_parameter_handed_device_values_and_host_copies_is_placed_or_said(
    cases: list[tuple[str, str, str, bool]],
) -> None:
    _check(cases)


def test_a_default_meeting_a_host_copy_is_said_where_it_is_made() -> None:
    ported = port_text(_program("a default", "times", "and a host copy", False))
    line = ported.source.splitlines().index("def f(t, w=torch.ones(2)):") + 1
    assert [(f.code, f.line) for f in ported.remaining] == [("TP503", line)], ported.remaining
    assert "the default of `w`" in ported.remaining[0].message
    # on the device only, the parameter is moved first thing in the body: nothing left
    ported = port_text(_program("a default", "times", "twice on the device", False))
    assert ported.remaining == [] and "w = w.to(device)" in ported.source, ported.source


@pytest.mark.slow  # the whole table (126 programs) in one child
def test_every_handed_parameter_is_placed_or_said() -> None:
    _check(TABLE)


def test_a_default_that_makes_no_tensor_is_not_said() -> None:
    """Near forms: defaults made by calls that make no tensor (``len(xs)``, ``float(2)``,
    ``np.ones(2)``, ``torch.device("cpu")``) beside the same host-copy callers: nothing left."""
    source = (
        "import numpy as np\nimport torch\n\nmodel = torch.nn.Linear(4, 2)\nx = torch.ones(3, 4)\n"
        "xs = [1, 2]\n"
        'def f(t, n=len(xs), a=np.ones(2), d=torch.device("cpu"), s=float(2.0)):\n'
        "    return t * n * s\n"
        "OUT.append(f(model(x)).detach())\nOUT.append(f(model(x).detach().cpu()).detach())\n"
    )
    assert port_text(source).remaining == []

"""A device the program carries itself is the one the port's moves use (issue 31, item 2).

``model.to(cfg.device)``, ``.to(args.device)``, ``.to(self.device)``, ``.to(DEVICE)``: the
program chose its device (a literal ``"cpu"``, a command-line option, the CUDA-or-CPU
idiom) and uses it for some tensors. On the base the port added a second ``device = <the
accelerator>`` beside it and moved the other tensors there: they met the model on the CPU
on any accelerator the program's value does not name ("0 left"). The invariant: where the
program carries one device value that reaches its model, the port writes no device line of
its own; its moves use that value where it is in scope (a module-level constant), and
otherwise are reported at their lines.

Oracle (``no_cuda_sim``, apart from the port): the original and its port run on the CPU in
this process (byte-identical outputs); both run on the simulated accelerator in a child:
the port runs where the original ran and puts its outputs where the original's model put
them, or leaves a finding; every port is idempotent.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import ports_on_sim_or_stops
from torchport.check.port import port_text

pytest.importorskip("torch")

_IDIOM = '"cuda" if torch.cuda.is_available() else "cpu"'
VALUES = {
    "literal": '"cpu"',
    "idiom": _IDIOM,
    "torch.device idiom": f"torch.device({_IDIOM})",
    "option": "options().device",
}
HOLDERS = ("module constant", "config object", "namespace", "attribute", "argparse namespace")
# The port's own device line (any of the names it writes), or its accelerator expression.
_SECOND = re.compile(
    r"^\s*(device|_device|torch_device|_torchport_device)\s*=|torch\.accelerator", re.M
)

_HEAD = """import argparse
import torch
import torch.nn as nn
from types import SimpleNamespace


def options(argv=()):
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    return parser.parse_args(list(argv))

"""


def program(holder: str, value: str, used: bool, inputs: int) -> str:
    """A CPU program whose model goes to the device ``holder`` carries (set to ``value``);
    ``used``: one more tensor is moved there by the program itself; ``inputs``: how many
    tensors it leaves where they are made (the port's to move or report)."""
    v = VALUES[value]
    ref = {"module constant": "DEVICE", "attribute": "self.device"}.get(holder, "cfg.device")
    made = ["x = torch.randn(4, 3)", "b = torch.zeros(3)"][:inputs]
    terms = [
        "model(x)",
        *(["b"] if inputs > 1 else []),
        *([f"torch.ones(3).to({ref})"] if used else []),
    ]
    body = [*made, f"out = {' + '.join(terms)}", "OUT.append(out.detach())"]
    if holder == "attribute":
        lines = "\n".join(f"        {line}" for line in body).replace("model(", "self.model(")
        return (
            _HEAD
            + f"\nclass Runner:\n    def __init__(self):\n        self.device = {v}\n"
            + "        self.model = nn.Linear(3, 3).to(self.device)\n\n"
            + f"    def run(self):\n{lines}\n"
            + "\n\ndef main():\n    Runner().run()\n\n\nmain()\n"
        )
    top = f"DEVICE = {v}\n" if holder == "module constant" else ""
    if holder == "config object":
        top = f"class Config:\n    def __init__(self):\n        self.device = {v}\n"
        setup = ["cfg = Config()"]
    elif holder == "namespace":
        setup = [f"cfg = SimpleNamespace(device={v})"]
    elif holder == "argparse namespace":
        setup = ["cfg = options()"] + ([] if value == "option" else [f"cfg.device = {v}"])
    else:
        setup = []
    lines = [*setup, f"model = nn.Linear(3, 3).to({ref})", *body]
    main = "".join(f"    {line}\n" for line in lines)
    return _HEAD + "\n" + top + f"\n\ndef main():\n{main}\n\nmain()\n"


def _cpu_outputs(source: str) -> list[object]:
    """``OUT`` of ``source`` run on the CPU in this process."""
    import torch

    out: list[object] = []
    torch.manual_seed(0)
    exec(compile(source, "<program>", "exec"), {"OUT": out, "__name__": "__main__"})
    return out


def _uses_the_programs_device(cases: list[tuple[str, str, bool, int]]) -> None:
    import torch

    sources = [program(*case) for case in cases]
    ports = [port_text(s, "p.py") for s in sources]
    for source, port in zip(sources, ports, strict=True):  # byte-identical on the CPU
        before, after = _cpu_outputs(source), _cpu_outputs(port.source)
        assert len(before) == len(after) > 0, port.source
        assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True)), port.source
    for source, port in zip(sources, ports, strict=True):
        assert not port.failures, port.failures
        assert port_text(port.source, "p.py").source == port.source, (
            f"not idempotent:\n{port.source}"
        )
        added = len(_SECOND.findall(port.source)) - len(_SECOND.findall(source))
        assert added == 0, f"a second device beside the program's own:\n{port.source}"
    # Each original and each port on the simulated accelerator (the original as its own port).
    pairs = [(s, s) for s in sources] + [(s, p.source) for s, p in zip(sources, ports, strict=True)]
    results = ports_on_sim_or_stops(pairs)
    originals, moved = results[: len(sources)], results[len(sources) :]
    for case, port, was, now in zip(cases, ports, originals, moved, strict=True):
        assert "error" not in was, (case, was)
        if port.remaining:
            continue  # reported (the port's moves, at their lines)
        assert "error" not in now, (case, now, port.source)
        assert now["same"] and now["devices"] == was["devices"], (case, now, was, port.source)


CASES = st.tuples(
    st.sampled_from(HOLDERS),
    st.sampled_from(sorted(VALUES)),
    st.booleans(),
    st.sampled_from((1, 2)),
)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(CASES, min_size=8, max_size=8))
def test_the_port_reuses_or_reports_the_device_the_program_carries(
    cases: list[tuple[str, str, bool, int]],
) -> None:
    """See the module docstring (one child per example)."""
    _uses_the_programs_device(cases)


def test_every_holder_and_value() -> None:
    """The whole table, one child: each holder x value, used or not, one or two inputs."""
    _uses_the_programs_device(
        [
            (h, v, u, n)
            for h in HOLDERS
            for v in sorted(VALUES)
            for u in (False, True)
            for n in (1, 2)
        ]
    )


def test_a_module_constant_is_the_one_the_moves_use() -> None:
    """``DEVICE = "cpu"`` placing the model: the port moves the inputs to ``DEVICE``."""
    port = port_text(program("module constant", "literal", False, 1), "p.py")
    assert "torch.randn(4, 3).to(DEVICE)" in port.source, port.source
    assert not port.remaining, port.remaining

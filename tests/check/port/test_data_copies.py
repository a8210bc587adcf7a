"""``torch.tensor(outs)`` of a list of device tensors makes a CPU tensor: the port knows it.

torch's data copies (``torch.tensor``, ``torch.as_tensor``, ``torch.asarray``) given a
Python list or tuple read each item to the host and build the result on the default
device, the CPU, whatever the items are. The port took the copy of a list of a model's
outputs for a device value (any call of device arguments is one): it moved nothing, said
"0 left", and the ported program stopped on the accelerator where the copy met the model
(held-out set h31n, VlasovElectric's ``torch.tensor(neural_solution)``).

Programs are generated: the outputs collected by a comprehension, an ``append`` loop, a
list or a tuple; copied by each of the three calls into a new name or into the list's own
name; the copy then meeting the model's bias, fed to the model, or read by numpy. The
oracle runs the original and the port on the CPU (the same printed value), and the port
on the simulated accelerator with no CUDA redirect, in a child: it runs to its end with
the CPU's value, or stops at a line where the port left a finding.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import in_a_child
from torchport.check.port import port_text

pytest.importorskip("torch")

_COLLECT = {
    "comprehension": "outs = [model(torch.ones(2) * i).sum() for i in range(3)]\n",
    "append": ("outs = []\nfor i in range(3):\n    outs.append(model(torch.ones(2) * i).sum())\n"),
    "list": "outs = [model(ONE).sum(), model(torch.zeros(2)).sum(), model(ONE).max()]\n",
    "tuple": "outs = (model(ONE).sum(), model(torch.zeros(2)).sum(), model(ONE).max())\n",
}
_USE = {
    "meets the bias": "print(round((VAR * model.bias).sum().item(), 4))\n",
    "fed to the model": "print(round(model(VAR[:2]).sum().item(), 4))\n",
    "read by numpy": "print(round(float(np.mean(VAR.detach().numpy())), 4))\n",
}


def _program(collect: str, copy: str, rebind: bool, use: str) -> str:
    name = "outs" if rebind else "t"
    return (
        "import numpy as np\nimport torch\n\n"
        "model = torch.nn.Linear(2, 3)\n"
        + _COLLECT[collect].replace("ONE", "torch.ones(2)")
        + f"{name} = torch.{copy}(outs)\n"
        + _USE[use].replace("VAR", name)
    )


_CHILD = """
import io, json, sys, traceback, contextlib
import torch

def run(path):
    out = io.StringIO()
    torch.manual_seed(0)
    names = {"__name__": "__main__"}
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(open(path).read(), path, "exec"), names)
        return [out.getvalue(), None]
    except Exception as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
        return [out.getvalue(), [type(exc).__name__, frames[-1].lineno if frames else None]]

jobs = json.loads(open(sys.argv[1]).read())
cpu = [[run(original), run(ported)] for original, ported in jobs]
from torchport.testing import simulate_accelerator
simulate_accelerator()
sim = [run(ported) for _, ported in jobs]
print(json.dumps([c + [s] for c, s in zip(cpu, sim)]))
"""

_CASE = st.tuples(
    st.sampled_from(sorted(_COLLECT)),
    st.sampled_from(["tensor", "as_tensor", "asarray"]),
    st.booleans(),
    st.sampled_from(sorted(_USE)),
)  # fmt: skip


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@example(
    cases=[
        ("comprehension", "tensor", False, "meets the bias"),  # VlasovElectric's, reduced
        ("append", "as_tensor", False, "fed to the model"),
        ("list", "asarray", False, "meets the bias"),
        ("comprehension", "tensor", True, "read by numpy"),  # `outs = torch.tensor(outs)`
        ("tuple", "tensor", True, "fed to the model"),
    ]
)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_CASE, min_size=1, max_size=8))
def test_a_copy_of_a_list_of_device_tensors_is_placed_or_reported(
    cases: list[tuple[str, str, bool, str]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        jobs, left = [], []
        for index, case in enumerate(cases):
            source = _program(*case)
            original, ported = Path(tmp) / f"o{index}.py", Path(tmp) / f"p{index}.py"
            outcome = port_text(source, str(ported))
            assert not outcome.failures, outcome.failures
            original.write_text(source)
            ported.write_text(outcome.source)
            left.append({f.line for f in outcome.remaining})
            jobs.append((str(original), str(ported)))
        results = in_a_child(_CHILD, jobs)
    for case, (cpu, ported_cpu, sim), found in zip(cases, results, left, strict=True):
        assert cpu[1] is None, (case, cpu)  # the original runs on the CPU
        assert ported_cpu == cpu, (case, ported_cpu, cpu)  # so does its port, with its value
        if sim[1] is None:
            assert sim[0] == cpu[0], (case, sim, cpu)
        else:  # a stop where the port said there is something to move
            assert sim[1][1] in found, (case, sim, found)

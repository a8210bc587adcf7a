"""A hook a base class's ``__init__`` calls is run before the module has a parameter.

``class DigitsAutoencoder(BaseAutoencoder)`` overrides ``_build_encoder(self, n)``, which
``BaseAutoencoder.__init__`` (another file) calls to make ``self.encoder``. The port took
the hook for a method run after construction and wrote ``nn.Linear(n, 32).to(next(
self.parameters()).device)``: ``next`` raised ``StopIteration`` while the model was being
made, on the CPU too, and the port said "0 left" (held-out set h31m, QNNAS train_encoder).
Now a method that a base's ``__init__`` may run (one of this file whose chain calls it, or
one of another file and a method this file never calls) gets no device of the parameters:
the port leaves its finding instead.

Programs are generated: the base in the same file or imported from another; the subclass
with its own ``__init__`` (calling ``super().__init__``) or none; the base with a weight
made before the hook or not; the hook returning a module, assigning one to ``self``, or
returning a tensor the base keeps as a plain attribute. The oracle runs the original and
the port on the CPU (same printed value: a fix never breaks the CPU run), and the port on
the simulated accelerator in a child: it runs to its end with the CPU's value, or stops at
the hook's tensor or its use, where the port left a finding.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import in_a_child
from torchport.check.port import port_paths

pytest.importorskip("torch")

_HOOKS = {
    "returns a module": ("        return nn.Sequential(nn.Linear(n, 3), nn.ReLU())\n"),
    "assigns a module": ("        self.head = nn.Linear(n, 3)\n        return self.head\n"),
    "returns a tensor": ("        return torch.ones(n)\n"),
}


def _base(weight_first: bool) -> str:
    return (
        "class Base(nn.Module):\n"
        "    def __init__(self, n):\n"
        "        super().__init__()\n"
        + ("        self.pre = nn.Linear(n, n)\n" if weight_first else "")
        + "        self.body = self._build(n)\n\n"
        "    def _build(self, n):\n"
        "        raise NotImplementedError\n"
    )


def _program(apart: bool, own_init: bool, weight_first: bool, hook: str) -> tuple[str, str]:
    """(the program, the base module beside it: empty where the base is in the program)."""
    head = "import torch\nimport torch.nn as nn\n\n"
    base = head + _base(weight_first)
    lines = head + ("from base import Base\n\n\n" if apart else _base(weight_first) + "\n\n")
    lines += "class Net(Base):\n"
    if own_init:
        lines += "    def __init__(self, n):\n        super().__init__(n)\n"
        lines += "        self.extra = nn.Linear(n, n)  # a weight of its own, after the hook\n\n"
    lines += "    def _build(self, n):\n" + _HOOKS[hook] + "\n"
    lines += "    def forward(self, x):\n"
    lines += "        return x * self.body  # use\n" if hook == "returns a tensor" else ""
    lines += "        return self.body(x)  # use\n" if hook != "returns a tensor" else ""
    lines += "\n\nmodel = Net(4)\nx = torch.ones(2, 4)\nprint(round(model(x).sum().item(), 4))\n"
    return lines, base if apart else ""


_CHILD = """
import io, json, runpy, sys, traceback, contextlib
import torch

def run(path, folder):
    sys.path.insert(0, folder)
    sys.modules.pop("base", None)
    out = io.StringIO()
    torch.manual_seed(0)
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
        return [out.getvalue(), None]
    except Exception as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
        return [out.getvalue(), [type(exc).__name__, frames[-1].lineno if frames else None]]
    finally:
        sys.path.remove(folder)

jobs = json.loads(open(sys.argv[1]).read())
cpu = [[run(original, here), run(ported, there)] for original, ported, here, there in jobs]
from torchport.testing import simulate_accelerator
simulate_accelerator()
sim = [run(ported, there) for _, ported, _, there in jobs]
print(json.dumps([c + [s] for c, s in zip(cpu, sim)]))
"""

_CASE = st.tuples(
    st.booleans(), st.booleans(), st.booleans(), st.sampled_from(sorted(_HOOKS))
)  # fmt: skip


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@example(
    cases=[
        (True, False, False, "returns a module"),  # QNNAS's train_encoder: the base apart
        (False, False, False, "returns a module"),  # the base in the file
        (True, True, False, "returns a module"),  # `super().__init__(n)` runs the hook
        (False, False, False, "assigns a module"),
        (False, True, True, "returns a tensor"),  # a CPU tensor kept: the stop is reported
    ]
)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_CASE, min_size=1, max_size=6))
def test_a_hook_a_base_init_runs_gets_no_device_of_the_parameters(
    cases: list[tuple[bool, bool, bool, str]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        jobs, left, regions = [], [], []
        for index, case in enumerate(cases):
            source, base = _program(*case)
            folders = [Path(tmp) / f"c{index}" / side for side in ("original", "ported")]
            for folder in folders:
                folder.mkdir(parents=True)
                (folder / "program.py").write_text(source)
                if base:
                    (folder / "base.py").write_text(base)
            result = port_paths([folders[1]])  # the project, as `torchport port DIR`
            assert not result.errors, result.errors
            ported = folders[1] / "program.py"
            lines = ported.read_text().splitlines()
            region = {
                i
                for i, line in enumerate(lines, 1)
                if line.endswith("# use") or "torch.ones(n)" in line
            }
            regions.append(region)
            left.append({f.line for f in result.remaining if Path(f.path).name == "program.py"})
            jobs.append(
                (*(str(f / "program.py") for f in folders), str(folders[0]), str(folders[1]))
            )
        results = in_a_child(_CHILD, jobs)
    for case, (cpu, ported_cpu, sim), found, region in zip(
        cases, results, left, regions, strict=True
    ):
        assert cpu[1] is None, (case, cpu)  # the original runs on the CPU
        assert ported_cpu == cpu, (case, ported_cpu, cpu)  # so does its port, with its value
        if sim[1] is None:
            assert sim[0] == cpu[0], (case, sim, cpu)
        else:  # a stop at the hook's tensor or its use, and the port said so there
            assert sim[1][1] in region and found & region, (case, sim, found)

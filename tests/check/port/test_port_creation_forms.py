"""``port`` leaves no tensor that meets the model on the CPU, or says so: generated programs.

Each program builds a model and feeds it inputs made in one of many ways (factories,
the legacy typed constructors, ``Variable``, in-place initializers, NumPy, a plain
tensor attribute of the module), in the loop or in a step function the loop hands
each batch to. It is ported (``port_text``) and run with ``meta``
standing in for the accelerator (``port_runner.py``: one subprocess for the module, each
example's batch handed to it in turn, as the scripts of one batch are). The
oracle is the run itself: a program the port calls done (no finding left) must run
every forward with every parameter, buffer and input on the accelerator and raise no
device error.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check.port import port_text

HERE = Path(__file__).parent
INPUTS = [
    "torch.FloatTensor([[1.0, 2.0, 3.0]])",
    "torch.Tensor(1, 3).uniform_(-1, 1)",
    "torch.Tensor(1, 3).normal_().abs_()",
    "Variable(torch.FloatTensor([[1.0, 2.0, 3.0]]))",
    "torch.DoubleTensor([[1.0, 2.0, 3.0]]).float()",
    "torch.tensor([[1.0, 2.0, 3.0]])",
    "torch.randn(1, 3)",
    "torch.from_numpy(np.ones((1, 3), dtype='float32'))",
    "torch.ones(1, 3) * 2",
    "torch.zeros(1, 3).fill_(1.5)",
]
TARGETS = [
    "torch.LongTensor([1])",
    "Variable(torch.LongTensor([0]))",
    "torch.tensor([1])",
    "torch.IntTensor([1]).long()",
]
SCALES = ["None", "torch.FloatTensor([2.0])", "torch.tensor([0.5, 1.0])", "torch.tensor(2.0)"]


def program(x: str, y: str, scale: str, in_function: bool = False) -> str:
    use = "out = out * self.scale\n        " if scale != "None" else ""
    if in_function:  # the loop hands each batch to a step function that unpacks it
        return (
            "import numpy as np\nimport torch\nimport torch.nn as nn\n"
            "from torch.autograd import Variable\n\n\n"
            "def train_step(model, opt, batch):\n    x, y = batch\n"
            "    loss = nn.functional.cross_entropy(model(x), y)\n"
            "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n    return loss\n\n\n"
            "model = nn.Linear(3, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            f"data = [({x}, {y}) for _ in range(2)]\n"
            "for batch in data:\n    loss = train_step(model, opt, batch)\n"
            "print(float(loss))\n"
        )
    return (
        "import numpy as np\nimport torch\nimport torch.nn as nn\n"
        "from torch.autograd import Variable\n\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.fc = nn.Linear(3, 2)\n        self.scale = {scale}\n\n"
        f"    def forward(self, x):\n        out = self.fc(x)\n        {use}return out\n\n\n"
        "model = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        f"x = {x}\ny = {y}\n"
        "for _ in range(2):\n    loss = nn.functional.cross_entropy(model(x), y)\n"
        "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
        "print(float(loss))\n"
    )


@pytest.fixture(scope="module")
def run_meta(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[Path, Path], None]]:
    """Run a batch of jobs in one ``port_runner.py meta --serve`` child kept for the module.

    Without torch (the checker-alone leg of .ci/run) the child cannot start: skip here, at
    once. A failure the conftest turns into a skip only after the test is done would first
    have hypothesis shrink it and explain it under its tracer, every step porting six
    programs: more than pytest-timeout's 300 s on a loaded 2-core machine, where the
    example database has not kept the failing example yet."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("port_runner.py runs the ported programs with torch, not installed here")
    command = [sys.executable, str(HERE / "port_runner.py"), "meta", "--serve"]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None

    def run(todo: Path, out: Path) -> None:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(f"{todo} {out}\n")
        child.stdin.flush()
        answer = child.stdout.readline()
        assert answer == "done\n", f"port_runner.py ended ({child.poll()}): {answer!r}"

    try:
        yield run
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=60)
        finally:
            child.kill()
            child.stdout.close()


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.tuples(
            st.sampled_from(INPUTS),
            st.sampled_from(TARGETS),
            st.sampled_from(SCALES),
            st.booleans(),
        ),
        min_size=6,
        max_size=6,
    )
)
def test_port_leaves_nothing_on_the_cpu_unsaid(
    tmp_path_factory: pytest.TempPathFactory,
    run_meta: Callable[[Path, Path], None],
    drawn: list[tuple[str, str, str, bool]],
) -> None:
    work = tmp_path_factory.mktemp("port")
    jobs: list[dict[str, str]] = []
    left: dict[str, list[str]] = {}
    for i, (x, y, scale, in_function) in enumerate(drawn):
        outcome = port_text(program(x, y, scale, in_function))
        script = work / f"p{i}.py"
        script.write_text(outcome.source)
        jobs.append({"name": script.name, "script": str(script), "workdir": str(work)})
        left[script.name] = [f.code for f in outcome.remaining]
    todo, out = work / "jobs.json", work / "out.json"
    todo.write_text(json.dumps(jobs))
    run_meta(todo, out)
    for result in json.loads(out.read_text()):
        if left[result["name"]]:
            continue  # reported: the port said what it could not move
        source = (work / result["name"]).read_text()
        assert result["error"] is None and not result["off_device"], (result, source)
        assert result["forwards"]["train"] > 0, (result, source)

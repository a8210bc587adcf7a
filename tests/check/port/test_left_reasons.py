"""What the port leaves, and why it says so: three classes of h31n's held-out set (issue 31).

* **A project module's tuple of CPU tensors** (``batch_names, x, y = get_batch(n)`` of the
  project's ``dataio.py``, each tensor made by a torch factory there): the port moves the
  tensors where the tuple is unpacked, as it does for a helper of the same file; a value of
  the project's own code it cannot follow is TP523's ("which the port cannot follow"), never
  a library's TP521 ("which the port cannot see into").
* **A function called nowhere**: its parameters never hold anything; where its repository
  (a ``.git`` folder) shows no call and no other use of its name, nothing is reported; where
  the file has no call but the repository is not known, or another file or text names it,
  TP520 says it is called nowhere in this file (never "its callers are not all in this file").
* **A CUDA-or-CPU choice kept** (``"cuda" if torch.cuda.is_available() else "cpu"``): the
  port keeps the program's own choice, and reports it (TP109, no fix applied), so its
  summary is never "0 left" for a program that runs on the CPU where MPS or XPU is there.

Oracles apart from the port: the generated project's own table (which items are tensors),
and runs in a child: the original and the port on the CPU print the same; the port on the
simulated accelerator with no CUDA redirect (as on MPS or XPU) runs to its end with the
same output, or stops at a line where a finding was left; where the run ends with the
model on the CPU, a finding names the choice's line.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.preloaded import run_python
from torchport.check import port_paths
from torchport.check.port import port_text

pytest.importorskip("torch")

# ------------------------------------------------------------ a project module's tuple

_ITEMS = {  # (the statement binding `vK` in get_batch, or "" for inline; the returned value)
    "tensor of numpy": ("    vK = torch.tensor(np.full((n, 4), 0.5, dtype=np.float32))\n", "vK"),
    "from_numpy": ("", "torch.from_numpy(np.ones((n, 4), dtype=np.float32))"),
    "zeros, then float": ("    vK = torch.zeros(n, 4).float()\n", "vK"),
    "names": ("", '["a"] * n'),
    "count": ("", "n"),
    "unknown": ("    vK = make(n)\n", "vK"),  # a device argument: the port does not follow it
}
_TENSORS = frozenset({"tensor of numpy", "from_numpy", "zeros, then float", "unknown"})
_USE = {True: "print(round(model(VK).sum().item(), 4))\n", False: "print(len(str(VK)))\n"}


def _project(items: list[str], in_loop: bool) -> dict[str, str]:
    body = "".join(_ITEMS[k][0].replace("vK", f"v{i}") for i, k in enumerate(items))
    returned = ", ".join(_ITEMS[k][1].replace("vK", f"v{i}") for i, k in enumerate(items))
    dataio = (
        "import numpy as np\nimport torch\n\n\n"
        "def make(n, device=None):\n    return torch.ones(n, 4, device=device)\n\n\n"
        f"def get_batch(n):\n{body}    return ({returned},)\n"
    )
    names = ", ".join(f"v{i}" for i in range(len(items)))
    uses = "".join(_USE[k in _TENSORS].replace("VK", f"v{i}") for i, k in enumerate(items))
    step = f"{names}, = get_batch(3)\n{uses}"
    if in_loop:
        step = "for step in range(2):\n" + "".join(f"    {line}\n" for line in step.splitlines())
    train = (
        "import torch\n\nfrom dataio import get_batch\n\n"
        "torch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2)\n" + step
    )
    return {"dataio.py": dataio, "train.py": train}


_PROJECT_CHILD = """
import contextlib, io, json, os, sys, traceback
import torch

def run(folder):
    out = io.StringIO()
    sys.modules.pop("dataio", None)
    sys.path.insert(0, folder)
    path = os.path.join(folder, "train.py")
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
        return [out.getvalue(), None]
    except Exception as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
        return [out.getvalue(), frames[-1].lineno if frames else -1]
    finally:
        sys.path.remove(folder)

jobs = json.loads(open(sys.argv[1]).read())
cpu = [[run(original), run(ported)] for original, ported in jobs]
from torchport.testing import simulate_accelerator
simulate_accelerator()
print(json.dumps([c + [run(ported)] for c, (_, ported) in zip(cpu, jobs)]))
"""


def _child(code: str, jobs: list[tuple[str, str]] | list[str]) -> list[list[list[object]]]:
    with tempfile.TemporaryDirectory() as tmp:
        listed = Path(tmp) / "jobs.json"
        listed.write_text(json.dumps(jobs))
        # TORCHPORT_DEVICE unset (as empty: no device asked for): the suite's own environment
        # otherwise, so the child is forked off the preloaded server
        env = {k: v for k, v in os.environ.items() if k != "TORCHPORT_DEVICE"}
        done = run_python(code, str(listed), timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    found: list[list[list[object]]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


_CASE = st.tuples(
    st.lists(st.sampled_from(sorted(_ITEMS)), min_size=2, max_size=4).filter(
        lambda items: any(k in _TENSORS for k in items)
    ),
    st.booleans(),
)


@example(
    cases=[
        (["names", "tensor of numpy", "tensor of numpy", "tensor of numpy"], False),  # lzc's
        (["from_numpy", "count"], True),
        (["names", "unknown", "zeros, then float"], False),
    ]
)
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_CASE, min_size=1, max_size=4))
def test_a_project_functions_tuple_of_cpu_tensors_is_moved_or_reported_as_the_projects(
    cases: list[tuple[list[str], bool]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        jobs, lefts = [], []
        for index, (items, in_loop) in enumerate(cases):
            files = _project(items, in_loop)
            original, ported = Path(tmp) / f"o{index}", Path(tmp) / f"p{index}"
            for folder in (original, ported):
                folder.mkdir()
                for name, text in files.items():
                    (folder / name).write_text(text)
            result = port_paths([str(ported)])
            assert not result.errors, result.errors
            lefts.append(result.remaining)
            jobs.append((str(original), str(ported)))
        results = _child(_PROJECT_CHILD, jobs)
    for (items, in_loop), left, (cpu, ported_cpu, sim) in zip(cases, lefts, results, strict=True):
        case = (items, in_loop, [(f.line, f.code, f.message) for f in left])
        assert cpu[1] is None and ported_cpu == cpu, (case, cpu, ported_cpu)
        # the project's function is code the port reads: never "a library it cannot see into"
        assert not [f for f in left if f.code == "TP521"], case
        if "unknown" not in items:  # every tensor it returns is a CPU tensor: all moved
            assert not left and sim == cpu, (case, sim)
        elif sim[1] is not None:
            assert sim[1] in {f.line for f in left if f.path.endswith("train.py")}, (case, sim)
        else:
            assert sim == cpu, (case, sim)


# ------------------------------------------------------------ a function called nowhere

_CALLERS = {
    "none": ("", {}),
    "this file, a tensor": ("helper(torch.ones(2, 4))\n", {}),
    "another file": ("", {"other.py": "import torch\nfrom train import helper\n\nhelper(X)\n"}),
    "a document": ("", {"README.md": "# helper\n\nCall `helper(x)` on your batch.\n"}),
    "a string": ('__all__ = ["helper"]\n', {}),
    "passed on": ("callbacks = [helper]\n", {}),
}


def _unreported(caller: str, repository: bool) -> bool:
    """The hand-made table: a parameter of a function called nowhere, and whose name is
    used nowhere else in a known repository, holds nothing: no finding."""
    return repository and caller == "none"


@settings(max_examples=12, deadline=None)
@given(caller=st.sampled_from(sorted(_CALLERS)), repository=st.booleans())
def test_a_function_called_nowhere_is_never_reported_as_called_elsewhere(
    caller: str, repository: bool
) -> None:
    own, others = _CALLERS[caller]
    source = (
        "import torch\n\nmodel = torch.nn.Linear(4, 2)\n\n\n"
        "def helper(a):\n    return model(a)\n\n\n" + own
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        (root / "src").mkdir(parents=True)
        if repository:
            (root / ".git").mkdir()
        path = root / "src" / "train.py"
        path.write_text(source)
        for name, text in others.items():
            (root / "src" / name).write_text(text)
        outcome = port_text(source, str(path))
    line = outcome.source.splitlines().index("def helper(a):") + 1  # (the port adds lines)
    left = [f for f in outcome.remaining if f.line == line]
    if caller == "this file, a tensor":
        assert not left, left  # its one caller hands it a tensor: moved there
    elif _unreported(caller, repository):
        assert not left, left
    else:
        assert [f.code for f in left] == ["TP520"], left
        message = left[0].message
        assert "callers are not all in this file" not in message or caller == "passed on"
        if caller != "passed on":
            assert "`helper` is called nowhere in this file" in message, message


# ------------------------------------------------------------ a CUDA-or-CPU choice kept

_CHOICES = {
    "device idiom": 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
    "string idiom": 'device = "cuda" if torch.cuda.is_available() else "cpu"\n',
    "indexed": 'device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")\n',
    "if/else": (
        "if torch.cuda.is_available():\n    device = torch.device('cuda')\n"
        "else:\n    device = torch.device('cpu')\n"
    ),
    "flag": "use_cuda = torch.cuda.is_available()\n"
    'device = torch.device("cuda" if use_cuda else "cpu")\n',
    "none (the port places)": "",
}
_BODIES = {
    "model and batch": "model = torch.nn.Linear(4, 2).to(device)\nx = torch.ones(3, 4).to(device)\n"
    "OUT.append(model(x).detach())\n",
    "made on the device": "w = torch.ones(4, 2, device=device, requires_grad=True)\n"
    "x = torch.ones(3, 4, device=device)\nOUT.append((x @ w).detach())\n",
}

_CHOICE_CHILD = """
import json, sys
import torch
from torchport.testing import simulate_accelerator
simulate_accelerator()  # no CUDA redirect: torch.cuda.is_available() is False, as on MPS/XPU
found = []
for source in json.loads(open(sys.argv[1]).read()):
    out = []
    exec(compile(source, "<program>", "exec"), {"OUT": out, "__name__": "__main__"})
    found.append([[str(t.device.type) for t in out]])
print(json.dumps(found))
"""


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(
        st.tuples(st.sampled_from(sorted(_CHOICES)), st.sampled_from(sorted(_BODIES))),
        min_size=1,
        max_size=6,
    )
)
@example(cases=[(c, b) for c in sorted(_CHOICES) for b in sorted(_BODIES)])
def test_a_kept_cuda_or_cpu_choice_is_reported_where_the_program_stays_on_the_cpu(
    cases: list[tuple[str, str]],
) -> None:
    ported, lefts = [], []
    for choice, body in cases:
        if _CHOICES[choice]:
            source = "import torch\n\n" + _CHOICES[choice] + _BODIES[body]
        else:  # no choice: a CPU-only program the port places
            plain = _BODIES[body].replace(".to(device)", "").replace(", device=device", "")
            source = "import torch\n\n" + plain
        outcome = port_text(source, "<program>")
        assert not outcome.failures, outcome.failures
        assert _CHOICES[choice] in outcome.source  # the program's own choice is kept as written
        ported.append(outcome.source)
        lefts.append((source, outcome.remaining))
    runs = _child(_CHOICE_CHILD, ported)
    for (choice, body), (source, left), (devices,) in zip(cases, lefts, runs, strict=True):
        choice_lines = set(range(3, 3 + _CHOICES[choice].count("\n")))
        if "cpu" in devices:  # on an accelerator that is not CUDA, it computed on the CPU
            assert {f.line for f in left if f.code == "TP109"} & choice_lines, (choice, body, left)
        else:
            assert not left, (choice, body, source, left)

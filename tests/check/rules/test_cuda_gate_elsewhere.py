"""Sample P's test-code classes: a CUDA gate one step away from the line (`_cuda_gates.py`).

fairscale's distributed tests put the gate (``@skip_if_single_gpu``, ``@pytest.mark.gpu``,
``if not torch.cuda.is_available(): return``) on the test and the CUDA lines in a worker
it spawns, a model class or a helper it calls. Such a helper uses CUDA on purpose when
only gated tests name it; one ungated test naming it too runs it without CUDA (reported).
Generated files draw the CUDA line (TP101, TP102, TP110, TP115, TP402), how the helper is
named (a call, ``mp.spawn``, ``functools.partial``, a model class, a ``parametrize`` list
or module-level cases the test is parametrized over), the gate of each of
two callers, and whether the second caller exists; the oracle is that standard written
out on the parts, apart from the code.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths
from torchport.check._engine import check_text, ruleset_for

LINES = {
    "x = x.cuda()": "TP101",
    "torch.cuda.set_device(rank)": "TP102",
    "m = DDP(m, device_ids=[rank])": "TP110",
    'd = f"cuda:{rank}"': "TP115",
    "torch.cuda.manual_seed(1234)": "TP402",
}
# A caller's gate, and whether it runs the caller only where CUDA is.
GATES = {
    "": False,
    "@skip_if_single_gpu": True,
    "@pytest.mark.gpu": True,
    "@pytest.mark.skipif(not torch.cuda.is_available(), reason='cuda')": True,
    "    if not torch.cuda.is_available():\n        return": True,  # a body gate
    "@pytest.mark.slow": False,
    "    if not os.environ.get('RUN'):\n        return": False,
}
# How a caller names the helper (`{h}`: its name): its decorator, its body.
USES = {
    "call": ("", "    {h}(0, x, m)"),
    "spawn": ("", "    mp.spawn({h}, args=(x, m), nprocs=2)"),
    "partial": ("", "    fn = functools.partial({h}, x=x)\n    fn(0, m)"),
    "model": ("", "    {h}().run(0, x, m)"),
    "parametrize": ('@pytest.mark.parametrize("fn", [{h}])', "    fn(0, x, m)"),
    "module data": ('@pytest.mark.parametrize("case", CASES)', '    case["fn"](0, x, m)'),
}


def _caller(name: str, gate: str, use: str, helper: str) -> list[str]:
    decorator, call = USES[use]
    head = [gate] if gate.startswith("@") else []
    head += [decorator.format(h=helper)] if decorator else []
    body = [gate] if gate and not gate.startswith("@") else []
    return [*head, f"def {name}(x, m):", *body, call.format(h=helper), ""]


@given(
    line=st.sampled_from(sorted(LINES)),
    use=st.sampled_from(sorted(USES)),
    first=st.sampled_from(sorted(GATES)),
    second=st.sampled_from([None, *sorted(GATES)]),
)
@example(line="x = x.cuda()", use="spawn", first="@skip_if_single_gpu", second=None)
@example(line="x = x.cuda()", use="model", first="@pytest.mark.gpu", second=None)
@example(line="torch.cuda.manual_seed(1234)", use="call", first="@skip_if_single_gpu", second=None)
@example(line="m = DDP(m, device_ids=[rank])", use="partial", first="@pytest.mark.gpu", second="")
@example(line='d = f"cuda:{rank}"', use="call", first="@pytest.mark.slow", second=None)
@example(line="x = x.cuda()", use="parametrize", first="@skip_if_single_gpu", second=None)
@example(line="x = x.cuda()", use="module data", first="@skip_if_single_gpu", second=None)
@example(line="x = x.cuda()", use="module data", first="@skip_if_single_gpu", second="")
def test_a_helper_only_gated_tests_name_is_about_cuda(
    line: str, use: str, first: str, second: str | None
) -> None:
    code = LINES[line]
    helper = "Model" if use == "model" else "run_worker"
    if use == "model":
        defn = ["class Model:", "    def run(self, rank, x, m):", f"        {line}", ""]
    else:
        defn = ["def run_worker(rank, x, m):", f"    {line}", "    return x", ""]
    if use == "module data":
        defn += ['CASES = [{"fn": run_worker, "size": 2}]', ""]
    callers = _caller("test_first", first, use, helper)
    if second is not None:
        callers += _caller("test_second", second, use, helper)
    head = ["import functools", "import os", "import pytest", "import torch"]
    head += ["import torch.multiprocessing as mp", "from torch.nn.parallel import DDP"]
    head += ["from project.testing import skip_if_single_gpu", ""]
    source = "\n".join([*head, *defn, *callers])
    gated = GATES[first] and (second is None or GATES[second])
    found = check_text(source, "tests/test_parallel.py", ruleset_for([code], None)).findings
    assert bool(found) != gated, (source, found)


_SET_UP = [
    "    def setUp(self):",
    "        if not torch.cuda.is_available():",
    "            raise unittest.SkipTest('CUDA not available')",
]
_OTHER_SET_UP = [
    "    def setUp(self):",
    "        if sys.platform == 'win32':",
    "            raise unittest.SkipTest('windows')",
]
_SPAWNER = [
    "import torch",
    "import torch.multiprocessing as mp",
    "def get_world_sizes():",
    "    limit = torch.cuda.device_count()",
    "    return [x for x in [1, 2, 4, 8] if x <= limit]",
    "def spawn_for_all_world_sizes(fn, world_sizes=get_world_sizes()):",
]
# A gate on the module, a base class or a spawner; (what the test file holds, what the
# project's `tests/common.py` holds, whether the test runs only where CUDA is).
ELSEWHERE = {
    "pytestmark": (
        ["pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='cuda')"],
        [],
        True,
    ),
    "pytestmark list": (
        ["pytestmark = [pytest.mark.slow, pytest.mark.skipif(torch.cuda.device_count() < 2)]"],
        [],
        True,
    ),
    "pytestmark other": (["pytestmark = pytest.mark.slow"], [], False),
    "setUp here": (
        ["class Base(unittest.TestCase):", *_SET_UP],
        [],
        True,
    ),
    "setUp imported": (
        ["from .common import Base"],
        ["import unittest", "import torch", "class Base(unittest.TestCase):", *_SET_UP],
        True,
    ),
    "setUp imported, another skip": (
        ["from .common import Base"],
        ["import unittest", "import sys", "class Base(unittest.TestCase):", *_OTHER_SET_UP],
        False,
    ),
    "spawner imported": (
        ["from .common import spawn_for_all_world_sizes as spawn"],
        [
            *_SPAWNER,
            "    for world_size in world_sizes:",
            "        mp.spawn(fn, nprocs=world_size)",
        ],
        True,
    ),
    "spawner over a constant": (
        ["from .common import spawn_for_all_world_sizes as spawn"],
        [*_SPAWNER, "    for world_size in [1, 2]:", "        mp.spawn(fn, nprocs=world_size)"],
        False,
    ),
}


def _tests(kind: str, line: str) -> list[str]:
    if kind.startswith("setUp"):
        return ["class TestRun(Base):", "    def test_run(self, x, m, rank=0):", f"        {line}"]
    if kind.startswith("spawner"):
        worker = ["def run_worker(rank, x, m):", f"    {line}", ""]
        return [*worker, "def test_run():", "    spawn(run_worker)"]
    return ["def test_run(x, m, rank):", f"    {line}"]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # a folder per example
@given(line=st.sampled_from(sorted(LINES)), kind=st.sampled_from(sorted(ELSEWHERE)))
@example(line="x = x.cuda()", kind="setUp imported")
@example(line="x = x.cuda()", kind="spawner imported")
@example(line="x = x.cuda()", kind="pytestmark")
@example(line="torch.cuda.manual_seed(1234)", kind="spawner imported")
def test_a_gate_on_the_module_a_base_or_a_spawner_makes_cuda_the_subject(
    line: str, kind: str, tmp_path: Path
) -> None:
    here, common, gated = ELSEWHERE[kind]
    head = ["import unittest", "import pytest", "import torch", "from torch.nn.parallel import DDP"]
    root = Path(tempfile.mkdtemp(dir=tmp_path)) / "tests"  # one folder per drawn project
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "common.py").write_text("\n".join(common) + "\n")
    (root / "test_parallel.py").write_text("\n".join([*head, *here, *_tests(kind, line)]) + "\n")
    found = check_paths([root], select=[LINES[line]], jobs=1).findings
    assert bool(found) != gated, (kind, line, found)


@given(first=st.sampled_from(sorted(GATES)), second=st.sampled_from([None, *sorted(GATES)]))
@example(first="@pytest.mark.gpu", second=None)  # composer's `get_base_trainer(device='cuda')`
def test_a_helpers_cuda_default_is_about_cuda_when_only_gated_tests_call_it(
    first: str, second: str | None
) -> None:
    defn = ["def get_trainer(size=4, device='cuda'):", "    return Trainer(device=device)", ""]
    callers = _caller("test_first", first, "call", "get_trainer")
    callers += _caller("test_second", second, "call", "get_trainer") if second is not None else []
    head = ["import os", "import pytest", "import torch", "from project import Trainer", ""]
    source = "\n".join([*head, *defn, *callers])
    gated = GATES[first] and (second is None or GATES[second])
    found = check_text(source, "tests/test_tp.py", ruleset_for(["TP101"], None)).findings
    assert bool(found) != gated, (source, found)

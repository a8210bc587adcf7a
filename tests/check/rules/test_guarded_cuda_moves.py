"""TP101 and a CUDA move under a device check: left to the check, or following the carried device.

The oracle is the table the rule documents, written here apart from the rule: a
move to CUDA under no check is reported; under a test of the device's type it is
ported code and is not (in the arm where the test says CUDA: where it says the tensor
is not on CUDA the move runs on the CPU, MPS and XPU, reported as under no check);
under a CUDA-or-CPU test (availability, a CUDA flag) it is reported exactly when the
code carries its own device (a ``device`` parameter, a ``device`` assignment or
``self.device`` of the class, an ``nn.Module`` or not).
"""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# (test, kind): kind "none" has no test at all.
GUARDS = {
    "none": None,
    "torch.cuda.is_available()": "availability",
    "torch.cuda.device_count() > 0": "availability",
    "use_cuda": "availability",  # a CUDA flag
    "x.is_cuda": "device-type",
    'x.device.type == "cuda"': "device-type",
    'x.device == torch.device("cuda")': "device-type",
    # the arm where `x` is NOT on CUDA: the move runs on the CPU, MPS, XPU (round 5f)
    'x.device != torch.device("cuda", 0)': None,
    "not x.is_cuda": None,
}
MOVES = ("x = x.cuda()", 'x = x.to("cuda")', "x = x.cuda(non_blocking=True)")
CARRIED = ("nothing", "parameter", "assignment", "self-device", "self-device-module")


def program(guard: str, move: str, carried: str) -> str:
    head = "import torch\nimport torch.nn as nn\n\n\n"
    test = "True" if guard == "none" else guard
    body = f"    if {test}:\n        {move}\n    return x\n"
    if carried.startswith("self-device"):
        base = "(nn.Module)" if carried.endswith("module") else ""
        init = '        self.device = torch.device("cuda" if use_cuda else "cpu")\n'
        if base:
            init = "        super().__init__()\n" + init
        method = "    def act(self, x, use_cuda=True):\n" + textwrap.indent(body, "    ")
        return f"{head}class Agent{base}:\n    def __init__(self, use_cuda):\n{init}\n{method}"
    params = "x, use_cuda=True" + (", device=None" if carried == "parameter" else "")
    first = '    device = torch.device("cuda" if use_cuda else "cpu")\n'
    return f"{head}def act({params}):\n{first if carried == 'assignment' else ''}{body}"


@settings(max_examples=120, deadline=None)
@given(
    guard=st.sampled_from(sorted(GUARDS)),
    move=st.sampled_from(MOVES),
    carried=st.sampled_from(CARRIED),
)
def test_reported_as_the_table_says(guard: str, move: str, carried: str) -> None:
    source = program(guard, move, carried)
    kind = GUARDS[guard]
    moved_line = next(i for i, line in enumerate(source.splitlines(), 1) if move in line)
    found = check_text(source, "agent.py", ruleset_for(["TP101"], None)).findings
    reported = any(f.line == moved_line for f in found)
    expected = kind is None or (kind == "availability" and carried != "nothing")
    assert reported == expected, source


def test_fix_follows_the_carried_device_of_a_plain_class() -> None:
    source = program("use_cuda", "x = x.cuda()", "self-device")
    [finding] = check_text(source, "agent.py", ruleset_for(["TP101"], None)).findings
    assert finding.fix is not None
    [edit] = [e for e in finding.fix.edits if e.text]
    assert edit.text == ".to(self.device)"


@settings(max_examples=30, deadline=None)
@given(
    left=st.sampled_from(["dev", "x.device", "self.device"]),
    op=st.sampled_from(["==", "!="]),
    right=st.sampled_from(
        ['torch.device("cuda")', 'torch.device("cuda", 0)', 'torch.device("cuda:1")']
    ),
)
def test_a_cuda_device_compared_is_a_test_not_a_placement(left: str, op: str, right: str) -> None:
    source = f"import torch\n\nflag = {left} {op} {right}\nif {right} {op} {left}:\n    pass\n"
    assert not check_text(source, "m.py", ruleset_for(["TP101"], None)).findings, source


def test_a_cuda_device_placed_is_still_reported() -> None:
    source = 'import torch\n\nx = torch.zeros(2).to(torch.device("cuda"))\n'
    assert check_text(source, "m.py", ruleset_for(["TP101"], None)).findings

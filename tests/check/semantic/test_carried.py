"""Fixes reuse the device the code carries (a ``device`` parameter, ``self.device``, a local).

Oracle: the fixed program is run on this CPU-only machine with the carried device
set to the CPU; the original cannot run here (``.cuda()``), the fixed one must,
and the tensor must land on the device the code carries, not on a new global one.
"""

from __future__ import annotations

import textwrap

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source, fix_source

_MOVES = ("x.cuda()", "x.cuda(non_blocking=True)", 'x.to("cuda")', 'x.to(torch.device("cuda"))')
_HOLDERS = {
    "parameter": "def run(x, {name}):\n    y = {move}\n    return y\n"
    "OUT = run(torch.ones(2), torch.device('cpu'))\n",
    "local": "def run(x, args):\n    {name} = torch.device(args)\n    y = {move}\n    return y\n"
    "OUT = run(torch.ones(2), 'cpu')\n",
    "self": "class Agent:\n    def __init__(self, gpu_ids):\n"
    "        self.device = torch.device('cpu')\n        if gpu_ids:\n"
    "            self.device = torch.device(f'cuda:{{gpu_ids[0]}}')\n"
    "    def act(self, x):\n        y = {move}\n        return y\n"
    "OUT = Agent([]).act(torch.ones(2))\n",
}


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(sorted(_HOLDERS)), st.sampled_from(_MOVES), st.sampled_from(["device", "dev"])
)
def test_a_fix_moves_to_the_device_the_code_carries(holder: str, move: str, name: str) -> None:
    carried = "self.device" if holder == "self" else name
    body = _HOLDERS[holder].format(name=name, move=move)
    source = "import torch\n\n" + body
    fixed = fix_source(source, select=["TP101"], unsafe=True)
    assert fixed != source
    assert "torch.accelerator" not in fixed, f"a second, global device was added:\n{fixed}"
    assert carried in fixed.split("y = ", 1)[1].splitlines()[0]
    found = [f for f in check_source(source, select=["TP101"]) if f.fix is not None]
    assert found and all(f.fix.safety.value == "unsafe" and f.fix.changes for f in found)  # type: ignore[union-attr]
    # a safe fix leaves it: the data would follow another device than the accelerator
    assert fix_source(source, select=["TP101"]) == source
    namespace: dict[str, object] = {}
    exec(compile(fixed, "<fixed>", "exec"), namespace)
    out = namespace["OUT"]
    assert isinstance(out, torch.Tensor) and out.device == torch.device("cpu")


def test_a_carried_cpu_literal_is_not_reused() -> None:
    """`device = "cpu"` is no carried device: it says CPU, not "the device of this run"."""
    source = textwrap.dedent(
        """\
        import torch

        def run(x):
            device = "cpu"
            return x.cuda(), device
        """
    )
    fixed = fix_source(source, select=["TP101"], unsafe=True)
    assert "x.to(device)" not in fixed


# A name `device` that holds no device: `.to(None)` leaves the tensor on the CPU,
# `.to(True)` turns it into a bool tensor, `.to([...])` raises. Reusing it is a broken
# fix; the fix must write the file's own accelerator device instead (issue 34).
_NO_DEVICES = {
    "default None": ("def run(x, device=None):\n    return {move}\n", "run(torch.ones(2))"),
    "flag": (
        "def run(x, device):\n    return {move} if device else x\n",
        "run(torch.ones(2), True)",
    ),
    "default flag": ("def run(x, device=False):\n    return {move}\n", "run(torch.ones(2))"),
    "list": ("def run(x, device=['cpu']):\n    return {move}\n", "run(torch.ones(2))"),
    "indexed": (
        "def run(x, device):\n    return {move}, device[0]\n",
        "run(torch.ones(2), [0])[0]",
    ),
    "annotated": ("def run(x, device: bool):\n    return {move}\n", "run(torch.ones(2), True)"),
    "index arithmetic": (
        "def run(x, device):\n    return {move}, 'cuda:%d' % device\n",
        "run(torch.ones(2), 0)[0]",
    ),
    "self None": (
        "class Agent:\n    def __init__(self):\n        self.device = None\n"
        "    def act(self, x):\n        return {move}\n",
        "Agent().act(torch.ones(2))",
    ),
}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(_NO_DEVICES)), st.sampled_from(_MOVES))
def test_a_name_that_holds_no_device_is_not_reused(kind: str, move: str) -> None:
    body, call = _NO_DEVICES[kind]
    source = "import torch\n\n" + body.format(move=move) + f"OUT = {call}\n"
    fixed = fix_source(source, select=["TP101"], unsafe=True)
    moved = [line for line in fixed.splitlines() if "x.to(" in line or "x.cuda(" in line]
    reused = "self.device" if kind.startswith("self") else "to(device"  # the global is `_device`
    assert all(reused not in line for line in moved), fixed
    if fixed != source:  # the file's own device instead: here the CPU (no accelerator)
        namespace: dict[str, object] = {}
        exec(compile(fixed, "<fixed>", "exec"), namespace)
        out = namespace["OUT"]
        assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
        assert out.device == torch.device("cpu")

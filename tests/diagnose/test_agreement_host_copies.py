"""The CPU prediction against the simulated device, on programs that bring values to the host
and read them later.

Oracle: the simulated accelerator (``sim:0``) runs each program with CUDA's device rules and
counts every copy and host wait it really makes; ``tp.audit()`` on the CPU predicts the same
run (see test_agreement.py for how the two are kept apart). Per source line they must count
the same.

The programs move device values to the host in every way the prediction claims to follow
(``.cpu()``, ``.to("cpu")``, ``.to(torch.device("cpu"))``, ``.to(device="cpu")`` of a
temporary; ``z = z.cpu()``; ``.tolist()`` and ``.numpy()`` results made into tensors; what
is computed from those alone; a move back with ``.to(dev)``), then read them
(``int(c[i])`` in a loop, ``bool``, ``.item()``, ``.tolist()``, sums) and read the device
tensor they came from. Left out, because one CPU object stands for two tensors there and
the prediction does not claim to tell them apart (``_move_alias``): ``y = x.cpu()`` of a
name that stays bound, whose reads are predicted as waits. ``torch.from_numpy``, which no
mode of torch's sees, is heard through the audit's wrapper on the ``torch`` module.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchport as tp
from tests.sim.isolated import assert_predicted_as_measured, audit_counts

pytestmark = pytest.mark.needs_simulator

SETUP = ["x = torch.randn(16, device=dev)"]

MOVES = [
    "c = (x > 0).cpu()",
    "c = (x * 2).to('cpu')",
    "c = (x + 1).to(torch.device('cpu'))",
    "c = x.sum(0, keepdim=True).to(device='cpu')",
    "c = x.abs(); c = c.cpu()",
    "c = torch.tensor((x > 0).tolist())",
    "c = torch.as_tensor((x * 2).cpu().numpy())",
    "c = torch.tensor(x.tolist())",
    "c = torch.tensor((x > 0).cpu())",
    "c = (x > 0).cpu() + 1",
    "c = (x - 1).cpu()[1:5]",
    "c = (x > 0).float().cpu()",
    "c = x.argmax(0, keepdim=True).cpu()",
    "c = x.detach().cpu()",
    "c = torch.from_numpy((x > 0).cpu().numpy())",
    "c = torch.randn(16, device=dev).cpu()",
]
DERIVED = [
    "c = c * 2",
    "c = c[1:] if c.numel() > 1 else c",
    "c = c.to(dev)",
    "c = c.cpu()",
    "c = c.sum(0, keepdim=True)",
]
READS = [
    "_ = int(c[0])",
    "_ = bool(c[0])",
    "_ = float(c.sum())",
    "_ = c.tolist()",
    "_ = c.max().item()",
    "for i in range(3): _ = int(c[i % c.numel()])",
    "_ = x[0].item()",
    "_ = float(x.sum())",
]


@st.composite
def programs(draw: st.DrawFn) -> list[str]:
    body = [draw(st.sampled_from(MOVES))]
    body += draw(st.lists(st.sampled_from(MOVES + DERIVED + READS), min_size=1, max_size=6))
    return body


def _program(body: list[str]) -> str:
    lines = ["import torch", "def prog(dev):"] + [f"    {line}" for line in SETUP + body]
    return "\n".join(lines) + "\n"


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(programs(), min_size=8, max_size=8))
def test_reads_of_what_was_moved_to_the_host_are_predicted_as_the_device_counts(
    batch: list[list[str]],
) -> None:
    sources = [_program(body) for body in batch]
    assert_predicted_as_measured(sources, notes_allowed=True)


def test_the_adder_evaluation_reads_its_host_copy_without_a_wait() -> None:
    # minGPT's projects/adder/adder.py: `correct = (d3i_pred == d3i_gt).cpu()`, then
    # `int(correct[i])` per example. One copy to the host and no wait on the device.
    body = [
        "pred = x > 0",
        "gt = x > 0.5",
        "correct = (pred == gt).cpu()",
        "for i in range(4): _ = int(correct[i]); _ = bool(correct[i])",
    ]
    (counted,) = audit_counts([_program(body)])
    first = len(SETUP) + 3  # the body's first line: after the import, def and setup lines
    assert counted["measured"] == {f"{first + 2} copy": 1}
    assert counted["predicted"] == counted["measured"]


def test_a_name_still_bound_to_the_device_tensor_keeps_its_waits() -> None:
    # `y = x.cpu()` on the CPU hands back `x` itself; x is still the device's in the
    # accelerator run, so reading it waits there and the prediction must say so.
    # The same where the receiver is kept elsewhere: an attribute, a no-op conversion of
    # it, a function that returns it.
    body = [
        "y = x.cpu()",
        "_ = x[0].item()",
        "_ = float(x.sum())",
        "h = type('Holder', (), {})(); h.t = x * 1",
        "y = h.t.float().cpu()",
        "_ = h.t[0].item()",
        "y = (lambda: h.t)().cpu()",
        "_ = h.t[1].item()",
        "y = x.contiguous().cpu()",
        "_ = x[2].item()",
    ]
    (counted,) = audit_counts([_program(body)])
    first = len(SETUP) + 3
    assert counted["measured"] == {
        f"{first} copy": 1,
        f"{first + 1} sync": 1,
        f"{first + 2} sync": 1,
        f"{first + 4} copy": 1,
        f"{first + 5} sync": 1,
        f"{first + 6} copy": 1,
        f"{first + 7} sync": 1,
        f"{first + 8} copy": 1,
        f"{first + 9} sync": 1,
    }
    assert counted["predicted"] == counted["measured"]


def test_a_move_of_a_name_that_stays_bound_is_told_apart_by_the_name_read(tmp_path: Path) -> None:
    """``y = x.cpu()`` of a name that stays bound: ``y`` read (in a comprehension too) is
    the host's, no wait; nothing is left unpredicted (see test_agreement_two_faced.py)."""
    script = tmp_path / "held.py"
    script.write_text(
        "def run(torch, tp, dev):\n"
        "    with tp.audit() as report:\n"
        "        x = torch.ones(3).to(dev) * 2\n"
        "        y = x.cpu()\n"  # line 4: x is still the program's
        "        z = (x == 2).cpu()\n"  # line 5: a temporary, followed
        "        _ = [int(y[i]) + int(z[i]) for i in range(3)]\n"
        "    return report\n"
    )
    namespace: dict[str, object] = {}
    exec(compile(script.read_text(), str(script), "exec"), namespace)
    report = namespace["run"](torch, tp, torch.device("cpu"))  # type: ignore[operator]
    assert report.unpredicted == {}
    waits = {e.line for e in report.entries if e.kind != "transfer"}
    assert 6 not in waits, report.entries
    assert {e.line for e in report.entries if e.kind == "transfer"} == {3, 4, 5}

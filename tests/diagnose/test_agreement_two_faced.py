"""The CPU prediction against the simulated device where one object of the CPU run stands
for a host tensor and a device tensor of the accelerator run.

Oracle: the simulated accelerator (``sim:0``) runs each program with CUDA's device rules and
counts every copy and host wait it really makes; ``tp.audit()`` on the CPU predicts the same
run (see test_agreement.py). Per source line they must count the same, and neither run may
leave a line unpredicted.

The programs move a device tensor to the host while still using it (``y = x.cpu()``,
``.to("cpu")``, ``torch.as_tensor(x, device="cpu")``), or a host tensor to the device while
still using it as the host's (``d = h.to(dev)``): on the CPU the move hands back its
receiver, one object for both. Then they read, index, move and compute with either name,
directly and through a helper function's parameter.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sim.isolated import assert_predicted_as_measured, audit_counts
from torchport.diagnose._two_faced import UNTOLD

pytestmark = [pytest.mark.needs_simulator, pytest.mark.slow]  # a child process per example

SETUP = ["x = torch.randn(16).to(dev)", "h = torch.ones(16)"]

# (the move, the name of the host's tensor, the name of the device's)
MOVES = [
    ("y = x.cpu()", "y", "x"),
    ("y = x.to('cpu')", "y", "x"),
    ("y = x.to(torch.device('cpu'))", "y", "x"),
    ("y = x.to('cpu', torch.float32)", "y", "x"),
    ("y = torch.as_tensor(x, device='cpu')", "y", "x"),
    ("y = x.cpu(); n = y.numpy()", "y", "x"),
    ("d = h.to(dev)", "h", "d"),
    ("d = h.to(dev, non_blocking=True)", "h", "d"),
    ("d = h.to(device=dev)", "h", "d"),
]
USES = [
    "_ = float({H}.sum())",
    "_ = float({D}.sum())",
    "{H}[0] = 1.0",
    "_ = int({H}[1])",
    "_ = {H}.tolist()",
    "_ = {D}[{H}.long() % 16]",
    "_ = {H}.to(dev)",
    "_ = {D}.to(dev)",
    "_ = {D}.cpu()",
    "_ = {H}.cpu()",
    "_ = float(({H} * 2).sum())",
    "_ = float(({D} * 2).sum())",
    "_ = rd({H})",
    "_ = rd({D})",
    "e = {H}.to(dev)\n_ = float(e.sum())\n_ = float({H}.sum())",
    "c = {D}.cpu()\n_ = float(c.sum())\n_ = float({D}.sum())",
    "f = {D}.to(dev)\n_ = float(f.sum())\n_ = f.to(dev)",
    "w = {H} + 1\n_ = float(w.sum())",
]


@st.composite
def programs(draw: st.DrawFn) -> list[str]:
    move, host, device = draw(st.sampled_from(MOVES))
    uses = draw(st.lists(st.sampled_from(USES), min_size=1, max_size=6))
    body = [move]
    for use in uses:
        body += use.format(H=host, D=device).split("\n")
    return body


def _program(body: list[str]) -> str:
    lines = ["import torch", "def rd(t):", "    return float(t.sum())", "def prog(dev):"]
    return "\n".join(lines + [f"    {line}" for line in SETUP + body]) + "\n"


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(programs(), min_size=8, max_size=8))
def test_one_object_for_a_host_and_a_device_tensor_is_told_apart_by_name(
    batch: list[list[str]],
) -> None:
    sources = [_program(body) for body in batch]
    assert_predicted_as_measured(sources)


def test_a_host_copy_no_name_holds_leaves_the_device_tensor_the_device_s() -> None:
    # `n = x.cpu().numpy()` (and `print(x.cpu())`): the host copy is gone after its line
    body = [
        "n = x.cpu().numpy()",
        "_ = float(x.sum())",
        "_ = x.to(dev)",
        "y = x.cpu()",
        "x = x * 2",  # x now names another tensor: y alone holds the host copy
        "_ = float(y.sum())",
    ]
    # a read through a list: no name tells which tensor it is, and the line is noted
    untold = ["y = x.cpu()", "held = [y]", "_ = float(held[0].sum())"]
    # a batch moved in a comprehension: the list holds the device's tensors (the
    # comprehension's names end with it, its frame's before Python 3.12, its span's since)
    listed = [
        "batch = [torch.arange(4), torch.ones(4)]",
        "batch = [t.to(dev) for t in batch]",
        "a, b = batch",
        "_ = float(b.sum())",
        "_ = x[a]",
        "_ = [float(t.sum()) for t in batch]",  # another comprehension's t: the device's
        "hs = [torch.ones(4), torch.ones(4)]",
        "pairs = [(h.to(dev), float(h.sum())) for h in hs]",  # h, in its own: the host's
        "def pair(): h = torch.ones(4); return h.to(dev), h.to(dev)",  # a frame that ends
        "p, q = pair()",
        "_ = float(p.sum()) + float(q.sum())",
    ]
    counted, noted, moved = audit_counts([_program(body), _program(untold), _program(listed)])
    assert moved["predicted"] == moved["measured"]
    assert moved["notes"] == {"predicted": [], "measured": []}
    first = len(SETUP) + 5  # the body's first line
    assert counted["measured"] == {
        f"{first - 2} copy": 1,  # x's copy to the device
        f"{first} copy": 1,
        f"{first + 1} sync": 1,
        f"{first + 3} copy": 1,
    }
    assert counted["predicted"] == counted["measured"]
    assert counted["notes"] == {"predicted": [], "measured": []}
    (note,) = noted["notes"]["predicted"]
    assert note.endswith(f":{first + 2}: {UNTOLD}"), note


def test_a_module_moved_back_to_the_host_holds_host_tensors() -> None:
    # rasbt/machine-learning-book ch15_part3: train on the device, then `model.to("cpu")`
    # and sample on the host: reading its weights or outputs waits for nothing
    moved = [
        "m = torch.nn.Linear(16, 16).to(dev)",
        "_ = float(m(x).sum())",
        "m.to('cpu')",
        "y = m(torch.ones(16))",
        "_ = float(y.sum())",
        "_ = float(m.weight.sum())",
    ]
    rebound = [
        "m = torch.nn.Linear(16, 16).to(dev)",
        "m = m.cpu()",
        "_ = float(m.weight.sum())",
        "_ = m.weight.to(dev)",
    ]
    for counted in audit_counts([_program(moved), _program(rebound)]):
        assert counted["predicted"] == counted["measured"]
        assert counted["notes"] == {"predicted": [], "measured": []}

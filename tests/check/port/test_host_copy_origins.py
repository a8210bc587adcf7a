"""A ``.cpu()`` copy is a value the port knows: never "made by ``x[i].cpu()``, which the port
cannot follow" (issue 31).

After the meeting moves (``image * STD.to(image.device)`` in a helper handed the model's
input and ``x[i].cpu()`` copies), ``model(norm(x))`` was still reported, "made by
``x[i].cpu()``": the origins of what ``norm`` returns were those of every call's argument,
not of the ``x`` this call hands it. The invariant: what a call of the file's function gives
is made of what that call hands it (and what the function makes itself); a result of
``t.to(y.device)`` lives where ``y`` is; a ``.cpu()`` copy that does meet the model or its
outputs is reported as what it is, a copy the code makes on the CPU.

Programs are generated: a helper called from the device path and with host copies (those of
``test_guessed_device_values``), and a copy used on the host only, handed to the helper, or
meeting the model or its output. The findings are checked against what the generator put in
(an oracle apart from the port), and each original and its port run on the CPU and on the
simulated accelerator: the port runs wherever the original ran, or a finding names the line
where it stops.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.test_guessed_device_values import programs as helper_programs
from tests.check.port.test_namespace_settings import runs_or_is_reported
from torchport.check.port import port_text

pytest.importorskip("torch")

_CANNOT = "which the port cannot follow"
_COPIES = {"output": "out.detach().cpu()", "row": "x[0:2].cpu()", "float": "x.cpu().float()"}
# How the copy is used: (text, whether it meets the device there)
_USES = {
    "host": ("copy * 2.0", False),
    "host pair": ("copy + x.detach().cpu()[0:2].sum()", False),
    "helper": ("scale(copy)", False),
    "helper of device": ("model(scale(x)).detach().cpu()", False),
    "model": ("model(copy)", True),
    "output": ("out + copy", True),
}


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, bool]:
    """A program and whether a host copy meets the device in it (must be reported)."""
    copy = _COPIES[draw(st.sampled_from(sorted(_COPIES)))]
    uses = draw(st.lists(st.sampled_from(sorted(_USES)), min_size=1, max_size=3, unique=True))
    program = (
        "import torch\nimport torch.nn as nn\n\nSCALE = torch.tensor((0.5, 2.0, 1.0))\n\n\n"
        "def scale(image):\n    return image * SCALE\n\n\n"
        "def main():\n    model = nn.Linear(3, 3)\n    x = torch.randn(4, 3)\n"
        f"    out = model(x)\n    copy = {copy}\n"
        + "".join(f"    OUT.append(({_USES[u][0]}).detach().cpu())\n" for u in uses)
        + "\n\nmain()\n"
    )
    return program, any(_USES[u][1] for u in uses)


def _never_cannot_follow_a_copy(source: str) -> list[str]:
    left = port_text(source, "p.py").remaining
    for finding in left:
        if finding.code == "TP523" and _CANNOT in finding.message:
            assert ".cpu()`" not in finding.message, (finding.message, source)
    return [f.message for f in left]


@settings(max_examples=40, deadline=None)
@given(programs())
def test_a_host_copy_is_named_as_one_or_not_at_all(case: tuple[str, bool]) -> None:
    source, meets = case
    left = _never_cannot_follow_a_copy(source)
    if meets:
        assert any("copies it to the CPU" in m for m in left), (left, source)
    else:
        assert left == [], (left, source)


@settings(max_examples=30, deadline=None)
@given(helper_programs())
def test_a_helper_handed_host_copies_names_no_copy(source: str) -> None:
    """The programs of ``test_guessed_device_values``: no ``.cpu()`` copy "cannot be followed"."""
    _never_cannot_follow_a_copy(source)


# `/tmp/lead/s25/x1_orig.py`: `model(norm(x))` was reported, "made by `x[i].cpu()`"
_REPRODUCER = (
    "import torch\nimport torch.nn as nn\n\nMEAN = torch.tensor((0.5, 0.25, 0.125))\n"
    "STD = torch.tensor((0.2, 0.3, 0.4))\n\n\ndef norm(image):\n"
    "    return image * STD + MEAN\n\n\ndef main():\n    model = nn.Linear(3, 3)\n"
    "    x = torch.randn(4, 3)\n    kept = [x[i].cpu() for i in range(4)]\n"
    "    OUT.append(torch.tensor(sum(float(norm(k).sum()) for k in kept)))\n"
    "    OUT.append(model(norm(x)).detach().cpu())\n\n\nmain()\n"
)


def test_the_reproducer_leaves_nothing() -> None:
    assert port_text(_REPRODUCER, "p.py").remaining == []


# One child per example (a torch start): one example by default, more in the slow leg.
@settings(max_examples=1, deadline=None)
@given(st.lists(programs(), min_size=10, max_size=10))
def test_the_port_of_host_copies_runs_or_is_reported(cases: list[tuple[str, bool]]) -> None:
    runs_or_is_reported([_REPRODUCER] + [source for source, _ in cases])


@pytest.mark.slow  # a simulated-accelerator child per example
@settings(max_examples=10, deadline=None)
@given(st.lists(programs(), min_size=10, max_size=10))
def test_the_port_of_host_copies_runs_or_is_reported_many(cases: list[tuple[str, bool]]) -> None:
    runs_or_is_reported([source for source, _ in cases])

"""The port moves a tensor to meet only values known to be on the device (issue 31).

Two shapes broke a working program while the port said "0 left": a helper the program
calls from its device path and from its host path (its module constant was made on the
device; the host path then met it there), and a record list mixing a device value and a
``.cpu()`` copy in one tuple (every unpacked item was taken for a device value, so the
constants the host copy met were moved). The invariant: the port never makes a program
fail where the original ran. Where a meeting's device values are only guessed (a parameter
some callers give host data, an item unpacked from a record), the port leaves what meets
them and reports it; where the guess is a helper's one parameter, it moves the constant
where they meet, to the parameter's device (``image * STD.to(image.device)``), also one it
placed on the device in an earlier round (issue 31, p31z).

The oracle is the run, written apart from the port (the child of
``test_own_device_kept``): each generated program and its port run on the CPU (same
values) and on the simulated accelerator seen as CUDA and as not CUDA; the port must not
fail where the original ran, and must report where what it leaves fails.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import in_a_child
from tests.check.port.test_own_device_kept import _CHILD
from torchport.check.port import port_text

_HEAD = "import torch\nimport torch.nn as nn\n\n"
_CONSTANTS = "MEAN = torch.tensor((0.5, 0.25, 0.125))\nSTD = torch.tensor((0.2, 0.3, 0.4))\n"
_USES = {"minus": "image - MEAN", "affine": "image * STD + MEAN", "scaled": "(image - MEAN) / STD"}
# A record holding the host copy of row `x[i]` (with a device value beside it or not),
# and how the helper's loop reads `image` back out of it.
_RECORDS = {
    "bare": "x[i].cpu()",
    "host tuple": "(1.0, x[i].cpu(), out[i].sum().item())",
    "mixed tuple": "(out[i].max(), x[i].cpu(), out[i].sum().item())",
    "mixed list": "[out[i].max(), x[i].cpu()]",
    "number": "x[i].sum().item()",  # no `.device`: a move to `image.device` would fail
}
_READS = {
    "bare": ["    for item in kept:\n        image = item\n"],
    "host tuple": [
        "    for item in kept:\n        _, image, _ = item\n",
        "    for _, image, _ in kept:\n",
        "    for j in range(len(kept)):\n        c, image, n = kept[j]\n",
        "    for item in kept:\n        image = item[1]\n",
    ],
}
_READS["mixed tuple"] = _READS["host tuple"]
_READS["number"] = _READS["bare"]
_READS["mixed list"] = [
    "    for item in kept:\n        _, image = item\n",
    "    for j in range(len(kept)):\n        c, image = kept[j]\n",
    "    for item in kept:\n        image = item[1]\n",
]
_CUDA_OR_CPU = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'
# Where the program's device is: nowhere (the port adds one), chosen in main(), or kept at
# module level under a name of its own.
_CHOICES = {"none": ("", "", ""), "main": ("", f"    device = {_CUDA_OR_CPU}\n", "device")}
_CHOICES["module"] = (f"DEVICE = {_CUDA_OR_CPU}\n", "", "DEVICE")


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A helper ``norm`` meeting the constants, reached from the host path (records of host
    copies, read back in ``show``) and, drawn, from the device path too (``main`` hands it
    the program's device tensor)."""
    choice = draw(st.sampled_from(sorted(_CHOICES)))
    kept, chosen, name = _CHOICES[choice]
    record = draw(st.sampled_from(sorted(_RECORDS)))
    read = draw(st.sampled_from(_READS[record]))
    use = _USES[draw(st.sampled_from(sorted(_USES)))]
    returned = draw(st.sampled_from(["kept", "kept[:3]"]))
    # The device path where the program has no device too: the port adds one and moves the
    # model, whose input then meets the constants in `norm` on the device, the host copies
    # on the host (the port moves them where they meet `image`).
    direct = draw(st.booleans())
    # The constant met by the model's output too: placed on the device in the port's first
    # round, then met in `norm` by the parameter's values.
    placed = draw(st.booleans())
    on = f".to({name})" if name else ""
    passed = ", device" if name == "device" else ""
    return (
        _HEAD
        + kept
        + _CONSTANTS
        + f"\n\ndef norm(image):\n    return {use}\n\n\n"
        + f"def collect(model, x{passed}):\n    kept = []\n    x = x{on}\n    out = model(x)\n"
        + f"    for i in range(x.size(0)):\n        kept.append({_RECORDS[record]})\n"
        + f"    return {returned}\n\n\n"
        + "def show(kept):\n    total = 0.0\n"
        + read
        + "        total += float(norm(image).sum())\n    return total\n\n\n"
        + "def main():\n"
        + chosen
        + f"    model = nn.Linear(3, 3){on}\n    x = torch.randn(4, 3)\n"
        + f"    kept = collect(model, x{passed})\n    OUT.append(torch.tensor(show(kept)))\n"
        + (f"    OUT.append(model(norm(x{on})).detach().cpu())\n" if direct else "")
        + (f"    OUT.append((model(x{on}) - MEAN).detach().cpu())\n" if placed else "")
        + "\n\nmain()\n"
    )


def _runs_wherever_the_original_ran(sources: list[str]) -> None:
    """On the CPU the port gives the original's values; on the simulated accelerator, seen
    as CUDA and as not CUDA, it runs wherever the original ran; where it fails, the port
    left a finding."""
    outcomes = [port_text(source, "p.py") for source in sources]
    assert all(not o.failures for o in outcomes), [o.failures for o in outcomes]
    runs = in_a_child(_CHILD, sources + [o.source for o in outcomes])
    before, after = runs[: len(sources)], runs[len(sources) :]
    for outcome, was, now in zip(outcomes, before, after, strict=True):
        assert now["cpu"] == was["cpu"], outcome.source
        for view in ("as_cuda", "not_cuda"):
            assert was[view] is not None or now[view] is None, (view, now[view], outcome.source)
            if now[view] is not None:
                assert outcome.remaining, (view, now[view], outcome.source)


# One child per example (a torch start): few examples by default, more in the slow leg.
@settings(max_examples=2, deadline=None)
@given(st.lists(programs(), min_size=8, max_size=8))
def test_a_port_moves_nothing_to_meet_a_guessed_device_value(sources: list[str]) -> None:
    """See :func:`_runs_wherever_the_original_ran`."""
    _runs_wherever_the_original_ran(sources)


@pytest.mark.slow  # a simulated-accelerator child per example
@settings(max_examples=20, deadline=None)
@given(st.lists(programs(), min_size=10, max_size=10))
def test_a_port_moves_nothing_to_meet_a_guessed_device_value_many(sources: list[str]) -> None:
    """:func:`_runs_wherever_the_original_ran` on more programs."""
    _runs_wherever_the_original_ran(sources)


def test_the_two_reproducers_are_moved_where_they_meet_or_reported() -> None:
    """The helper reached from both paths with the device at module level: the constant stays
    where it is made and is moved where it meets the parameter, to its device. The CPU-only
    program whose records mix a device value and a host copy: the constants stay, reported
    (TP503, naming where they meet the guessed value); a known device value still moves them."""
    both = (
        _HEAD + f"DEVICE = {_CUDA_OR_CPU}\n" + _CONSTANTS + "\n\ndef norm(image):\n"
        "    return image - MEAN\n\n\ndef show(kept):\n    total = 0.0\n"
        "    for item in kept:\n        image = item[0]\n"
        "        total += float(norm(image).sum())\n"
        "    return total\n\n\ndef main():\n    model = nn.Linear(3, 3).to(DEVICE)\n"
        "    x = torch.randn(4, 3).to(DEVICE)\n    kept = [[x[i].cpu(), 1.0] for i in range(4)]\n"
        "    OUT.append(torch.tensor(show(kept)))\n    OUT.append(model(norm(x)).detach().cpu())\n"
        "\n\nmain()\n"
    )
    mixed = (
        _HEAD + _CONSTANTS + "\n\ndef show(errors):\n    total = 0.0\n"
        "    for index in range(len(errors)):\n        c, image, label = errors[index]\n"
        "        total += float((image * STD + MEAN).sum())\n    return total\n\n\n"
        "def main():\n    model = nn.Linear(3, 3)\n    x = torch.randn(4, 3)\n    errors = []\n"
        "    out = model(x)\n    for i in range(4):\n"
        "        errors.append((out[i].max(), x[i].cpu(), 1))\n"
        "    OUT.append(torch.tensor(show(errors)))\n\n\nmain()\n"
    )
    known = (
        _HEAD
        + _CONSTANTS
        + (
            "\n\ndef main():\n    model = nn.Linear(3, 3)\n    out = model(torch.zeros(2, 3))\n"
            "    a, b = out[0], out[1]\n    OUT.append((a - MEAN).detach().cpu())\n\n\nmain()\n"
        )
    )
    first, second, third = (port_text(s, "p.py") for s in (both, mixed, known))
    assert "MEAN = torch.tensor((0.5, 0.25, 0.125))\n" in first.source, first.source
    # (`item[0]` of records another function hands: a tensor, a number, an array, untold)
    moved = '    return image - MEAN.to(getattr(image, "device", "cpu"))\n'
    assert moved in first.source, first.source
    assert not [f for f in first.remaining if f.code == "TP503"], first.remaining
    assert "MEAN = torch.tensor((0.5, 0.25, 0.125))\n" in second.source, second.source
    line = second.source.splitlines().index("MEAN = torch.tensor((0.5, 0.25, 0.125))") + 1
    left = [f for f in second.remaining if f.code == "TP503" and f.line == line]
    assert left and "only some of the program's paths" in str(left[0]), second.remaining
    assert "MEAN = torch.tensor((0.5, 0.25, 0.125), device=device)" in third.source
    _runs_wherever_the_original_ran([both, mixed, known])


def test_a_cpu_only_program_whose_helper_feeds_the_model_and_host_copies() -> None:
    """``norm`` is handed the model's input (on the device once ported) and ``.cpu()`` copies
    kept for host work: the constants are moved where they meet ``image``, to its device."""
    source = (
        _HEAD + _CONSTANTS + "\n\ndef norm(image):\n    return image * STD + MEAN\n\n\n"
        "def main():\n    model = nn.Linear(3, 3)\n    x = torch.randn(4, 3)\n"
        "    kept = [x[i].cpu() for i in range(4)]\n"
        "    OUT.append(torch.tensor(sum(float(norm(k).sum()) for k in kept)))\n"
        "    OUT.append(model(norm(x)).detach().cpu())\n\n\nmain()\n"
    )
    ported = port_text(source, "p.py").source
    assert "    return image * STD.to(image.device) + MEAN.to(image.device)\n" in ported, ported
    assert "STD = torch.tensor((0.2, 0.3, 0.4))\n" in ported, ported
    _runs_wherever_the_original_ran([source])


def test_a_parameter_handed_flags_moves_nothing_to_it() -> None:
    """A helper's parameter handed numbers (lightning's ``run(fused=False)``) holds no host
    tensor, and the model built from it is no tensor computed from it: the constant the
    port places stays on the device where the model's output meets it."""
    source = (
        _HEAD + "TARGET = torch.tensor((0.5, 0.25, 0.125))\n\n\ndef run(p):\n"
        "    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(p))\n"
        "    out = model(torch.ones(2, 3))\n"
        "    return (out - TARGET).abs().sum().detach().cpu()\n\n\n"
        "OUT.append(run(0.0))\nOUT.append(run(0.0 * 2))\n"
    )
    ported = port_text(source, "p.py").source
    assert "TARGET = torch.tensor((0.5, 0.25, 0.125), device=device)\n" in ported, ported
    assert "(out - TARGET)" in ported, ported
    _runs_wherever_the_original_ran([source])

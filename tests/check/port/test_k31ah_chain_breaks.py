"""k31ah's breaks of TP120's partial chains: an accelerator the chain leaves out, picked by a
test of its own in the same function or module (before the chain, its branch returning; after
it, its branch setting the device over the chain's). On the base each was reported as left
out: a false TP120. A chain that leaves one out with nothing else testing it is still reported
(``test_partial_device_chains``), as is one whose other test picks no device (``print``).
"""

from __future__ import annotations

import pytest

from torchport.check.port import port_text

_TAIL = "model = torch.nn.Linear(3, 2).to(device)\nprint(model(torch.ones(1, 3, device=device)))\n"
_COVERED = {
    "XPU set after the chain": (
        'if torch.cuda.is_available():\n    device = "cuda"\n'
        'elif torch.backends.mps.is_available():\n    device = "mps"\nelse:\n    device = "cpu"\n'
        'if torch.xpu.is_available():\n    device = "xpu"\n'
    ),
    "MPS returned before the chain": (
        'def pick():\n    if torch.backends.mps.is_available():\n        return "mps"\n'
        '    if torch.cuda.is_available():\n        return "cuda"\n'
        '    elif torch.xpu.is_available():\n        return "xpu"\n'
        '    else:\n        return "cpu"\n'
        "\n\ndevice = pick()\n"
    ),
    "XPU guarded, after a conditional chain": (
        'device = "cuda" if torch.cuda.is_available() else "mps" if '
        'torch.backends.mps.is_available() else "cpu"\n'
        'if device == "cpu" and hasattr(torch, "xpu") and torch.xpu.is_available():\n'
        '    device = "xpu"\n'
    ),
}


@pytest.mark.parametrize("case", sorted(_COVERED))
def test_an_accelerator_picked_beside_the_chain_is_not_reported(case: str) -> None:
    source = "import torch\n\n" + _COVERED[case] + _TAIL
    left = [f for f in port_text(source, "train.py").remaining if f.code == "TP120"]
    assert not left, left


def test_a_test_that_picks_no_device_does_not_cover() -> None:
    source = (
        'import torch\n\nif torch.xpu.is_available():\n    print("xpu here")\n'
        'if torch.cuda.is_available():\n    device = "cuda"\n'
        'elif torch.backends.mps.is_available():\n    device = "mps"\nelse:\n    device = "cpu"\n'
    ) + _TAIL
    left = [f for f in port_text(source, "train.py").remaining if f.code == "TP120"]
    assert len(left) == 1 and "XPU" in left[0].message, left


def test_a_chain_whose_else_unpacks_the_cpu_is_reported() -> None:
    """A miss, not a false report: ``device, n = "cpu", 0`` in the ``else`` is the CPU, but
    ``_sets_the_cpu`` read a single target only; the chain leaving XPU out stayed silent. A
    strict xfail until d31ai (the class: ``test_unpacked_cpu_choices.py``)."""
    source = (
        'import torch\n\nif torch.cuda.is_available():\n    device, n = "cuda", 1\n'
        'elif torch.backends.mps.is_available():\n    device, n = "mps", 1\n'
        'else:\n    device, n = "cpu", 0\n'
    ) + _TAIL
    left = [f for f in port_text(source, "train.py").remaining if f.code == "TP120"]
    assert len(left) == 1, left

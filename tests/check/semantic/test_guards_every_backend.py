"""A device check of any accelerator in the vocabulary is a guard, not only of the five once listed.

``torch.musa.is_available()`` and ``torch.mlu.is_available()`` were missing from the
guard's own list of backends, so code that checked for them got a false TP112 and
TP109; the list is now read from ``torchport._device_types``.
"""

from __future__ import annotations

import pytest

from torchport._device_types import OTHER_ACCELERATORS, PRIVATEUSE1
from torchport.check import check_source

# Every accelerator a program can name as `torch.<type>` (the PrivateUse1 slot itself is renamed).
KINDS = sorted(OTHER_ACCELERATORS - {PRIVATEUSE1})


def _codes(source: str) -> list[str]:
    # the defaults and TP112 (off by default since held-out samples V and Y)
    return sorted(f.code for f in check_source(source, extend_select=["TP112"]))


@pytest.mark.parametrize("kind", KINDS)
def test_a_move_under_that_backends_check_is_left_alone(kind: str) -> None:
    source = f'import torch\n\nif torch.{kind}.is_available():\n    x = x.to("{kind}")\n'
    assert _codes(source) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_branch_per_backend_is_no_cuda_or_cpu_choice(kind: str) -> None:
    source = (
        f"import torch\n\nif torch.{kind}.is_available():\n    device = {kind!r}\nelse:\n"
        '    device = "cuda" if torch.cuda.is_available() else "cpu"\n'
    )
    assert _codes(source) == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_move_unguarded_is_reported(kind: str) -> None:
    # The check can fail: without the device check, naming the backend is TP112.
    assert _codes(f'import torch\n\nx = x.to("{kind}")\n') == ["TP112"]

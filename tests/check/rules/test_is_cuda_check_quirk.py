"""TP103 leaves a test's CUDA quirk: ``if ... x.is_cuda: pass`` before what it checks.

Sample M (kornia's ``tests/augmentation/test_backward.py``: ``if resample == "nearest"
and degrees.is_cuda: pass  # grid_sample returns NaN on CUDA`` ``elif ...: assert
...``): the test exempts CUDA from a check because of a CUDA kernel's quirk; testing
``device.type != "cpu"`` would exempt MPS too (noise). Generated files draw the arm (only
``pass``, or work), what follows it (``elif``, ``else``, nothing), the test's condition,
and whether the file is test code. The oracle, written here: left exactly when the arm
is only ``pass``, an ``elif`` or ``else`` follows, and the file is test code (a ``tests``
folder, or a ``test*`` function of a file importing pytest).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

ARMS = {
    "pass": True,
    "pass\n        pass": True,
    "x = x + 1": False,
    "pass\n        x = x * 2": False,
}
AFTER = {
    "    elif mode == 'bilinear':\n        assert x.sum() > 0\n": True,
    "    else:\n        assert x.sum() > 0\n": True,
    "": False,
}
CONDITIONS = ("x.is_cuda", "mode == 'nearest' and x.is_cuda", "x.is_cuda and x.dim() > 2")
PLACES = {
    ("tests/augmentation/test_backward.py", True): True,
    ("tests/helpers.py", False): True,
    ("src/aug/backward.py", True): True,  # a `test*` function of a file importing pytest
    ("src/aug/backward.py", False): False,
    ("test_backward.py", True): True,
    ("test_backward.py", False): False,
}


@settings(max_examples=400)
@given(
    arm=st.sampled_from(sorted(ARMS)),
    after=st.sampled_from(sorted(AFTER)),
    condition=st.sampled_from(CONDITIONS),
    place=st.sampled_from(sorted(PLACES)),
)
def test_a_test_s_cuda_quirk_is_left(
    arm: str, after: str, condition: str, place: tuple[str, bool]
) -> None:
    path, imports_pytest = place
    source = "import pytest\n" if imports_pytest else ""
    source += "import torch\n\n\ndef test_grad(x, mode):\n"
    source += f"    if {condition}:\n        {arm}\n{after}"
    found = check_text(source, path, ruleset_for(["TP103"], None)).findings
    left = ARMS[arm] and AFTER[after] and PLACES[place]
    assert bool(found) != left, (path, source, found)

"""TP108 leaves float64 in a test that skips, before it, where float64 is missing.

Sample M (kornia's tests/geometry/test_conversions.py): ``_skip_if_dtype_unavailable(device,
torch.float64)`` at the test's start, then ``torch.tensor(..., device=device,
dtype=torch.float64)``; the file names MPS (its comments), so the file-level rule does
not apply. Generated tests draw the guard (a skip call naming float64, one naming
float32, an ``if`` on MPS that skips or returns, an ``if`` on CUDA that skips, none),
whether it comes before or after the float64 work, and whether the code is test code.
The oracle, written here: not reported exactly when the code is test code and a guard
that names float64 or MPS and leaves comes before the float64 line.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# guard lines, and whether it keeps float64 off MPS
GUARDS = {
    "": False,
    "_skip_if_dtype_unavailable(device, torch.float64)": True,
    "skip_unless_dtype(device, torch.double)": True,
    "_skip_if_dtype_unavailable(device, torch.float32)": False,
    "log_dtype(device, torch.float64)": False,  # no skip
    'if device.type == "mps":\n    pytest.skip("no float64 on MPS")': True,
    'if device.type == "mps":\n    return': True,
    'if device.type == "cuda":\n    pytest.skip("slow")': False,
    'if device.type == "mps":\n    print("mps")': False,  # does not leave
}
PLACES = {  # (folder, imports, function name): test code or not
    ("tests", "import pytest", "test_roll"): True,
    ("tests", "", "helper"): True,
    ("src", "import pytest", "test_roll"): True,
    ("src", "", "test_roll"): False,
    ("src", "import pytest", "make"): False,
}


@given(
    guard=st.sampled_from(sorted(GUARDS)),
    before=st.booleans(),
    place=st.sampled_from(sorted(PLACES)),
    statement=st.sampled_from(
        (
            "x = torch.tensor([0.1], device=device, dtype=torch.float64)",
            "x = torch.eye(3, device=device, dtype=torch.float64)",
            "x = y.double().to(device)",
        )
    ),
)
def test_float64_after_a_skip_where_it_is_missing_is_left(
    guard: str, before: bool, place: tuple[str, str, str], statement: str
) -> None:
    folder, imports, name = place
    guard_lines = guard.splitlines()
    body = [*guard_lines, statement] if before else [statement, *guard_lines]
    source = "\n".join(
        [
            "import torch",
            imports,
            "# float64 is missing on MPS",
            "",
            f"def {name}(device, y):",
            *("    " + line for line in body),
            "    return x",
            "",
        ]
    )
    found = check_text(source, f"{folder}/geometry.py", ruleset_for(["TP108"], None)).findings
    left = PLACES[place] and GUARDS[guard] and before
    assert bool(found) != left, source

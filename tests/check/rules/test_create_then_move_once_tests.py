"""A test's own body makes its inputs once per test run: TP905's copies, not TP106's.

``x_seq = torch.zeros(shape).to(device)`` in ``def test_attention():`` of a pytest file.
The test-code standard is TP109's (``rules/_test_code.py``). Generated files draw the
folder, the imports, the function's name and whether the copy sits in a loop of it; the
oracle: TP905 exactly when the function is a ``test*`` one in test code and no loop of
it repeats the copy, else TP106 (a helper's callers are unknown; a loop repeats).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

FOLDERS = ("src", "tests", "test", "examples")
IMPORTS = {"": False, "import pytest": True, "import unittest": True, "import numpy": False}
NAMES = ("test_attention", "testForward", "make_inputs", "run")


@given(
    folder=st.sampled_from(FOLDERS),
    imports=st.sampled_from(sorted(IMPORTS)),
    name=st.sampled_from(NAMES),
    in_loop=st.booleans(),
)
def test_a_test_s_inputs_are_made_once(folder: str, imports: str, name: str, in_loop: bool) -> None:
    copy = "x = torch.zeros(4, 3).to(device)"
    body = ["for _ in range(steps):", f"    {copy}"] if in_loop else [copy]
    lines = ["import torch", imports, "", "", f"def {name}(device, steps):"]
    source = "\n".join([*lines, *("    " + line for line in body)]) + "\n"
    test_code = folder in ("test", "tests") or IMPORTS[imports]
    once = name.startswith("test") and test_code and not in_loop
    path = f"{folder}/test_model.py"
    codes = {
        f.code for f in check_text(source, path, ruleset_for(["TP106", "TP905"], None)).findings
    }
    assert codes == ({"TP905"} if once else {"TP106"}), (path, source)

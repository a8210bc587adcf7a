"""Test code makes its inputs once per test run: TP905's copies, not TP106's.

``x_seq = torch.zeros(shape).to(device)`` in ``def test_attention():`` of a pytest file,
or in any function of a file in a ``tests`` folder (pytorch/ignite's ``_test(n_epochs,
metric_device)`` helpers, sample J). The test-code standard is TP109's
(``rules/_test_code.py``). Generated files draw the folder, the imports, the function's
name, whether it is nested in another function and whether the copy sits in a loop of
it; the oracle: TP905 exactly when no loop of the function repeats the copy and the
function is test code (any function in a ``test``/``tests`` folder, a ``test*`` one or
one nested in it in a file importing ``pytest``/``unittest``), else TP106 (a program's
helper's callers are unknown; a loop repeats).
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
    outer=st.sampled_from(("", "_test_distrib_integration", "test_integration")),
)
def test_a_test_s_inputs_are_made_once(
    folder: str, imports: str, name: str, in_loop: bool, outer: str
) -> None:
    copy = "x = torch.zeros(4, 3).to(device)"
    body = ["for _ in range(steps):", f"    {copy}"] if in_loop else [copy]
    function = [f"def {name}(device, steps):", *("    " + line for line in body)]
    if outer:
        function = [f"def {outer}(device):", *("    " + line for line in function)]
    source = "\n".join(["import torch", imports, "", "", *function]) + "\n"
    in_a_test = any(n.startswith("test") for n in (name, outer))
    test_code = folder in ("test", "tests") or (IMPORTS[imports] and in_a_test)
    once = test_code and not in_loop
    path = f"{folder}/test_model.py"
    codes = {
        f.code for f in check_text(source, path, ruleset_for(["TP106", "TP905"], None)).findings
    }
    assert codes == ({"TP905"} if once else {"TP106"}), (path, source)

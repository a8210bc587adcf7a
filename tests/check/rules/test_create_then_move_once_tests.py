"""Test code makes its inputs once per test run: TP905's copies, not TP106's.

``x_seq = torch.zeros(shape).to(device)`` in ``def test_attention():`` of a pytest file,
or in any function of a file in a ``tests`` folder (pytorch/ignite's ``_test(n_epochs,
metric_device)`` helpers, sample J). The test-code standard is TP109's
(``rules/_test_code.py``). Generated files draw the folder, the imports, the function's
name, whether it is nested in another function and whether the copy sits in a loop of
it; the oracle: TP905 exactly when no loop of the function repeats the copy and the
function is test code (any function in a ``test``/``tests`` folder or in a module pytest
collects, ``test_*.py``/``*_test.py``, importing ``pytest``/``unittest``; a ``test*`` one
or one nested in it in any file importing them), else TP106 (a program's
helper's callers are unknown; a loop repeats).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

FOLDERS = ("src", "tests", "test", "examples")
IMPORTS = {"": False, "import pytest": True, "import unittest": True, "import numpy": False}
NAMES = ("test_attention", "testForward", "make_inputs", "run")
# A module pytest collects (importing a test framework) is test code throughout.
FILES = {"test_model.py": True, "model_test.py": True, "model.py": False, "tests.py": False}


@given(
    folder=st.sampled_from(FOLDERS),
    imports=st.sampled_from(sorted(IMPORTS)),
    name=st.sampled_from(NAMES),
    in_loop=st.booleans(),
    outer=st.sampled_from(("", "_test_distrib_integration", "test_integration")),
    file=st.sampled_from(sorted(FILES)),
)
def test_a_test_s_inputs_are_made_once(
    folder: str, imports: str, name: str, in_loop: bool, outer: str, file: str
) -> None:
    copy = "x = torch.zeros(4, 3).to(device)"
    body = ["for _ in range(steps):", f"    {copy}"] if in_loop else [copy]
    function = [f"def {name}(device, steps):", *("    " + line for line in body)]
    if outer:
        function = [f"def {outer}(device):", *("    " + line for line in function)]
    source = "\n".join(["import torch", imports, "", "", *function]) + "\n"
    in_a_test = any(n.startswith("test") for n in (name, outer))
    test_code = folder in ("test", "tests") or (IMPORTS[imports] and (in_a_test or FILES[file]))
    once = test_code and not in_loop
    path = f"{folder}/{file}"
    codes = {
        f.code for f in check_text(source, path, ruleset_for(["TP106", "TP905"], None)).findings
    }
    assert codes == ({"TP905"} if once else {"TP106"}), (path, source)


# A loop around the copy, and whether it only makes a test's inputs (sample J: ignite's
# `for metric_device in metric_devices:` and `[... for _ in range(n_epochs - 2)]`;
# sample N: torchcde's `for _ in range(5):` random trials).
LOOPS = {
    "for metric_device in metric_devices:\n    {copy}": True,
    "for dev in devices:\n    {copy}": False,
    "for _ in range(steps):\n    {copy}": False,
    "while steps:\n    {copy}": False,
    "xs = [{move} for _ in range(steps - 2)]": True,
    "xs = [{move} for _ in range(steps) for _ in range(2)]": True,
    "xs = [{move} for batch in loader]": False,
    "xs = [{move} for _ in range(steps) for batch in loader]": False,
    "xs = [torch.ones(3).to(device) for _ in range({move}.numel())]": True,
    "for metric_device in metric_devices:\n    for _ in range(steps):\n        {copy}": False,
    "for _ in range(steps):\n    xs = [{move} for _ in range(2)]": False,
    # a few random trials, each making its inputs (sample N: torchcde's `for _ in range(5):`)
    "for _ in range(5):\n    {copy}": True,
    "for i in range(2, 8):\n    {copy}": True,
    "for _ in range(5):\n    for metric_device in metric_devices:\n        {copy}": True,
    "for _ in range(5, steps):\n    {copy}": False,
    "for _ in range(5):\n    for batch in loader:\n        {copy}": False,
    "for _ in range(5):\n    while steps:\n        {copy}": False,
    "for batch in loader:\n    for _ in range(5):\n        {copy}": False,
}


@given(
    folder=st.sampled_from(FOLDERS),
    imports=st.sampled_from(sorted(IMPORTS)),
    name=st.sampled_from(NAMES),
    loop=st.sampled_from(sorted(LOOPS)),
    file=st.sampled_from(sorted(FILES)),
)
def test_a_test_s_input_loops_are_set_up(
    folder: str, imports: str, name: str, loop: str, file: str
) -> None:
    move = "torch.zeros(4, 3).to(device)"
    body = loop.format(copy=f"x = {move}", move=move).splitlines()
    function = [f"def {name}(device, steps, metric_devices, devices, loader):"]
    function += ["    " + line for line in body]
    source = "\n".join(["import torch", imports, "", "", *function]) + "\n"
    test_code = folder in ("test", "tests") or (
        IMPORTS[imports] and (name.startswith("test") or FILES[file])
    )
    path = f"{folder}/{file}"
    found = check_text(source, path, ruleset_for(["TP106", "TP905"], None)).findings
    codes = {f.code for f in found}
    assert codes == ({"TP905"} if test_code and LOOPS[loop] else {"TP106"}), (path, source)

"""TP407 leaves test code: a test's TF32 switch is its stop-gap (samples L and N).

botorch's ``test_knowledge_gradient.py`` (``torch.backends.cuda.matmul.allow_tf32 =
False`` against Ampere's TF32) and torchani's ``tests/test_infer.py`` (a ``tearDown``
restoring the flag it saved): where the test runs, nothing else changes (low value), as
TP109's and TP113's device choices in test code. Programs and libraries stay reported
(DiT's, dinov2's, open_clip's training mains, judged real). Generated files draw the
folder and file name, whether a test framework is imported, the function or class the
setting sits in, and its value; the oracle is the test-code standard written out here.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

PATHS = (
    "test/acquisition/test_knowledge_gradient.py",
    "tests/test_infer.py",
    "test_infer.py",
    "infer_test.py",
    "src/train.py",
    "tools/mnp_benchmark.py",
    "conftest.py",
)
HOLDERS = ("", "def tearDown(self):", "def test_kg(self):", "def main():", "class TestKG:")
VALUES = ("True", "False", "self.tf32", "args.tf32")


def _test_code(path: str, framework: bool, holder: str) -> bool:
    parts = path.split("/")
    if parts[-1] == "conftest.py" or any(p in ("test", "tests") for p in parts[:-1]):
        return True
    name = parts[-1]
    collected = name.startswith("test_") or name.endswith("_test.py")
    named = holder.startswith(("def test", "class Test"))
    return framework and (collected or named)


@given(
    path=st.sampled_from(PATHS),
    framework=st.booleans(),
    holder=st.sampled_from(HOLDERS),
    value=st.sampled_from(VALUES),
)
@example(  # botorch's
    path="test/acquisition/test_knowledge_gradient.py",
    framework=True,
    holder="def test_kg(self):",
    value="False",
)
@example(path="src/train.py", framework=False, holder="", value="True")  # DiT's
@example(path="test_infer.py", framework=False, holder="def tearDown(self):", value="True")
def test_a_tests_tf32_switch_is_left(path: str, framework: bool, holder: str, value: str) -> None:
    imports = ["import torch", *(["import unittest"] if framework else [])]
    setting = f"torch.backends.cuda.matmul.allow_tf32 = {value}"
    if not holder:
        body = [setting]
    elif holder.startswith("class"):
        body = [holder, f"    tf32 = {value}", "", "    def run(self):", f"        {setting}"]
    else:
        body = [holder, f"    {setting}"]
    source = "\n".join([*imports, "", "", *body]) + "\n"
    found = check_text(source, path, ruleset_for(["TP407"], None)).findings
    assert bool(found) != _test_code(path, framework, holder), (path, source, found)

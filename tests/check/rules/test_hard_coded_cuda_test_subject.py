"""TP101 leaves CUDA in test code whose subject is CUDA itself.

A test that runs only where CUDA is (skipped by a decorator, or returning or skipping
early when CUDA is missing), or a test helper named for CUDA or the GPU, uses CUDA on
purpose: another device changes what it tests (a skipping decorator is a device guard
anywhere, already). Outside test code (no test folder, no
``pytest``/``unittest`` import), or with a guard that does not end the test, or one
placed after the CUDA line, the CUDA stays reported. The parts are drawn at random;
the oracle is the standard written out on them.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

NAMES = {"test_move": False, "test_move_cuda": True, "train_gpu_net": True, "helper": False}
# A decorator line, and whether it skips where CUDA is missing: that is a device guard
# everywhere (the guard analysis), in test code or not.
DECORATORS = {
    "": False,
    '@pytest.mark.skipif(not torch.cuda.is_available(), reason="no cuda")': True,
    "@unittest.skipUnless(torch.cuda.device_count() > 0, 'gpu')": True,
    "@pytest.mark.slow": False,
    "@pytest.mark.skipif(sys.platform == 'win32', reason='posix')": False,
}
# A guard before the CUDA line, and whether it ends the test without CUDA. The plain
# `return` is a device guard anywhere already (the guard analysis): GUARDS_ANYWHERE.
GUARDS = {
    "": False,
    "if not torch.cuda.is_available():\n    return": True,
    "if not torch.cuda.is_available():\n    pytest.skip('no cuda')": True,
    "if torch.cuda.device_count() == 0:\n    raise unittest.SkipTest('gpu')": True,
    "if not torch.cuda.is_available():\n    print('no cuda')": False,
    "if x is None:\n    return": False,
}
GUARDS_ANYWHERE = frozenset({"if not torch.cuda.is_available():\n    return"})
CUDA = ("x = x.to('cuda')", "w = torch.ones(3).cuda()", "net.set_params(device='cuda')")


@given(
    name=st.sampled_from(sorted(NAMES)),
    decorator=st.sampled_from(sorted(DECORATORS)),
    guard=st.sampled_from(sorted(GUARDS)),
    guard_after=st.booleans(),
    statement=st.sampled_from(CUDA),
    test_file=st.booleans(),
    in_class=st.booleans(),
)
def test_cuda_that_is_the_test_subject_is_left(
    name: str,
    decorator: str,
    guard: str,
    guard_after: bool,
    statement: str,
    test_file: bool,
    in_class: bool,
) -> None:
    body = [statement, *guard.splitlines()] if guard_after else [*guard.splitlines(), statement]
    function = [*([decorator] if decorator else []), f"def {name}(self, x, net):"]
    function += ["    " + line for line in body]
    if in_class:
        function = ["class TestNet:", *("    " + line for line in function)]
    lines = ["import sys", "import torch", *(["import pytest", "import unittest"] * test_file)]
    source = "\n".join([*lines, "", "", *function]) + "\n"
    test_code = test_file and (name.startswith("test") or in_class)
    subject = NAMES[name] or (GUARDS[guard] and not guard_after)
    found = check_text(source, "m.py", ruleset_for(["TP101"], None)).findings
    guarded = DECORATORS[decorator] or (guard in GUARDS_ANYWHERE and not guard_after)
    assert bool(found) != (guarded or (test_code and subject)), source

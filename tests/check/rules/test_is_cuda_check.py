"""TP103 judges ``if not x.is_cuda: raise ...`` as the precondition it spells out.

Generated functions start with a CUDA precondition on their input, written as
``assert x.is_cuda`` or as ``if not x.is_cuda: raise <Error>(...)``, followed by a
few statements: portable torch code, and possibly one call only CUDA has (a
compiled extension's ``*_cuda_*`` kernel, a ``torch.cuda`` function). The oracle is
what was generated: the precondition of a CUDA-only call is right and is left; one
before portable code stops that code on every other accelerator and is reported,
whichever way it is spelled.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

PORTABLE = ("y = x @ x.t()", "y = torch.relu(x)", "out = x.new(*x.size()).zero_()", "n = x.numel()")
CUDA_ONLY = (
    "_backend.roi_pool_cuda_forward(x, out)",
    "_backend.dcn_v2_cuda_backward(x, out, grad)",
    "stream = torch.cuda.current_stream()",
)
ERRORS = ("NotImplementedError", "ValueError('CUDA tensors only')", "RuntimeError")


@given(
    spelled=st.sampled_from(["assert", "if-raise"]),
    error=st.sampled_from(ERRORS),
    before=st.lists(st.sampled_from(PORTABLE), max_size=2),
    kernel=st.none() | st.sampled_from(CUDA_ONLY),
    after=st.lists(st.sampled_from(PORTABLE), max_size=2),
)
def test_a_precondition_is_judged_by_what_it_guards(
    spelled: str, error: str, before: list[str], kernel: str | None, after: list[str]
) -> None:
    guard = (
        ["    assert x.is_cuda"]
        if spelled == "assert"
        else ["    if not x.is_cuda:", f"    raise {error}".replace("    ", "        ", 1)]
    )
    body = [*before, *([kernel] if kernel else []), *after, "return x"]
    source = "\n".join(
        [
            "import torch",
            "from ._ext import ops as _backend",
            "",
            "",
            "def forward(x, out, grad):",
            *guard,
            *("    " + line for line in body),
        ]
    )
    found = check_text(source + "\n", "m.py", ruleset_for(["TP103"], None)).findings
    assert bool(found) == (kernel is None), source


COMPILED = {  # a call after the guard, and whether it is a compiled module's (private name)
    "_C.deform_conv_forward(x, out)": True,
    "_ext.nms(x, 0.5)": True,
    "ops.deform_conv_forward(x, out)": False,
    "torch.relu(x)": False,
}


@given(
    error=st.sampled_from(ERRORS),
    call=st.sampled_from(sorted(COMPILED)),
    in_else=st.booleans(),
)
def test_not_implemented_before_a_compiled_kernel_is_its_precondition(
    error: str, call: str, in_else: bool
) -> None:
    guard = ["    if not x.is_cuda:", f"        raise {error}"]
    body = (["    else:", f"        {call}"] if in_else else [f"    {call}"]) + ["    return x"]
    source = "\n".join(["import torch", "", "", "def forward(x, out):", *guard, *body]) + "\n"
    found = check_text(source, "m.py", ruleset_for(["TP103"], None)).findings
    # the oracle: the code says only CUDA is implemented, and what follows is a compiled kernel
    left = error == "NotImplementedError" and COMPILED[call]
    assert bool(found) != left, source


@pytest.mark.parametrize(
    "guard",
    [
        "@pytest.mark.skipif(not torch.cuda.is_available(), reason='cuda')\ndef test_moves():\n",
        "def test_moves():\n    if not torch.cuda.is_available():\n        pytest.skip('no gpu')\n",
        "def test_on_cuda():\n",
    ],
)
def test_a_tests_expectation_about_cuda_is_not_rewritten(guard: str) -> None:
    """`assert y.is_cuda` in a test about CUDA is what it checks, not a branch (issue 34):
    `!= "cpu"` would pass on MPS, where the test is about CUDA."""
    source = (
        "import pytest\nimport torch\n\n\n" + guard + "    y = torch.zeros(2, device='cuda')\n"
        "    assert y.is_cuda\n"
    )
    found = check_text(source, "test_x.py", ruleset_for(["TP103"], None)).findings
    assert found and all(f.fix is None for f in found)

"""CUDA code in the arm of a device test that runs on every accelerator is no port: reported.

``if device.type != "cpu": model.cuda()`` crashes on MPS and XPU; only an arm
that the test confines to CUDA (``device.type == "cuda"``, ``x.is_cuda``) is ported.
"""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source
from torchport.check.semantic._guards import every_accelerator_arm

# (test, which arm holds the CUDA code) -> whether that arm runs on every accelerator
_EVERY = [
    ('device.type != "cpu"', "body"),
    ('str(device) != "cpu"', "body"),
    ('not device.type == "cpu"', "body"),
    ('device.type == "cpu"', "else"),
    ("x.is_cpu", "else"),
    ("not x.is_cpu", "body"),
]
_CUDA_ONLY = [
    ('device.type == "cuda"', "body"),
    ('device.type != "cuda"', "else"),
    ("x.is_cuda", "body"),
    ("not x.is_cuda", "else"),
]
_LINES = ("x = x.cuda()", "torch.cuda.synchronize()", 'y = torch.ones(2, device="cuda")')


def _source(test: str, arm: str, line: str) -> str:
    body, other = (line, "pass") if arm == "body" else ("pass", line)
    return (
        f"import torch\n\ndef f(x, device):\n    if {test}:\n        {body}\n"
        f"    else:\n        {other}\n    return x\n"
    )


@given(st.sampled_from(_EVERY), st.sampled_from(_LINES))
def test_cuda_in_an_every_accelerator_arm_is_reported(case: tuple[str, str], line: str) -> None:
    test, arm = case
    assert check_source(_source(test, arm, line), select=["TP101", "TP401"])


@given(st.sampled_from(_CUDA_ONLY), st.sampled_from(_LINES))
def test_cuda_in_a_cuda_arm_is_ported(case: tuple[str, str], line: str) -> None:
    test, arm = case
    assert check_source(_source(test, arm, line), select=["TP101", "TP401"]) == []


def test_early_return_on_the_cpu_leaves_every_accelerator() -> None:
    source = (
        'import torch\n\ndef f(x, device):\n    if device.type == "cpu":\n        return x\n'
        "    torch.cuda.synchronize()\n    return x\n"
    )
    assert [f.code for f in check_source(source, select=["TP401"])] == ["TP401"]


def test_the_arm_predicate_by_hand() -> None:
    for test, arm in _EVERY:
        expr = ast.parse(test, mode="eval").body
        assert every_accelerator_arm(expr, arm == "body"), test
        assert not every_accelerator_arm(expr, arm != "body"), test
    for test, arm in _CUDA_ONLY:
        expr = ast.parse(test, mode="eval").body
        assert not every_accelerator_arm(expr, arm == "body"), test

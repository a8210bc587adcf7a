"""``.cuda()`` under ``redirect("cpu")`` gives the strides CUDA's copy has.

The oracle is torch's own ``_to_copy`` to another device: ``x.to("meta")`` takes the path
a copy to CUDA takes (TensorConversions.cpp: a non-overlapping and dense tensor keeps its
strides, any other gets dense strides in the same order), so its strides are CUDA's; a
``.view`` that works on it works on CUDA's copy.
"""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import given

import torchport as tp
from tests.sim.strided import build, views


def _view_works(x: torch.Tensor) -> bool:
    try:
        x.view(-1)
    except RuntimeError:
        return False
    return True


@given(views())
def test_a_copy_to_cuda_on_the_host_has_cudas_strides(case: dict[str, Any]) -> None:
    x = build(**case)
    cuda = x.to("meta")  # torch's _to_copy to another device
    with tp.redirect("cpu"):
        moved = [x.cuda(), x.to("cuda"), x.to(torch.device("cuda", 0))]
    for y in moved:
        assert y.device.type == "cpu"
        assert y.stride() == cuda.stride(), (case, y.stride(), cuda.stride())
        assert torch.equal(y, x)
        assert _view_works(y) == _view_works(cuda)


def test_the_audit_still_predicts_each_copy_the_redirect_makes_dense() -> None:
    x = torch.arange(12.0).reshape(3, 4)
    with tp.redirect("cpu"), tp.audit() as report:
        x[:, :2].cuda()
        x[:, ::2].to("cuda")
        x.cuda()
        x.t().to("cuda")
    copies = [e for e in report.entries if e.kind == "transfer"]
    assert sum(e.count for e in copies) == 4
    assert sum(e.bytes for e in copies) == (6 + 6 + 12 + 12) * 4

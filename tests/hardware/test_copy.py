"""The copy engine: one plan (stay, direct, staged), then one run; meta stands in for a device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from torchport import hardware

META = torch.device("meta")
CPU = torch.device("cpu")
GIB = 1024**3


def test_plan_routes_each_tensor_once() -> None:
    a, b = torch.ones(2), torch.ones(3, requires_grad=True)
    there = torch.empty(2, device="meta")
    plan = hardware.plan_copy([a, b, there, a], META)
    # Without a cast the plan does not check each tensor: Tensor.to returns `there`.
    assert {0, 1} <= set(plan.direct) and 3 not in plan.direct and not plan.staged
    precise = hardware.plan_copy([a, b, there, a], META, pack=True)
    assert precise.stay == [2] and precise.direct == [1] and precise.staged == [0]
    done = plan.run(non_blocking=None)
    assert done.tensors[0] is done.tensors[3]  # a repeated tensor is copied once
    assert done.tensors[2] is there
    assert done.copies == 2 and done.nbytes == a.nbytes + b.nbytes
    assert done.tensors[1].requires_grad


def test_a_noop_plan_runs_nothing() -> None:
    tensors = [torch.ones(2), torch.zeros(1)]
    plan = hardware.plan_copy(tensors, CPU)
    assert plan.noop
    done = plan.run(non_blocking=None)
    assert done.tensors == tensors and done.copies == 0


def test_dtype_casts_floating_tensors_and_counts_as_a_move() -> None:
    f, i = torch.ones(2), torch.arange(3)
    plan = hardware.plan_copy([f, i], CPU, dtype=torch.float16)
    assert plan.direct == [0] and plan.stay == [1]
    out = plan.run(non_blocking=False).tensors
    assert out[0].dtype == torch.float16 and out[1] is i


def test_automatic_packing_only_for_cuda(fake_accelerator: Callable[..., Any]) -> None:
    batch = [torch.ones(16) for _ in range(8)]
    assert not hardware.plan_copy(batch, META).packed
    fake_accelerator([GIB])
    assert hardware.should_pack(batch, torch.device("cuda", 0))
    assert not hardware.should_pack(batch, META)
    forced = hardware.plan_copy(batch, META, pack=True)
    assert forced.packed and forced.staged == list(range(8))


@given(st.lists(st.integers(0, 5), max_size=12), st.booleans())
def test_direct_indices_are_sorted_whatever_the_mix(kinds: list[int], pack: bool) -> None:
    """Mixed stageable/unstageable tensors: results land at their own positions."""
    tensors = [
        torch.full((k + 1,), float(i), requires_grad=bool(k % 2)) for i, k in enumerate(kinds)
    ]
    done = hardware.copy_tensors(tensors, CPU, dtype=torch.float64, pack=pack or None)
    for i, (src, got) in enumerate(zip(tensors, done.tensors, strict=True)):
        assert got.shape == src.shape and got.dtype == torch.float64
        assert torch.equal(got.detach(), torch.full_like(got, float(i)))


def test_copy_one_defers_the_wait() -> None:
    pending: set[torch.device] = set()
    t = torch.ones(3)
    out = hardware.copy_one(t, META, pending=pending)
    assert out.device == META and not pending
    assert hardware.copy_one(t, CPU, pending=pending) is t


def test_record_stream_refuses_subclasses(fake_accelerator: Callable[..., Any]) -> None:
    backend = fake_accelerator([GIB])
    with pytest.raises(TypeError):
        hardware.record_stream(torch.nn.Parameter(torch.ones(1)), backend.consumer)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_copies_to_the_cpu_are_pageable_and_complete() -> None:
    src = {"x": torch.randn(1 << 20, device="cuda"), "i": torch.arange(7, device="cuda")}
    torch.cuda._sleep(5_000_000)  # the copies queue behind this
    out = hardware.copy_tensors(list(src.values()), CPU).tensors
    for got, want in zip(out, src.values(), strict=True):
        assert got.is_cpu and not got.is_pinned()
        assert torch.equal(got, want.cpu())
    pinned = hardware.copy_tensors([src["x"]], CPU, non_blocking=True).tensors[0]
    torch.cuda.synchronize()
    assert pinned.is_pinned()  # asked for non_blocking=True: torch's pinned result

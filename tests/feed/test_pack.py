"""Packed copies: values, dtypes, layout and views, on the CPU and the meta device."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from torchport.feed import StagingPool, pack_to_device, should_pack
from torchport.feed._pack import transfer
from torchport.hardware import ALIGN as _ALIGN

DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint16,
    torch.uint32,
    torch.uint64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
    torch.complex64,
    torch.complex128,
]


def _make(seed: int, dtype: torch.dtype, shape: tuple[int, ...], layout: str) -> torch.Tensor:
    """A tensor of ``shape`` with random bytes, laid out as asked (contiguous or not)."""
    g = torch.Generator().manual_seed(seed)
    if layout == "transposed" and len(shape) >= 2:
        base = _make(seed, dtype, (*shape[:-2], shape[-1], shape[-2]), "contiguous")
        return base.transpose(-1, -2)
    if layout == "strided" and len(shape) >= 1:
        base = _make(seed, dtype, (*shape[:-1], shape[-1] * 2), "contiguous")
        return base[..., ::2]
    if dtype == torch.bool:
        t = torch.randint(0, 2, shape, generator=g).bool()
    elif dtype.is_floating_point or dtype.is_complex:
        t = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    else:
        info = torch.iinfo(dtype)
        t = torch.randint(max(info.min, -1000), min(info.max, 1000), shape, generator=g)
        t = t.to(dtype)
    if layout == "conj" and dtype.is_complex:
        t = t.conj()  # a lazy conjugate: the gather must resolve it
    return t


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The value's bytes (NaN-safe equality, conj/neg resolved)."""
    flat = torch.empty(t.numel(), dtype=t.dtype)
    flat.copy_(t.resolve_conj().resolve_neg().reshape(-1))
    return flat.view(torch.uint8)


Spec = tuple[int, torch.dtype, tuple[int, ...], str]

tensor_specs = st.tuples(
    st.integers(0, 2**31 - 1),
    st.sampled_from(DTYPES),
    st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple),
    st.sampled_from(["contiguous", "transposed", "strided", "conj"]),
)


@given(st.lists(tensor_specs, min_size=0, max_size=12))
def test_round_trip_on_cpu_keeps_values_dtypes_and_shapes(specs: list[Spec]) -> None:
    sources = [_make(*spec) for spec in specs]
    out = pack_to_device(sources, "cpu", non_blocking=False)
    assert len(out) == len(sources)
    for src, got in zip(sources, out, strict=True):
        assert got.dtype == src.dtype
        assert got.shape == src.shape
        assert got.device.type == "cpu"
        # The layout .to gives: a dense tensor's strides, else contiguous (as clone does).
        assert got.stride() == src.clone().stride()
        assert torch.equal(_bytes(got), _bytes(src))
        if src.numel():
            assert got.data_ptr() != src.data_ptr()


@given(st.lists(tensor_specs, min_size=2, max_size=8), st.data())
def test_results_are_independent_tensors(specs: list[Spec], data: st.DataObject) -> None:
    sources = [_make(*spec) for spec in specs]
    keep = [_bytes(s).clone() for s in sources]
    out = pack_to_device(sources, "cpu", non_blocking=False)
    before = [_bytes(o).clone() for o in out]
    k = data.draw(st.integers(0, len(out) - 1))
    # Grown in place and overwritten: a result that shared storage would spill over.
    out[k].resize_(100)
    out[k].view(torch.uint8).fill_(7)
    for i, o in enumerate(out):
        if i != k:
            assert torch.equal(_bytes(o), before[i])
    for s, b in zip(sources, keep, strict=True):
        assert torch.equal(_bytes(s), b)  # sources untouched


@given(st.lists(tensor_specs, min_size=1, max_size=10))
def test_meta_target_structure_and_one_copy(specs: list[Spec]) -> None:
    sources = [_make(*spec) for spec in specs]
    done = transfer(sources, "meta", non_blocking=False, pool=StagingPool())
    assert [(t.shape, t.dtype) for t in done.tensors] == [(s.shape, s.dtype) for s in sources]
    assert all(t.device.type == "meta" for t in done.tensors)
    payload = sum(s.numel() * s.element_size() for s in sources)
    assert payload <= done.nbytes < payload + _ALIGN * len(sources)
    assert done.copies == (1 if payload else 0)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_each_result_has_a_storage_of_its_own_sized_to_it(device: str) -> None:
    sources = [torch.ones(3, dtype=torch.uint8), torch.ones(5, dtype=torch.complex128)]
    sources += [torch.tensor(2.5), torch.ones(7, dtype=torch.bool), torch.ones(2, 3)]
    out = transfer(sources, device, non_blocking=False, pool=StagingPool()).tensors
    assert [o.untyped_storage().nbytes() for o in out] == [3, 80, 4, 7, 24]
    if device == "cpu":
        assert len({o.untyped_storage().data_ptr() for o in out}) == len(out)
        assert out[2].shape == () and out[2].item() == 2.5
        saved = io.BytesIO()
        torch.save(out[4], saved)  # its own 24 bytes, not the batch
        whole = io.BytesIO()
        torch.save(torch.ones(2 * 3 + 64), whole)
        assert saved.tell() < whole.tell()


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_packed_layouts_are_those_to_gives(device: str) -> None:
    images = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    weights = torch.randn(4, 6).t()
    sliced = torch.arange(10.0)[::2]
    expanded = torch.ones(3, 1).expand(3, 4)
    sources = [images, weights, sliced, expanded]
    out = transfer(sources, device, non_blocking=False, pool=StagingPool()).tensors
    assert [o.stride() for o in out] == [s.to("meta").stride() for s in sources]
    assert out[0].is_contiguous(memory_format=torch.channels_last)
    if device == "cpu":
        assert all(torch.equal(o, s) for o, s in zip(out, sources, strict=True))


def test_staging_is_sized_to_its_class_not_a_power_of_two() -> None:
    pool = StagingPool(max_slots=1)
    a = torch.arange(3, dtype=torch.float32)  # 12 bytes at 0
    b = torch.arange(5, dtype=torch.uint8)  # 5 bytes at 64
    done = transfer([a, b], "meta", non_blocking=False, pool=pool)
    assert done.nbytes == 69
    assert pool.nbytes == 128  # the smallest class: 64-byte steps
    big = [torch.ones(65 * 1024 * 1024, dtype=torch.uint8)] * 1
    transfer([*big, torch.ones(1)], "meta", non_blocking=False, pool=pool)
    # 65 MiB + 68 bytes: at most 1/32 over, where torch's pinned allocator takes 128 MiB.
    assert 65 * 1024 * 1024 < pool.nbytes <= 65 * 1024 * 1024 * 33 // 32 + 64


def test_pool_reuses_its_buffer_and_keeps_its_bound() -> None:
    pool = StagingPool(max_slots=1)
    small = [torch.ones(10), torch.ones(10)]
    transfer(small, "meta", non_blocking=False, pool=pool)
    transfer(small[:1], "meta", non_blocking=False, pool=pool)
    assert pool.allocations == 1
    big = [torch.ones(1000), torch.ones(10)]
    transfer(big, "meta", non_blocking=False, pool=pool)
    assert pool.allocations == 2
    # The new size's class (4000 -> 4032 aligned -> 4072 bytes -> 4096); the old slot
    # is parked until trim() (unpinning may synchronize, so not inside a loop).
    assert pool.nbytes == 4096 + 128
    pool.trim()
    assert pool.nbytes == 4096
    transfer(small, "meta", non_blocking=False, pool=pool)
    assert pool.allocations == 2  # the big slot serves the small batch


def test_dtype_casts_floating_tensors_only() -> None:
    sources = [
        torch.randn(4, dtype=torch.float64),
        torch.arange(4),
        torch.tensor([True, False]),
        torch.randn(2, dtype=torch.complex64),
        torch.randn(3, 2).t(),
    ]
    out = pack_to_device(sources, "cpu", non_blocking=False, dtype=torch.bfloat16)
    assert [o.dtype for o in out] == [
        torch.bfloat16,
        torch.int64,
        torch.bool,
        torch.complex64,
        torch.bfloat16,
    ]
    for src, got in zip(sources, out, strict=True):
        want = src.to(torch.bfloat16) if src.is_floating_point() else src
        assert torch.equal(got, want)


_FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


@given(
    seed=st.integers(0, 2**31 - 1),
    source=st.sampled_from(_FLOATS),
    cast=st.sampled_from([*_FLOATS, torch.float8_e4m3fn, None]),
    how=st.sampled_from(["neg_view", "conj_imag", "neg_transposed"]),
    packed=st.booleans(),
)
def test_a_negative_view_keeps_its_sign_through_a_cast(
    seed: int, source: torch.dtype, cast: torch.dtype | None, how: str, packed: bool
) -> None:
    # A negative view (z.conj().imag, torch._neg_view) is bytes plus a sign bit. The
    # oracle: negation commutes with rounding, so the value is -(the plain bytes cast).
    g = torch.Generator().manual_seed(seed)
    plain = torch.randn(3, 4, generator=g, dtype=torch.float64).to(source)
    if how == "conj_imag":
        if source not in (torch.float32, torch.float64):
            return  # a complex tensor's parts are float32 or float64
        src = torch.complex(torch.zeros_like(plain), plain).conj().imag
    elif how == "neg_transposed":
        plain = plain.t()
        src = torch._neg_view(plain)
    else:
        src = torch._neg_view(plain)
    assert src.is_neg()
    want = plain.to(cast or source).to(torch.float64).neg()
    sources = [src, *(torch.ones(2) for _ in range(4))]
    if packed:
        got = pack_to_device(sources, "cpu", non_blocking=False, dtype=cast)[0]
    else:
        done = transfer(sources, "cpu", non_blocking=False, dtype=cast, packed=False)
        got = done.tensors[0]
    assert got.dtype == (cast or source)
    assert torch.equal(got.to(torch.float64), want), (got, want)


def test_duplicates_stay_shared_and_unstageable_tensors_are_moved_one_by_one() -> None:
    t = torch.ones(4)
    grad = torch.ones(3, requires_grad=True)
    already = torch.empty(2, device="meta")
    out = pack_to_device([t, grad, t, already], "meta", non_blocking=False)
    assert out[0] is out[2]
    assert out[1].requires_grad and out[1].grad_fn is not None  # autograd edge kept
    assert out[3] is already


def test_empty_inputs_and_all_empty_tensors() -> None:
    assert pack_to_device([], "meta", non_blocking=False) == []
    out = pack_to_device([torch.empty(0, 3), torch.empty(0)], "cpu", non_blocking=False)
    assert [o.shape for o in out] == [(0, 3), (0,)]


def test_non_tensor_raises_type_error() -> None:
    with pytest.raises(TypeError, match=r"tensors\[1\] is a str"):
        pack_to_device([torch.ones(1), "x"], "meta", non_blocking=False)  # type: ignore[list-item]


def test_unpacked_transfer_gives_separate_allocations() -> None:
    sources = [torch.ones(3), torch.zeros(2, 2), torch.empty(0)]
    done = transfer(sources, "meta", non_blocking=False, packed=False)
    assert done.copies == 2
    assert [t.shape for t in done.tensors] == [(3,), (2, 2), (0,)]


def test_should_pack_heuristic(fake_accelerator: Callable[..., Any]) -> None:
    fake_accelerator([1 << 30])
    cuda = torch.device("cuda", 0)
    small = [torch.empty(16) for _ in range(8)]
    assert should_pack(small, cuda)
    assert should_pack(small, "cuda")
    assert not should_pack(small[:3], cuda)  # too few to pay off
    assert not should_pack(small, torch.device("cpu"))  # nothing crosses a link
    # Measured slower per tensor to meta/CPU (benchmarks/RESULTS.md); MPS/XPU unmeasured.
    assert not should_pack(small, torch.device("meta"))
    big = [torch.empty(1 << 20, dtype=torch.uint8) for _ in range(8)]
    assert not should_pack(big, cuda)  # mean above 256 KiB
    many = [torch.empty(250_000, dtype=torch.uint8) for _ in range(300)]
    assert not should_pack(many, cuda)  # 75 MB in total
    on_device = [torch.empty(16, device="meta") for _ in range(8)]
    assert not should_pack(on_device, cuda)  # not host tensors: nothing to stage


def test_the_default_pool_frees_slots_it_parked_when_a_batch_outgrew_them() -> None:
    from torchport.hardware import default_pool

    pool = default_pool()
    for numel in (10, 1000, 100_000, 10_000_000):
        pack_to_device([torch.ones(numel), torch.ones(3)], "meta", non_blocking=False)
        assert pool._retiring == []  # parked slots were given back, not kept for good
    assert pool.nbytes <= 2 * 41_000_000  # at most max_slots slots of the largest class

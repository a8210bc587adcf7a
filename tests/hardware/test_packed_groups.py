"""The batched split of packed copies, run with the CPU standing in for the device.

``run_staged`` takes the batched path only for a device that is neither the CPU
nor meta (``tests/feed/test_pack_on_sim.py`` checks it end to end on the
simulator); here its three steps run on CPU tensors so the layout, the gather and
the split are checked wherever torch runs. The oracle is the source itself: its
values, and the strides ``clone`` gives (the layout ``.to`` gives).
"""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from tests.hardware.float_bits import with_raw_bits
from torchport.hardware._packed_transfer import _gather, _gather_groups, _layout, _split_groups

DTYPES = [torch.bool, torch.uint8, torch.int16, torch.int64, torch.uint32, torch.float16]
DTYPES += [torch.bfloat16, torch.float32, torch.float64, torch.float8_e5m2, torch.complex64]
DTYPES += [torch.complex128]


def _make(seed: int, dtype: torch.dtype, shape: tuple[int, ...], layout: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    wide = torch.randn(shape, generator=g, dtype=torch.float64) * 100
    if dtype.is_floating_point or dtype.is_complex:
        if wide.numel() >= 2:  # bits a float round trip must keep
            wide.view(-1)[:2] = torch.tensor([-0.0, float("nan")], dtype=torch.float64)
        t = wide.to(dtype)
        t = with_raw_bits(t, g)  # NaN payloads, signalling NaNs, subnormals
    else:
        t = wide.abs().remainder(100).to(dtype)
    if layout == "transposed" and t.dim() >= 2:
        return t.transpose(0, 1).contiguous().transpose(0, 1)
    if layout == "conj" and dtype.is_complex:
        return t.conj()
    if layout == "neg" and dtype in (torch.float16, torch.float32, torch.float64):
        return torch._neg_view(t)
    return t


def _bytes(t: torch.Tensor) -> torch.Tensor:
    flat = torch.empty(t.numel(), dtype=t.dtype)
    flat.copy_(t.resolve_conj().resolve_neg().reshape(-1))
    return flat.view(torch.uint8)


specs = st.tuples(
    st.integers(0, 2**31 - 1),
    st.sampled_from(DTYPES),
    st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple),
    st.sampled_from(["contiguous", "transposed", "conj", "neg"]),
)


@given(st.lists(specs, min_size=1, max_size=10), st.sampled_from([None, torch.bfloat16]))
def test_groups_round_trip_with_the_layout_to_gives_in_storages_of_their_own(
    spec_list: list[tuple[int, torch.dtype, tuple[int, ...], str]], dtype: torch.dtype | None
) -> None:
    sources = [_make(*spec) for spec in spec_list]
    n = len(sources)
    groups, entries, total = _layout(sources, range(n), dtype, batched=True)
    host = torch.full((total,), 0xAB, dtype=torch.uint8)
    _gather_groups(groups, host)
    _gather(sources, entries, host)
    out: list[torch.Tensor] = list(sources)
    fresh: list[torch.Tensor] = []
    _split_groups(host.clone(), groups, out, fresh)  # the clone stands for the device buffer
    grouped = {i for group in groups for i in group.indices}
    assert grouped.isdisjoint(entry.index for entry in entries)
    assert len(grouped) + len(entries) == n
    for i in grouped:
        src, got = sources[i], out[i]
        cast = dtype if dtype is not None and src.is_floating_point() else src.dtype
        assert got.dtype == cast and got.shape == src.shape
        assert got.stride() == src.clone().stride()
        want = src.resolve_conj().resolve_neg().to(cast)
        if cast == src.dtype:
            assert torch.equal(_bytes(got), _bytes(want))  # every bit, NaN payloads too
        else:  # a cast's NaN payload is torch's choice: 2.6's `cat` keeps it, `.to` does not
            assert torch.equal(got.isnan(), want.isnan())
            kept = ~want.isnan()
            assert torch.equal(_bytes(got[kept]), _bytes(want[kept]))
        assert got.untyped_storage().nbytes() == src.numel() * cast.itemsize
    moved = [out[i] for i in sorted(grouped)]
    assert len({t.untyped_storage().data_ptr() for t in moved}) == len(moved)

"""Packed copies to the simulated accelerator: values, layouts and independence, per tensor.

The packed path splits the device buffer in batches (a same-width integer view of
each tensor, one ``torch._foreach_add(views, 0)`` allocating every result; on CUDA
float32 and float64 go through ``torch._foreach_clamp_min(views, -inf)`` instead,
checked in tests/hardware and tests/feed/test_cuda.py), which only a device holding
values can check; half the floats are raw random bits (NaN payloads,
signalling NaNs, subnormals), which every path must give back bit for bit. The
oracle is the per-tensor ``.to`` on the same device (its strides) and the source's
own bytes (its values); nothing of the packing code is asked. The simulator changes
the process for good, so the checks run in a child (``tests/sim/isolated.py``).
"""

from __future__ import annotations

import pytest

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator

_CHILD = """
import torchport as tp
from tests.hardware.float_bits import with_raw_bits
from hypothesis import HealthCheck, given, settings, strategies as st

SIM = simulate_accelerator()
DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.uint16, torch.uint32, torch.uint64, torch.float16, torch.bfloat16,
    torch.float32, torch.float64, torch.float8_e4m3fn, torch.float8_e5m2,
    torch.complex32, torch.complex64, torch.complex128,
]
LAYOUTS = ["contiguous", "transposed", "strided", "conj", "neg", "odd_unit_strides",
           "channels_last"]
count = {"tensors": 0, "batches": 0}


def make(seed, dtype, shape, layout):
    g = torch.Generator().manual_seed(seed)
    if layout == "transposed" and len(shape) >= 2:
        flipped = (*shape[:-2], shape[-1], shape[-2])
        return make(seed, dtype, flipped, "contiguous").transpose(-1, -2)
    if layout == "strided" and len(shape) >= 1:
        return make(seed, dtype, (*shape[:-1], shape[-1] * 2), "contiguous")[..., ::2]
    if layout == "channels_last" and len(shape) == 4:
        return make(seed, dtype, shape, "contiguous").contiguous(memory_format=torch.channels_last)
    if layout == "odd_unit_strides" and 1 in shape:
        t = make(seed, dtype, shape, "contiguous")
        stride = [100 if n == 1 else s for n, s in zip(shape, t.stride())]
        return t.as_strided(shape, stride)  # contiguous: a size-1 dim's stride is free
    if dtype == torch.bool:
        t = torch.randint(0, 2, shape, generator=g).bool()
    elif dtype.is_floating_point or dtype.is_complex:
        wide = torch.randn(shape, generator=g, dtype=torch.float64)
        if wide.numel() >= 3 and dtype.is_floating_point:
            flat = wide.view(-1)
            flat[0], flat[1], flat[2] = -0.0, float("inf"), float("nan")
        t = wide.to(dtype)
        t = with_raw_bits(t, g)  # NaN payloads, signalling NaNs, subnormals
    else:
        info = torch.iinfo(dtype)
        t = torch.randint(max(info.min, -1000), min(info.max, 1000), shape, generator=g).to(dtype)
    if layout == "conj" and dtype.is_complex and dtype != torch.complex32:
        t = t.conj()
    if layout == "neg" and dtype in (torch.float16, torch.float32, torch.float64):
        t = torch._neg_view(t)
    return t


def value_bytes(t, dtype):
    plain = t.resolve_conj().resolve_neg().to(dtype)
    flat = torch.empty(plain.numel(), dtype=dtype)
    flat.copy_(plain.reshape(-1))
    return flat.view(torch.uint8)


specs = st.tuples(
    st.integers(0, 2**31 - 1),
    st.sampled_from(DTYPES),
    st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple),
    st.sampled_from(LAYOUTS),
)


@settings(max_examples=60, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(specs, min_size=1, max_size=12),
       st.sampled_from([None, torch.float16, torch.bfloat16, torch.float64]),
       st.booleans(), st.data())
def packed(spec_list, dtype, non_blocking, data):
    sources = [make(*spec) for spec in spec_list]
    kept = [t.clone() for t in sources]
    out = tp.to_device(sources, SIM, pack=True, dtype=dtype, non_blocking=non_blocking)
    torch.accelerator.synchronize()
    casts = [dtype if dtype is not None and s.is_floating_point() else s.dtype for s in sources]
    for s, o, cast in zip(sources, out, casts, strict=True):
        assert o.device == SIM and o.dtype == cast and o.shape == s.shape, (s, o)
        assert o.stride() == s.to(SIM, cast).stride(), (o.stride(), s.stride())
        if cast == s.dtype:  # every bit, NaN payloads too
            assert torch.equal(value_bytes(o.cpu(), cast), value_bytes(s, cast)), (s, o.cpu())
        else:  # a cast's NaN payload is torch's choice: 2.6's `cat` keeps it, `.to` does not
            got, want = o.cpu(), s.resolve_conj().resolve_neg().to(cast)
            assert torch.equal(got.isnan(), want.isnan()), (s, got)
            numbers = ~want.isnan()
            assert torch.equal(value_bytes(got[numbers], cast), value_bytes(want[numbers], cast))
        assert o.untyped_storage().nbytes() == s.numel() * cast.itemsize
    before = [value_bytes(o.cpu(), o.dtype) for o in out]
    k = data.draw(st.integers(0, len(out) - 1))
    out[k].resize_(100)  # grown in place: a result that shared storage would spill over
    out[k].view(torch.uint8).fill_(7)
    for i, o in enumerate(out):
        if i != k:
            assert torch.equal(value_bytes(o.cpu(), o.dtype), before[i]), i
    for s, c in zip(sources, kept, strict=True):
        assert torch.equal(value_bytes(s, s.dtype), value_bytes(c, c.dtype))  # untouched
    count["tensors"] += len(sources)
    count["batches"] += 1


packed()
print(json.dumps(count))
"""


def test_packed_results_on_the_simulator_match_to_value_layout_and_storage() -> None:
    count = run_isolated(_CHILD, timeout=600)
    assert count["batches"] >= 60 and count["tensors"] >= 60

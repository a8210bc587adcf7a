"""CUDA-only behaviour of the feed pillar: side stream, event guards, pinned reuse, packed copies.

Run on a machine with a GPU: ``pytest -m gpu tests/feed``. Each test races the host
against a consumer stream slowed with ``torch.cuda._sleep``, so a missing guard
shows up as wrong values rather than as a timing.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
import torch

import torchport as tp
from torchport.feed import StagingPool, pack_to_device

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

_SPIN = 2_000_000  # GPU clock cycles: about a millisecond of consumer-stream work


def _spin(cycles: int) -> None:
    """Keeps the current stream busy for ``cycles`` GPU clocks (torch leaves it untyped)."""
    cast(Any, torch.cuda)._sleep(cycles)


def _host_batches(n: int, numel: int) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    return [
        {"x": torch.randn(numel, generator=g), "i": torch.tensor(i), "w": torch.rand(3, 5).t()}
        for i in range(n)
    ]


def test_side_stream_is_created_once_and_kept_across_epochs() -> None:
    loader = tp.DeviceLoader(_host_batches(4, 1000), "cuda")
    assert [int(b["i"]) for b in loader] == [0, 1, 2, 3]
    stream = loader.side_stream
    assert stream is not None
    assert stream != torch.cuda.current_stream()
    for _ in range(2):
        for b in loader:
            assert b["x"].device.type == "cuda"
        assert loader.side_stream is stream


@pytest.mark.parametrize("pack", [True, False])
def test_values_survive_a_slow_consumer_that_modifies_and_frees_at_once(pack: bool) -> None:
    batches = _host_batches(12, 256 * 1024)
    want = [b["x"].sum().item() + b["w"].sum().item() for b in batches]
    got = []
    loader = tp.DeviceLoader(batches, "cuda", depth=2, pack=pack)
    for batch in loader:
        _spin(_SPIN)  # the consumer stream lags: copies and frees race ahead
        got.append(batch["x"].sum() + batch["w"].sum())
        batch["x"].zero_()  # in-place on the consumer stream
        del batch
        # Fresh allocations on the consumer stream would land on the batch's memory
        # if record_stream did not hold it until the queued work above has run.
        torch.full((256 * 1024,), float("nan"), device="cuda")
    torch.cuda.synchronize()
    assert [g.item() for g in got] == pytest.approx(want, rel=1e-4)
    # The sources were never touched by the staging path.
    assert batches[0]["x"].abs().sum() > 0


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_pinned_staging_is_reused_and_bounded_by_depth(depth: int) -> None:
    batches = _host_batches(10, 512 * 1024)
    batch_bytes = sum(t.numel() * t.element_size() for t in batches[0].values())
    loader = tp.DeviceLoader(batches, "cuda", depth=depth, pack=True)
    for _ in range(2):
        for batch in loader:
            _spin(_SPIN)
            batch["x"].sum()
    torch.cuda.synchronize()
    stats = loader.stats
    # allocated once, reused for 20 batches: no more than `depth`, fewer when a copy has
    # landed before the next batch is staged (its slot is free again)
    assert 1 <= stats.staging_buffers <= depth
    assert 0 < stats.pinned_bytes <= depth * batch_bytes * 1.05
    assert stats.packed_batches == 20 and stats.copies == 20


def test_dataloader_pinned_batches_are_copied_directly() -> None:
    from torch.utils.data import DataLoader, TensorDataset

    ds = TensorDataset(torch.randn(64, 1000), torch.arange(64))
    dl = DataLoader(ds, batch_size=16, pin_memory=True)
    loader = tp.DeviceLoader(dl, "cuda", pack=False)
    rows = torch.cat([b[1] for b in loader]).cpu()
    assert rows.tolist() == list(range(64))
    assert loader.stats.pinned_bytes == 0  # nothing staged: the batches were pinned already


def test_packed_copy_on_cuda_is_correct_and_aligned() -> None:
    sources = [
        torch.randn(5, 3).t(),
        torch.tensor(7, dtype=torch.int16),
        torch.empty(0, 4),
        torch.tensor([True, False, True]),
        torch.randn(4, dtype=torch.complex64).conj(),
        torch.randint(0, 255, (33,), dtype=torch.uint8),
    ]
    out = pack_to_device(sources, "cuda", non_blocking=True, pool=StagingPool())
    torch.cuda.synchronize()
    base = out[0].untyped_storage().data_ptr()
    for src, got in zip(sources, out, strict=True):
        assert got.device.type == "cuda" and got.dtype == src.dtype and got.shape == src.shape
        assert torch.equal(got.cpu(), src.resolve_conj())
        assert (got.data_ptr() - base) % 64 == 0 or got.numel() == 0


@pytest.mark.parametrize(
    ("dtype", "same_width", "exponent"),
    [
        (torch.float16, torch.int16, 0x7C00),
        (torch.bfloat16, torch.int16, 0x7F80),
        (torch.float32, torch.int32, 0x7F800000),
        (torch.float64, torch.int64, 0x7FF0000000000000),
    ],
)
def test_packed_floats_keep_every_bit_on_cuda(
    dtype: torch.dtype, same_width: torch.dtype, exponent: int
) -> None:
    # Random patterns, a quarter forced to NaN or inf (payloads, signalling NaNs),
    # in 1-d and 2-d groups; the oracle is the source's bits.
    g = torch.Generator().manual_seed(0)
    info = torch.iinfo(same_width)
    sources = []
    for shape in [(4096,), (64, 64), (1,), (3, 5)] * 8:
        bits = torch.randint(info.min, info.max, shape, generator=g, dtype=same_width)
        pick = torch.randint(0, 4, shape, generator=g)
        sources.append(torch.where(pick == 0, bits | exponent, bits).view(dtype))
    out = tp.to_device(sources, "cuda", pack=True)
    torch.cuda.synchronize()
    for src, got in zip(sources, out, strict=True):
        assert got.dtype == dtype and got.shape == src.shape
        assert torch.equal(got.cpu().view(same_width), src.view(same_width))


def test_staging_reuse_waits_for_the_copy_still_reading_it() -> None:
    pool = StagingPool(max_slots=1)
    first = [torch.full((1 << 20,), 1.0), torch.full((8,), 2.0)]
    second = [torch.full((1 << 20,), 3.0), torch.full((8,), 4.0)]
    _spin(50 * _SPIN)  # the first copy is queued behind this
    out1 = pack_to_device(first, "cuda", non_blocking=True, pool=pool)
    out2 = pack_to_device(second, "cuda", non_blocking=True, pool=pool)  # same slot
    torch.cuda.synchronize()
    assert pool.allocations == 1
    assert torch.equal(out1[0].cpu(), first[0]) and torch.equal(out1[1].cpu(), first[1])
    assert torch.equal(out2[0].cpu(), second[0]) and torch.equal(out2[1].cpu(), second[1])


def test_staging_slots_are_pinned_at_their_size_class() -> None:
    pool = StagingPool(max_slots=1)
    sources = [torch.ones(1000), torch.ones(3, dtype=torch.uint8)]
    pack_to_device(sources, "cuda", non_blocking=True, pool=pool)
    torch.cuda.synchronize()
    assert pool.pinned_nbytes == 4096  # 4035 bytes in its size class, not 8192


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_sparse_nested_and_subclass_tensors_arrive_intact() -> None:
    dense = torch.randn(64, 8)
    sparse = torch.eye(6).to_sparse()
    csr = torch.eye(5).to_sparse_csr()
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)
    param = torch.nn.Parameter(torch.randn(4))
    batches = [(dense, sparse, csr, nested, param) for _ in range(6)]
    loader = tp.DeviceLoader(batches, "cuda", depth=2)
    for batch in loader:
        _spin(_SPIN)
        assert all(t.is_cuda for t in batch)
        assert torch.equal(batch[1].to_dense().cpu(), torch.eye(6))
        assert torch.equal(batch[2].to_dense().cpu(), torch.eye(5))
        assert torch.equal(batch[0].cpu(), dense)
    assert loader.stats.batches == 6


def test_early_break_over_a_generator_loses_no_batch_on_cuda() -> None:
    source = (b for b in _host_batches(6, 100))
    loader = tp.DeviceLoader(source, "cuda", depth=2)
    seen = []
    for batch in loader:
        seen.append(int(batch["i"]))
        if len(seen) == 2:
            break
    seen += [int(batch["i"]) for batch in loader]
    assert seen == list(range(6))


def test_bare_cuda_is_the_current_device_for_both_entry_points() -> None:
    loader = tp.DeviceLoader([], "cuda")
    moved = tp.to_device(torch.ones(1), "cuda")
    assert loader.device == moved.device == torch.device("cuda", torch.cuda.current_device())


def test_packed_results_are_independent_tensors_with_the_layout_to_gives() -> None:
    images = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    weights = torch.randn(4, 6).t()
    sources = [images, weights, torch.arange(7), torch.ones(3), torch.tensor(2.5)]
    out = tp.to_device(sources, "cuda", pack=True)
    assert [o.stride() for o in out] == [s.to("cuda").stride() for s in sources]
    assert len({o.untyped_storage().data_ptr() for o in out}) == len(out)
    out[2].resize_(100)
    out[2].fill_(7)
    assert torch.equal(out[1].cpu(), weights) and torch.equal(out[3].cpu(), torch.ones(3))
    assert all(torch.equal(o.cpu(), s) for o, s in zip(out[:2], sources, strict=False))
    loader = tp.DeviceLoader(
        [{"w": weights, "i": images, "n": torch.arange(3)}] * 4, "cuda", pack=True
    )
    for batch in loader:
        assert batch["w"].stride() == weights.stride() == (1, 6)
        assert torch.equal(batch["w"].cpu(), weights)
        assert batch["i"].is_contiguous(memory_format=torch.channels_last)

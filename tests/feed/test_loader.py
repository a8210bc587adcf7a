"""DeviceLoader: order, exactly-once, pass-through, errors, early exit, attribute pass-through."""

from __future__ import annotations

import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    DistributedSampler,
    IterableDataset,
    TensorDataset,
)

import torchport as tp
from torchport import hardware

GIB = 1024**3


class Pair(NamedTuple):
    x: torch.Tensor
    y: torch.Tensor


def _batches(n: int) -> list[dict[str, Any]]:
    return [
        {
            "x": torch.full((2, 3), float(i)),
            "meta": {"id": i, "pair": Pair(torch.ones(1), torch.zeros(2))},
        }
        for i in range(n)
    ]


class Boom(Exception):
    pass


def _failing_source(good: int, exc: Exception) -> Iterator[dict[str, Any]]:
    yield from _batches(good)
    raise exc


# --- DeviceLoader on the CPU and meta devices ------------------------------------------


@given(n=st.integers(0, 8), depth=st.integers(1, 3), target=st.sampled_from(["cpu", "meta"]))
def test_order_and_exactly_once(n: int, depth: int, target: str) -> None:
    loader = tp.DeviceLoader(_batches(n), target, depth=depth)
    for _ in range(2):  # two epochs
        got = list(loader)
        assert [b["meta"]["id"] for b in got] == list(range(n))
        assert all(b["x"].device.type == target for b in got)
    assert loader.stats.batches == 2 * n


def test_cpu_is_a_pass_through() -> None:
    batches = _batches(4)
    loader = tp.DeviceLoader(batches, "cpu")
    out = list(loader)
    assert all(o is b for o, b in zip(out, batches, strict=True))
    stats = loader.stats
    assert (stats.batches, stats.bytes_moved, stats.copies) == (4, 0, 0)
    assert stats.tensors == 4 * 3


def test_meta_moves_every_tensor_and_keeps_the_structure() -> None:
    loader = tp.DeviceLoader(_batches(3), "meta", pack=True)
    for i, batch in enumerate(loader):
        assert batch["meta"]["id"] == i  # non-tensor leaves untouched
        assert isinstance(batch["meta"]["pair"], Pair)
        assert batch["meta"]["pair"].y.device.type == "meta"
        assert batch["x"].shape == (2, 3) and batch["x"].device.type == "meta"
    stats = loader.stats
    assert stats.packed_batches == 3 and stats.copies == 3
    assert stats.bytes_moved >= 3 * (24 + 4 + 8)


def test_batches_already_on_the_device_are_not_copied() -> None:
    batch = {"x": torch.ones(3, device="meta"), "y": [torch.ones(2, device="meta")]}
    loader = tp.DeviceLoader([batch], "meta", pack=False)
    assert next(iter(loader)) is batch
    assert loader.stats.bytes_moved == 0


def test_real_dataloader_with_a_distributed_sampler_passes_through() -> None:
    ds = TensorDataset(torch.arange(20.0).unsqueeze(1), torch.arange(20))
    sampler: DistributedSampler[Any] = DistributedSampler(
        ds, num_replicas=2, rank=0, shuffle=True, seed=1
    )
    dl = DataLoader(ds, batch_size=4, sampler=sampler)
    loader = tp.DeviceLoader(dl, "meta")
    assert len(loader) == len(dl) == 3
    assert loader.sampler is sampler
    assert loader.dataset is ds
    assert loader.batch_sampler is dl.batch_sampler
    loader.set_epoch(5)
    assert sampler.epoch == 5
    assert sum(b[1].shape[0] for b in loader) == 10


def test_set_epoch_on_the_loader_itself_wins() -> None:
    class Epochs(list[int]):
        epoch = -1

        def set_epoch(self, epoch: int) -> None:
            self.epoch = epoch

    wrapped = Epochs([1, 2])
    tp.DeviceLoader(wrapped, "cpu").set_epoch(3)
    assert wrapped.epoch == 3


def test_missing_attributes_say_what_is_missing() -> None:
    loader = tp.DeviceLoader((b for b in _batches(2)), "cpu")
    with pytest.raises(TypeError, match="no len"):
        len(loader)
    with pytest.raises(AttributeError, match="'sampler'"):
        _ = loader.sampler
    loader.set_epoch(1)  # nothing depends on the epoch: nothing to tell


class EpochBatches(BatchSampler):
    """A batch sampler of one's own that reshuffles by epoch."""

    epoch = -1

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


class _Around(torch.utils.data.Sampler[int]):
    """A sampler of one's own around another, without a ``set_epoch``."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler

    def __iter__(self) -> Iterator[int]:
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


class _Shard:
    """A batch sampler that hands on another's batches (held as ``.batch_sampler``)."""

    def __init__(self, batch_sampler: Any) -> None:
        self.batch_sampler = batch_sampler

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batch_sampler)

    def __len__(self) -> int:
        return len(self.batch_sampler)


def test_set_epoch_reaches_every_part_that_orders_batches() -> None:
    ds = TensorDataset(torch.arange(12.0))
    # A plain DataLoader: its RandomSampler reorders by itself, so set_epoch is a no-op.
    plain = tp.DeviceLoader(DataLoader(ds, batch_size=4, shuffle=True), "cpu")
    plain.set_epoch(0)
    assert sum(len(b[0]) for b in plain) == 12
    # A DistributedSampler wrapped in a batch sampler: found through batch_sampler.sampler.
    sampler: DistributedSampler[Any] = DistributedSampler(ds, num_replicas=3, rank=1, seed=0)
    dl = DataLoader(ds, batch_sampler=BatchSampler(sampler, batch_size=2, drop_last=False))
    tp.DeviceLoader(dl, "cpu").set_epoch(7)
    assert sampler.epoch == 7
    # A batch sampler with its own set_epoch, around a distributed sampler: both are told.
    inner: DistributedSampler[Any] = DistributedSampler(ds, num_replicas=2, rank=0)
    own = EpochBatches(inner, batch_size=3, drop_last=False)
    tp.DeviceLoader(DataLoader(ds, batch_sampler=own), "meta").set_epoch(4)
    assert (own.epoch, inner.epoch) == (4, 4)
    # Deeper: a batch sampler sharding another (accelerate's BatchSamplerShard holds it as
    # .batch_sampler), and a sampler of one's own wrapping a distributed one (.sampler).
    deep: DistributedSampler[Any] = DistributedSampler(ds, num_replicas=2, rank=1)
    shard = _Shard(BatchSampler(_Around(deep), batch_size=2, drop_last=False))
    deep_loader = tp.DeviceLoader(DataLoader(ds, batch_sampler=shard), "cpu")
    deep_loader.set_epoch(5)
    assert deep.epoch == 5
    assert sorted(int(x) for b in deep_loader for x in b[0]) == sorted(deep)
    with pytest.raises(TypeError, match="int"):
        plain.set_epoch("1")  # type: ignore[arg-type]


class Combined:
    """Lightning's ``CombinedLoader``: several loaders behind ``flattened``, no ``set_epoch``."""

    def __init__(self, loaders: dict[str, Any]) -> None:
        self.iterables = loaders

    @property
    def flattened(self) -> list[Any]:
        return list(self.iterables.values())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for parts in zip(*self.iterables.values(), strict=False):
            yield dict(zip(self.iterables, parts, strict=True))


def test_set_epoch_reaches_the_samplers_of_every_combined_loader() -> None:
    ds = TensorDataset(torch.arange(8.0))
    images: DistributedSampler[Any] = DistributedSampler(ds, num_replicas=2, rank=1, seed=3)
    texts: DistributedSampler[Any] = DistributedSampler(ds, num_replicas=2, rank=1, seed=4)
    combined = Combined(
        {"images": DataLoader(ds, sampler=images), "texts": DataLoader(ds, sampler=texts)}
    )
    loader = tp.DeviceLoader(combined, "meta")
    loader.set_epoch(6)
    assert (images.epoch, texts.epoch) == (6, 6)
    assert all(b["images"][0].is_meta for b in loader)


def test_set_epoch_reaches_a_dataset_that_shuffles_by_epoch() -> None:
    class Stream(IterableDataset[torch.Tensor]):
        epoch = 0

        def set_epoch(self, epoch: int) -> None:
            self.epoch = epoch

        def __iter__(self) -> Iterator[torch.Tensor]:
            g = torch.Generator().manual_seed(self.epoch)
            yield from torch.randperm(4, generator=g)

    stream = Stream()
    loader = tp.DeviceLoader(DataLoader(stream, batch_size=2), "cpu")
    loader.set_epoch(2)
    assert stream.epoch == 2
    order = torch.cat(list(loader))
    assert torch.equal(order, torch.randperm(4, generator=torch.Generator().manual_seed(2)))


@pytest.mark.devices("cpu", "meta")
def test_loader_error_reaches_the_caller_unchanged(device: torch.device) -> None:
    error = Boom("bad sample 2")
    loader = tp.DeviceLoader(_failing_source(2, error), device)
    got: list[int] = []
    with pytest.raises(Boom) as info:
        got.extend(b["meta"]["id"] for b in loader)
    assert info.value is error
    assert got == [0, 1]
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "_failing_source" in frames  # the original raise site is still there


@pytest.mark.devices("cpu", "meta")
def test_break_then_new_iter_starts_clean(device: torch.device) -> None:
    threads = threading.active_count()
    loader = tp.DeviceLoader(_batches(6), device, depth=3)
    for batch in loader:
        if batch["meta"]["id"] == 1:
            break
    assert [b["meta"]["id"] for b in loader] == list(range(6))
    assert threading.active_count() == threads


@pytest.mark.parametrize("depth", [0, -2, 1.5, True, "2", None])
def test_depth_must_be_a_positive_int(depth: object) -> None:
    with pytest.raises(tp.ConfigError, match=r"depth=.*pass depth=2"):
        tp.DeviceLoader([], "cpu", depth=depth)  # type: ignore[arg-type]


def test_other_arguments_are_validated() -> None:
    with pytest.raises(tp.ConfigError, match="pack"):
        tp.DeviceLoader([], "cpu", pack="yes")  # type: ignore[arg-type]
    with pytest.raises(tp.ConfigError, match="iterable"):
        tp.DeviceLoader(42, "cpu")  # type: ignore[arg-type]
    with pytest.raises(tp.DeviceError):
        tp.DeviceLoader([], "no-such-device")


def test_default_device_and_public_face() -> None:
    loader: tp.DeviceLoader[int] = tp.DeviceLoader([])
    assert loader.device == tp.pick_device()
    assert type(loader).__module__ == "torchport"
    assert repr(loader).startswith("DeviceLoader(list, device=")
    assert loader.side_stream is None
    assert loader.depth == 2


# --- the CUDA plumbing, with streams and events faked at the hardware floor -------------


def test_cuda_path_copies_on_one_side_stream_and_guards_each_hand_over(
    fake_accelerator: Callable[..., Any],
) -> None:
    """Runs the asynchronous (CUDA) code path with the meta device and the fake backend."""
    backend = fake_accelerator([GIB])
    loader = tp.DeviceLoader(_batches(5), "meta", depth=2, pack=True)
    for epoch in range(2):
        backend.recorded.clear()
        ids = []
        for batch in loader._iter_async():
            event = backend.consumer.waited[-1]
            assert event.recorded_on is loader.side_stream  # copies were queued on the side
            assert not backend.active  # no stream context leaks into the caller's step
            assert batch["x"].device.type == "meta"
            # The packed buffer is what was allocated on the side stream: recorded
            # for the consumer, so its memory is held while the consumer uses it.
            assert any(stream is backend.consumer for _, stream in backend.recorded)
            ids.append(batch["meta"]["id"])
        assert ids == list(range(5))
        assert len(backend.consumer.waited) == 5 * (epoch + 1)
    assert len(backend.streams) == 1  # one side stream for the loader's life
    assert loader.stats.packed_batches == 10


class _Moves:
    """An object with its own ``.to`` (held whole as the batch, or inside a dict)."""

    def __init__(self, x: torch.Tensor) -> None:
        self.x = x

    def to(self, device: Any) -> _Moves:
        return _Moves(self.x.to(device))


def _reused(how: str, n: int) -> Iterator[Any]:
    """A source that yields one object again and again, changing it (or, "fresh", new ones)."""
    obj = _Moves(torch.zeros(1, 2))
    for i in range(n):
        if how == "fresh":
            obj = _Moves(torch.zeros(i + 1, 2))
        elif how in ("assigned", "assigned_inside"):
            obj.x = torch.zeros(i + 1, 2)
        else:  # "in_place": same tensor, new values (the shape says which batch it is)
            obj.x.resize_(i + 1, 2)
        yield {"o": obj, "i": i} if how == "assigned_inside" else obj


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    how=st.sampled_from(["fresh", "assigned", "assigned_inside", "in_place"]),
    depth=st.integers(1, 3),
    n=st.integers(2, 5),
)
def test_cuda_path_never_hands_over_a_later_batchs_values(
    fake_accelerator: Callable[..., Any], how: str, depth: int, n: int
) -> None:
    # Objects with their own .to are moved at hand-over, batches read ahead: a source
    # that changes one object per batch must not get batch i+depth's values handed
    # over as batch i. The oracle: the source's own count (each batch's x has i+1
    # rows); each hand-over is that batch or a refusal, and a fresh source is never refused.
    fake_accelerator([GIB])
    loader = tp.DeviceLoader(_reused(how, n), "meta", depth=depth, pack=True)
    got: list[int] = []
    try:
        for batch in loader._iter_async():
            moved = batch["o"] if isinstance(batch, dict) else batch
            assert moved.x.is_meta
            got.append(moved.x.shape[0])
    except tp.UnsupportedBatchError as exc:
        assert how != "fresh", exc
        assert "changed after DeviceLoader read it" in str(exc)
    assert got == list(range(1, len(got) + 1))
    assert how != "fresh" or len(got) == n


def test_cuda_path_moves_sparse_nested_and_subclass_tensors_on_the_consumer_stream(
    fake_accelerator: Callable[..., Any],
) -> None:
    """record_stream cannot guard these, so they never go on the side stream."""
    backend = fake_accelerator([GIB])
    sparse = torch.eye(3).to_sparse()
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)
    param = torch.nn.Parameter(torch.ones(2))
    plain = torch.ones(4)
    loader = tp.DeviceLoader([(plain, sparse, nested, param)], "meta", pack=False)
    (out,) = list(loader._iter_async())
    assert [t.device.type for t in out] == ["meta"] * 4
    assert out[1].is_sparse and out[2].is_nested
    recorded = {i for i, _ in backend.recorded}
    assert recorded == {id(out[0])}  # only the plain tensor was copied on the side stream
    assert loader.stats.tensors == 4
    assert loader.stats.copies == 4


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_record_stream_covers_sparse_parts_and_refuses_what_it_cannot_guard(
    fake_accelerator: Callable[..., Any],
) -> None:
    backend = fake_accelerator([GIB])
    stream = backend.consumer
    coo = torch.eye(3).to_sparse()
    hardware.record_stream(coo, stream)
    assert len(backend.recorded) == 2  # indices and values
    csr = torch.eye(3).to_sparse_csr()
    hardware.record_stream(csr, stream)
    assert len(backend.recorded) == 5
    with pytest.raises(TypeError, match="move it on the stream that uses it"):
        hardware.record_stream(
            torch.nested.nested_tensor([torch.ones(2)], layout=torch.jagged), stream
        )


def test_early_break_over_a_one_shot_iterator_loses_nothing_on_any_path(
    fake_accelerator: Callable[..., Any],
) -> None:
    """The documented rule: the next iter() over a one-shot source continues where it stopped."""
    fake_accelerator([GIB])
    for path in ("async", "blocking", "cpu"):
        source = iter(_batches(6))
        device = "cpu" if path == "cpu" else "meta"
        loader = tp.DeviceLoader(source, device, depth=2)
        if path == "async":
            loader._live = loader._iter_async()  # what iter() does for a CUDA device
        seen = []
        for batch in loader:
            seen.append(batch["meta"]["id"])
            if len(seen) == 2:
                break
        seen += [batch["meta"]["id"] for batch in loader]
        assert seen == list(range(6)), path


def test_bare_cuda_means_the_same_gpu_to_the_loader_and_to_device(
    fake_accelerator: Callable[..., Any],
) -> None:
    fake_accelerator([GIB, 70 * GIB], current=0)  # pick_device would choose cuda:1
    loader = tp.DeviceLoader([], "cuda")
    assert loader.device == torch.device("cuda", 0)
    assert hardware.parse_device("cuda") == loader.device
    assert tp.pick_device() == torch.device("cuda", 1)  # the policy, only when asked


def test_loader_device_errors_name_device_not_prefer() -> None:
    with pytest.raises(tp.DeviceError, match=r"device='xpu:7'") as info:
        tp.DeviceLoader([], "xpu:7")
    assert "prefer" not in str(info.value)


def test_mapping_batches_with_their_own_to_are_walked_and_counted() -> None:
    """A BatchEncoding-like UserDict (with .to) takes the walker's path and counts its tensors."""
    import collections

    class Encoding(collections.UserDict):  # type: ignore[type-arg]
        def to(self, device: Any) -> Encoding:
            raise AssertionError("the loader should move the tensors itself")

    batch = Encoding(input_ids=torch.ones(2, 3), mask=torch.ones(2, 3, dtype=torch.bool))
    loader = tp.DeviceLoader([batch], "meta")
    (out,) = list(loader)
    assert type(out) is Encoding
    assert out["input_ids"].device.type == "meta"
    assert loader.stats.tensors == 2


def test_cpu_stats_count_during_and_after_a_pass() -> None:
    batches = [(torch.ones(2), torch.zeros(2)) for _ in range(4)]
    loader = tp.DeviceLoader(batches, "cpu")
    it = iter(loader)
    assert next(it) is batches[0]  # passed through untouched
    assert (loader.stats.batches, loader.stats.tensors) == (1, 2)
    rest = list(it)
    assert len(rest) == 3
    assert (loader.stats.batches, loader.stats.tensors) == (4, 8)
    for _ in loader:
        break
    assert loader.stats.batches == 5


_leaf = st.one_of(
    st.builds(lambda n: torch.ones(n), st.integers(0, 4)),
    st.builds(lambda n: torch.arange(n), st.integers(0, 4)),
    st.integers(),
    st.text(max_size=2),
)
_batch = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(st.lists(_batch, max_size=4), st.sampled_from([None, True, False]))
def test_any_batch_arrives_whole_on_meta(batches: list[Any], pack: bool | None) -> None:
    loader = tp.DeviceLoader(batches, "meta", pack=pack)
    out = list(loader)
    assert len(out) == len(batches)
    for src, got in zip(batches, out, strict=True):
        src_tensors = [t for t in _leaves(src) if isinstance(t, torch.Tensor)]
        got_tensors = [t for t in _leaves(got) if isinstance(t, torch.Tensor)]
        assert [(t.shape, t.dtype) for t in got_tensors] == [
            (t.shape, t.dtype) for t in src_tensors
        ]
        assert all(t.device.type == "meta" for t in got_tensors)
        assert [x for x in _leaves(got) if not isinstance(x, torch.Tensor)] == [
            x for x in _leaves(src) if not isinstance(x, torch.Tensor)
        ]


def _leaves(obj: Any) -> list[Any]:
    if isinstance(obj, dict):
        return [leaf for value in obj.values() for leaf in _leaves(value)]
    if isinstance(obj, list | tuple):
        return [leaf for value in obj for leaf in _leaves(value)]
    return [obj]


class InPlace:
    """A ``.to`` that moves its own tensors in place and returns itself (as PyG's ``Data``)."""

    def __init__(self, x: torch.Tensor, edges: torch.Tensor) -> None:
        self.store = {"x": x, "edges": edges}

    def to(self, device: torch.device) -> InPlace:
        self.store = {k: v.to(device) for k, v in self.store.items()}
        return self


@pytest.mark.devices("cpu", "meta")
def test_loader_leaves_its_batches_as_they_were_and_keeps_sharing(device: torch.device) -> None:
    x = torch.randn(3, 2)
    batches = [{"graph": InPlace(x, torch.arange(4)), "x": x, "n": i} for i in range(3)]
    before = [(b["graph"].store["x"], b["graph"].store["edges"]) for b in batches]
    for i, out in enumerate(tp.DeviceLoader(batches, device)):
        assert out["graph"].store["x"] is out["x"]  # one tensor, in and out of the object
        assert out["x"].device.type == device.type and out["n"] == i
    for batch, (bx, be) in zip(batches, before, strict=True):
        assert batch["graph"].store["x"] is bx and batch["graph"].store["edges"] is be
        assert bx.device.type == "cpu"


class _EpochStream(torch.utils.data.IterableDataset[torch.Tensor]):
    """An IterableDataset that orders its items by the epoch it was told."""

    def __init__(self) -> None:
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[torch.Tensor]:
        yield torch.tensor([self.epoch])


def test_set_epoch_warns_once_when_persistent_workers_keep_their_own_dataset() -> None:
    dataset = _EpochStream()
    loader = torch.utils.data.DataLoader(dataset, num_workers=1, persistent_workers=True)
    wrapped = tp.DeviceLoader(loader, device="cpu")
    with pytest.warns(UserWarning, match="persistent_workers=False") as caught:
        wrapped.set_epoch(1)
    assert len(caught) == 1 and "_EpochStream" in str(caught[0].message)
    assert dataset.epoch == 1  # this process's copy is still told
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wrapped.set_epoch(2)  # once per loader
        # Without persistent workers (or without workers) every iteration sees the epoch.
        plain = torch.utils.data.DataLoader(_EpochStream(), num_workers=0)
        tp.DeviceLoader(plain, device="cpu").set_epoch(3)


class _EpochTable(torch.utils.data.Dataset[torch.Tensor]):
    """A map-style dataset whose items are the epoch it was told."""

    def __init__(self) -> None:
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([self.epoch])


@pytest.mark.parametrize("dataset_type", [_EpochStream, _EpochTable])
def test_set_epoch_warns_exactly_when_the_workers_miss_the_epoch(dataset_type: type) -> None:
    # The oracle is the workers themselves: each epoch's items say which epoch the
    # worker's copy of the dataset was told. The loader warns when, and only when,
    # an epoch told after the workers started does not reach them.
    for persistent in (True, False):
        loader = torch.utils.data.DataLoader(
            dataset_type(), batch_size=None, num_workers=1, persistent_workers=persistent
        )
        wrapped = tp.DeviceLoader(loader, device="cpu")
        seen = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # Python 3.12+ warns that forking a multi-threaded process may deadlock, each
            # time the workers start (issue 36: the H200 run's 3.12): Python's, not ours.
            warnings.filterwarnings(
                "ignore", "This process .* is multi-threaded", DeprecationWarning
            )
            for epoch in range(2):
                wrapped.set_epoch(epoch)
                seen.append([int(item) for item in wrapped])
        missed = seen != [[0], [1]]
        assert missed == persistent
        assert len(caught) == int(missed), [str(w.message) for w in caught]
        if missed:
            assert dataset_type.__name__ in str(caught[0].message)


@pytest.mark.parametrize("stuck_at", [0, 1, 2])
def test_set_epoch_warns_when_a_combined_loaders_part_keeps_persistent_workers(
    stuck_at: int,
) -> None:
    # set_epoch reaches each of a CombinedLoader's parts (``flattened``), so the warning
    # looks there too: the part with persistent workers over a dataset with set_epoch
    # (wherever it sits) misses every epoch after the first. Building the DataLoaders
    # starts no worker; none is iterated here.
    def part(persistent: bool) -> DataLoader[Any]:
        return DataLoader(
            _EpochStream(), batch_size=None, num_workers=1, persistent_workers=persistent
        )

    parts = {f"p{i}": part(i == stuck_at) for i in range(3)}
    wrapped = tp.DeviceLoader(Combined(parts), device="cpu")
    with pytest.warns(UserWarning, match="persistent_workers=False") as caught:
        wrapped.set_epoch(1)
    assert len(caught) == 1
    assert [p.dataset.epoch for p in parts.values()] == [1, 1, 1]  # each told here
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wrapped.set_epoch(2)  # once per loader
        none_stuck = {f"p{i}": part(False) for i in range(2)}
        tp.DeviceLoader(Combined(none_stuck), device="cpu").set_epoch(3)


class _Holding(torch.utils.data.Dataset[Any]):
    """A wrapper of one's own, without ``set_epoch``: it holds its dataset as ``.dataset``."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int) -> Any:
        return self.dataset[i]


def _wrapped(dataset: Any, how: str) -> Any:
    """``dataset`` inside wrappers that have no ``set_epoch`` of their own."""
    if how == "stack":  # torch's StackDataset of a tuple: items are tuples
        return torch.utils.data.StackDataset(dataset, dataset)
    if how == "stack_dict":
        return torch.utils.data.StackDataset(a=torch.utils.data.Subset(dataset, [0]), b=dataset)
    if how == "own":
        return _Holding(torch.utils.data.Subset(_Holding(dataset), [0]))
    if how == "subset":
        return torch.utils.data.Subset(dataset, [0])
    if how == "concat":
        return torch.utils.data.ConcatDataset(
            [[torch.tensor([-1])], dataset]  # a list dataset first, no set_epoch
        )
    return torch.utils.data.Subset(torch.utils.data.ConcatDataset([dataset]), [0])  # nested


@pytest.mark.parametrize("how", ["subset", "concat", "nested", "stack", "stack_dict", "own"])
def test_set_epoch_reaches_a_dataset_inside_a_subset_or_concat(how: str) -> None:
    # The oracle is the items themselves: each says the epoch its dataset was told.
    table = _EpochTable()
    loader = tp.DeviceLoader(DataLoader(_wrapped(table, how), batch_size=None), "cpu")
    loader.set_epoch(3)
    assert table.epoch == 3
    last = [x for x in loader][-1]
    values = last.values() if isinstance(last, dict) else last if isinstance(last, list) else [last]
    assert {int(v) for v in values} == {3}
    # Behind persistent workers that copy of it misses the epoch: warned once.
    stuck = DataLoader(
        _wrapped(_EpochTable(), how), batch_size=None, num_workers=1, persistent_workers=True
    )
    with pytest.warns(UserWarning, match="_EpochTable"):
        tp.DeviceLoader(stuck, "cpu").set_epoch(1)

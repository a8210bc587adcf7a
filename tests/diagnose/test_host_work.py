"""Host work in a training loop: data loading is set apart, worker processes are left out.

Each case builds a DataLoader whose parts (dataset, transform, collate_fn, sampler) read
tensors on the host a known number of times; the audit must list those reads in the
"data loading (host)" part only, and the training loop's own events in the main part.
"""

from __future__ import annotations

import sys
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader, Dataset, IterableDataset, Sampler, default_collate

import torchport as tp
from torchport.diagnose._host_work import loading

META = torch.device("meta")


def _previous_line() -> int:
    return sys._getframe(1).f_lineno - 1


class Reads(Dataset[tuple[torch.Tensor, int]]):
    """``n`` examples; each ``__getitem__`` reads ``k`` scalars and builds one tensor with
    ``device=``; a host copy on an accelerator run as written, but data loading's."""

    def __init__(self, n: int, k: int) -> None:
        self.data = torch.arange(float(n * 4)).reshape(n, 4)
        self.n, self.k = n, k

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        row = self.data[i]
        total = 0
        for j in range(self.k):
            total += int(row[j % 4])
        scale = torch.as_tensor(2.0, device=row.device)
        return row * scale, total


def _collate(batch: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    xs = torch.stack([x for x, _ in batch])
    ys = torch.tensor([y for _, y in batch])
    # a boolean-mask assignment of a tensor, once per batch (a number would be masked_fill_)
    xs[xs > 1e9] = xs.min()
    return xs, ys


class Reversed(Sampler[int]):
    """A user's sampler: reads its order back to Python once per epoch."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Iterator[int]:
        return iter(torch.arange(self.n - 1, -1, -1).tolist())

    def __len__(self) -> int:
        return self.n


@given(
    n=st.integers(1, 12),
    k=st.integers(0, 3),
    batch=st.integers(1, 5),
    epochs=st.integers(1, 2),
)
def test_everything_a_loader_runs_is_host_work_apart_from_the_loop(
    n: int, k: int, batch: int, epochs: int
) -> None:
    loader = DataLoader(Reads(n, k), batch_size=batch, sampler=Reversed(n), collate_fn=_collate)
    device = torch.device("cpu")
    with tp.audit() as report:
        for _ in range(epochs):
            for x, _y in loader:
                x.to(device)
                step_line = _previous_line()
    batches = -(-n // batch) * epochs  # ceil(n / batch) per epoch
    # the loop: one predicted copy per batch, at its own line, and nothing else
    assert [(e.line, e.kind, e.count, e.would_sync) for e in report.entries] == [
        (step_line, "transfer", batches, True)
    ]
    by_label: dict[str, int] = {}
    for e in report.data_loading:
        assert not e.would_sync and e.phase == "data loading"
        by_label[e.label] = by_label.get(e.label, 0) + e.count
    expected = {
        "scalar read (int(tensor))": n * k * epochs,
        "copy (torch.as_tensor(..., device=))": n * epochs,
        "boolean-mask assignment (x[mask] = v)": batches,
        "read to Python (.tolist())": epochs,
    }
    assert by_label == {label: count for label, count in expected.items() if count}
    assert report.total_count == batches  # the loading part counts in no total


class _ToMeta(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 3

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.ones(2).to(META)  # device work wherever it runs


def test_a_real_device_copy_in_a_dataset_stays_device_work() -> None:
    with tp.audit() as report:
        for _ in DataLoader(_ToMeta(), batch_size=3):
            pass
    (entry,) = report.entries
    assert (entry.device, entry.count, entry.would_sync) == ("cpu→meta", 3, False)
    assert entry.phase == "data loading" and report.total_bytes == 24
    assert report.data_loading == []
    assert "made during data loading" in " ".join(str(report).split())


# made before any audit: taken for the device's (one made inside would be the host's)
_ONE = torch.ones(())


class _Probe(Dataset[torch.Tensor]):
    """Reports, from whichever process fetches, whether an audit still watches there."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> torch.Tensor:
        modes = torch._C._len_torch_dispatch_stack()
        watched = torch._C._len_torch_function_stack()
        _ONE.item()
        return torch.tensor([modes, watched, int(loading(sys._getframe()))])


# Python 3.12+ warns that forking a multi-threaded process may deadlock; DataLoader does it
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_worker_stops_recording_and_is_not_counted() -> None:
    loader = DataLoader(_Probe(), batch_size=2, num_workers=1, multiprocessing_context="fork")
    with tp.audit() as report:
        (batch,) = list(loader)
        in_main = _Probe()[0]
    # in the worker: no dispatch mode, no function mode; in the main process, both
    assert batch.tolist() == [[0, 0, 1], [0, 0, 1]]
    assert in_main.tolist()[:2] == [1, 1]
    assert report.data_loading == []
    assert [e.function for e in report.entries] == ["__getitem__"]  # the main-process call


class _Stream(IterableDataset[torch.Tensor]):
    def __iter__(self) -> Iterator[torch.Tensor]:
        for i in range(4):
            yield torch.full((2,), float(i))

    def __len__(self) -> int:
        return 2  # wrong on purpose: the loader warns when it yields more


def test_the_loaders_own_warnings_point_where_they_would_without_the_audit() -> None:
    def warned() -> list[tuple[str, int]]:
        loader = DataLoader(_Stream(), batch_size=None)
        len(loader)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in loader:
                pass
        return [(w.filename, w.lineno) for w in caught]

    bare = warned()
    with tp.audit():
        audited = warned()
    assert bare and audited == bare
    # torch 2.6's DataLoader warns from its own frame; later ones name the user's loop.
    assert {name for name, _ in audited} == {name for name, _ in bare}


def test_random_split_outside_a_loader_is_torchs_host_bookkeeping() -> None:
    with tp.audit() as report:
        torch.utils.data.random_split(range(10), [7, 3])
    assert report.entries == [] and report.data_loading == []


def test_data_loading_is_recognised_inside_each_fetch_and_not_in_the_loop() -> None:
    seen: list[int] = []

    class Watch(Dataset[int]):
        def __len__(self) -> int:
            return 2

        def __getitem__(self, i: int) -> int:
            seen.append(int(loading(sys._getframe())))
            return i

    with tp.audit():
        for _ in DataLoader(Watch(), batch_size=1):
            seen.append(-int(loading(sys._getframe())))
    assert seen == [1, 0, 1, 0]  # inside a fetch: 1; in the loop body: 0
    assert not loading(sys._getframe())


def test_a_progress_bar_from_an_installed_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tqdm-like bar in a site-packages folder: it iterates the loader (data loading)
    # and formats what it is handed (a tensor: a read, charged to the user's line).
    package = tmp_path / "site-packages" / "fakebar"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "class bar:\n"
        "    def __init__(self, iterable):\n"
        "        self.iterable, self.postfix = iterable, ''\n"
        "    def __iter__(self):\n"
        "        yield from self.iterable\n"
        "    def set_postfix(self, **values):\n"
        "        self.postfix = ', '.join(f'{k}={v:.3f}' for k, v in values.items())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    import fakebar  # type: ignore[import-not-found]

    loader = DataLoader(Reads(4, 1), batch_size=2)
    with tp.audit() as report:
        progress = fakebar.bar(loader)
        for x, _ in progress:
            progress.set_postfix(loss=x.sum())
            postfix_line = _previous_line()
    (entry,) = report.entries
    assert (entry.file, entry.line, entry.count) == (__file__, postfix_line, 2)
    assert entry.label.startswith("formatting a tensor") and entry.would_sync
    assert entry.via.startswith(str(package / "__init__.py") + ":")
    assert sum(e.count for e in report.data_loading) == 4 + 4  # int() and as_tensor per example


def test_the_loaders_calls_are_never_replaced() -> None:
    from torch.utils.data import dataloader

    owners = (
        dataloader.DataLoader,
        dataloader._BaseDataLoaderIter,
        dataloader._SingleProcessDataLoaderIter,
        dataloader._MultiProcessingDataLoaderIter,
    )
    before = {(cls, name): vars(cls).get(name) for cls in owners for name in vars(cls)}
    with tp.audit():
        during = {(cls, name): vars(cls).get(name) for cls in owners for name in vars(cls)}
    after = {(cls, name): vars(cls).get(name) for cls in owners for name in vars(cls)}
    assert during == before and after == before


# Device reads each optimizer's step() makes per parameter on an accelerator, counted
# from torch 2.13's sources (non-capturable, not fused): Adam and NAdam read only their
# step counters (and NAdam's mu_product), which torch keeps on the host; Adafactor reads
# the norm of each parameter and of its update (.item() twice); ASGD keeps step, eta and
# mu on the parameter's device and reads all three.
DEVICE_READS_PER_PARAMETER = {
    "Adam": 0,
    "Adam(foreach)": 0,
    "NAdam": 0,
    "Adafactor": 2,
    "ASGD": 3,
}
_OPTIMIZERS = {
    "Adam": lambda p: torch.optim.Adam(p, foreach=False),
    "Adam(foreach)": lambda p: torch.optim.Adam(p, foreach=True),
    "NAdam": lambda p: torch.optim.NAdam(p),
    "Adafactor": lambda p: torch.optim.Adafactor(p),
    "ASGD": lambda p: torch.optim.ASGD(p, foreach=False),
}


@given(
    name=st.sampled_from(sorted(DEVICE_READS_PER_PARAMETER)),
    layers=st.integers(1, 3),
    steps=st.integers(1, 3),
)
def test_an_optimizer_step_leaves_out_its_host_counters_and_counts_its_device_reads(
    name: str, layers: int, steps: int
) -> None:
    model = torch.nn.Sequential(*(torch.nn.Linear(3, 3) for _ in range(layers)))
    opt = _OPTIMIZERS[name](model.parameters())
    x = torch.randn(4, 3)
    with tp.audit() as report:
        for _ in range(steps):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
            step_line = _previous_line()
    params = 2 * layers  # a weight and a bias per layer
    # (ASGD also copy_()s eta and mu, made on the host, into its state on the parameter's
    # device; that state's place is not known to a CPU run here, and is not predicted)
    assert report.total_count == DEVICE_READS_PER_PARAMETER[name] * params * steps
    assert {e.line for e in report.entries} <= {step_line}


def test_lbfgs_reads_the_loss_and_its_conditions_on_the_device() -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    opt = torch.optim.LBFGS(model.parameters(), max_iter=1)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        return loss

    with tp.audit() as report:
        for _ in range(2):
            opt.step(closure)  # type: ignore[arg-type]
    counted: dict[str, int] = {}
    for e in report.entries:
        counted[e.label] = counted.get(e.label, 0) + e.count
    # Each step (torch 2.13's lbfgs.py, max_iter=1, no line search): float(closure()) once;
    # `if opt_cond:` on the gradient's max; `if gtd > -tolerance_change:`; the first step
    # also `min(1.0, 1.0 / flat_grad.abs().sum())` (a comparison read by min) and the
    # second `if ys > 1e-10:`; each step's parameter update p.add_(..., alpha=t) reads a
    # tensor alpha in C++ once per parameter (2), the first step's t and the second
    # step's history terms alike.
    assert counted == {
        "scalar read (float(tensor))": 2,
        "scalar read (bool(tensor) / if tensor:)": 6,
        "scalar read": 4,
    }


# A collate_fn may send the batch on itself (num_workers=0 loaders often do). Where it
# sends it decides whose work the copy is: to the program's device it is a copy the
# accelerator run makes; to the host, or to the device a batch tensor is on (the host,
# while a loader fetches), it copies nothing there.
# The program's `"cuda" if torch.cuda.is_available() else "cpu"` as a CPU run evaluates it
# (the run the audit predicts from), on every machine: on one with a GPU it would be "cuda"
# and the collate_fn would copy for real.
_PROGRAM_DEVICE = "cpu"
_CONFIG = types.SimpleNamespace(device=torch.device(_PROGRAM_DEVICE))


def _to_program_device(batch: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, ...]:
    xs, ys = default_collate(batch)
    return xs.to(_PROGRAM_DEVICE), ys.to(_PROGRAM_DEVICE)


def _to_config_device(batch: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, ...]:
    xs, ys = default_collate(batch)
    return xs.to(_CONFIG.device, non_blocking=True), ys.to(device=_CONFIG.device)


def _beside_the_batch(batch: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, ...]:
    xs, ys = default_collate(batch)
    return xs, torch.as_tensor(ys.tolist(), device=xs.device).to(xs)


def _to_the_host(batch: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, ...]:
    xs, ys = default_collate(batch)
    return xs.to("cpu"), ys.cpu()


# collate_fn -> (copies to the device per batch, host events per batch)
_COLLATES = {
    _to_program_device: (2, 0),
    _to_config_device: (2, 0),
    _beside_the_batch: (0, 3),  # .tolist(), as_tensor(device=xs.device), .to(xs)
    _to_the_host: (0, 2),
}


@settings(max_examples=20, deadline=None)
@given(
    collate=st.sampled_from(list(_COLLATES)),
    n=st.integers(1, 9),
    batch=st.integers(1, 4),
)
def test_a_collate_fn_sending_batches_to_the_programs_device_is_device_work(
    collate: Any, n: int, batch: int
) -> None:
    loader = DataLoader(Reads(n, 0), batch_size=batch, collate_fn=collate)
    with tp.audit() as report:
        for _ in loader:
            pass
    batches = -(-n // batch)
    to_device, host_events = _COLLATES[collate]
    moved = [e for e in report.entries if e.kind == "transfer"]
    assert sum(e.count for e in moved) == to_device * batches
    assert all(
        (e.device, e.would_sync, e.phase) == ("host→device", True, "data loading") for e in moved
    )
    assert report.total_count == to_device * batches
    # the dataset itself builds one tensor with device=row.device per example (Reads)
    assert sum(e.count for e in report.data_loading) == n + host_events * batches

"""Port test fixtures: a checkpoint saved "from a GPU", a snapshot of what redirect patches."""

from __future__ import annotations

import atexit
import multiprocessing.spawn
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn, serialization
from torch.nn.parallel import DistributedDataParallel

SCRIPTS = Path(__file__).parent / "scripts"

# Every namespace redirect() may touch; a test compares them before and after.
PATCHED_OWNERS: tuple[Any, ...] = (
    torch,
    torch.amp,
    torch.cuda,
    torch.cuda.amp,
    torch.cuda.memory,
    torch.cuda.nvtx,
    torch.cuda.profiler,
    torch.cuda.random,
    torch.cuda.streams,
    torch.cuda.graphs,
    torch.cuda.tunable,
    torch.backends.cuda,
    torch.serialization,
    torch.distributed,
    torch.nn.Module,
    torch.Tensor,
    DistributedDataParallel,
    threading.Thread,
    multiprocessing.spawn,
    subprocess.Popen,
    atexit,
)


def _tiny_model() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))


@pytest.fixture(scope="session")
def tiny_model() -> Callable[[], nn.Module]:
    """Builds a fresh model with the architecture of the cuda_checkpoint fixture's state dict."""
    return _tiny_model


@pytest.fixture
def cuda_checkpoint(tmp_path: Path) -> Iterator[Path]:
    """A state dict whose storages are tagged ``cuda:0``, as if saved on a GPU.

    A plain ``torch.load`` of it on a CPU-only machine fails, as it would for a
    real GPU checkpoint.
    """

    def tag_as_cuda(storage: Any) -> str | None:
        return "cuda:0" if storage.device.type == "cpu" else None

    def no_restore(storage: Any, location: str) -> None:
        return None

    torch.manual_seed(1234)
    state = _tiny_model().state_dict()
    entry = (-1000, tag_as_cuda, no_restore)
    serialization._package_registry.insert(0, entry)  # taggers are tried in order
    try:
        path = tmp_path / "gpu_checkpoint.pt"
        torch.save(state, path)
    finally:
        serialization._package_registry.remove(entry)
    yield path


Snapshot = tuple[list[dict[str, Any]], list[Any]]


def take_snapshot() -> Snapshot:
    """Every attribute of the patched namespaces, and this thread's torch function mode stack."""
    attributes = [dict(vars(owner)) for owner in PATCHED_OWNERS]
    modes = [
        torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())
    ]
    return attributes, modes


def assert_same(before: Snapshot, after: Snapshot) -> None:
    for owner, old, new in zip(PATCHED_OWNERS, before[0], after[0], strict=True):
        assert old.keys() == new.keys(), (owner, set(old) ^ set(new))
        changed = [name for name in old if old[name] is not new[name]]
        assert not changed, f"{owner!r}: {changed} not restored"
    assert before[1] == after[1]


@pytest.fixture
def snapshot() -> Callable[[], Snapshot]:
    """The function that snapshots what redirect() may patch, for comparisons inside a test."""
    return take_snapshot


@pytest.fixture
def untouched() -> Iterator[Callable[[], None]]:
    """Asserts at teardown (and whenever called) that torch is exactly as the test found it."""
    if torch.cuda.is_available():
        # A test may ask the real GPU (what a redirect leaves behind), and CUDA's lazy
        # start sets torch.cuda._initialized: settle it first, or the check would see it.
        torch.cuda.init()
        # Likewise torch's cache of the real count (`_cached_device_count`, set by the first
        # real `device_count()` after the start; torch 2.11 on an H200, issue 36). Settled
        # here, a redirect that left its own count in that cache would still be seen.
        torch.cuda.device_count()
    before = take_snapshot()

    def check() -> None:
        assert_same(before, take_snapshot())

    yield check
    check()

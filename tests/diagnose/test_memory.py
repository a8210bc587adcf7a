"""memory_report on the CPU (and a real GPU under the gpu marker), its rendering and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from rich.console import Console

import torchport
from torchport.diagnose import MemoryReport, _memory

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_cpu_report_is_sane() -> None:
    report = torchport.memory_report("cpu")
    assert report.device == "cpu"
    assert report.process_rss is not None and report.process_rss > 0
    assert report.process_peak_rss is not None and report.process_peak_rss >= report.process_rss
    assert report.total is not None and report.free is not None
    assert 0 < report.free <= report.total
    # PyTorch's CPU allocator keeps no byte counts; the report must not invent them.
    assert report.allocated is None and report.reserved is None


def test_rss_grows_with_a_big_tensor() -> None:
    before = torchport.memory_report(torch.device("cpu")).process_rss
    block = torch.ones(64 * 2**20, dtype=torch.uint8)  # touched, so resident
    after = torchport.memory_report("cpu").process_rss
    assert before is not None and after is not None
    assert after - before >= 48 * 2**20
    del block


def test_default_device_is_what_pick_device_picks() -> None:
    assert torchport.memory_report().device == str(torchport.pick_device())


def test_renders_as_table_text_and_json() -> None:
    report = torchport.memory_report("cpu")
    text = str(report)
    assert "memory on cpu" in text and "process RSS" in text and "GiB" in text
    console = Console(record=True, width=100, color_system=None)
    console.print(report)  # through __rich__
    assert "available RAM" in console.export_text()
    data = json.loads(report.to_json())
    assert data == report.to_dict()
    assert data["device"] == "cpu" and data["process_rss"] == report.process_rss
    assert type(report).__module__ == "torchport" and repr(report).startswith("MemoryReport(")


@pytest.mark.parametrize("bad", ["banana", "cuda:x", "meta", "cuda:99", 7])
def test_bad_device_is_a_device_error(bad: object) -> None:
    with pytest.raises(torchport.DeviceError, match="cpu"):
        torchport.memory_report(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [[0], 1.5, torch.zeros(1), True])
def test_non_device_is_a_config_error(bad: object) -> None:
    with pytest.raises(torchport.ConfigError, match="not a device"):
        torchport.memory_report(bad)  # type: ignore[arg-type]


def test_cgroup_limit_bounds_total_and_available(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit, used = 512 * 2**20, 500 * 2**20
    (tmp_path / "memory.max").write_text(f"{limit}\n")
    (tmp_path / "memory.current").write_text(f"{used}\n")
    monkeypatch.setattr(_memory, "_CGROUP_MAX", tmp_path / "memory.max")
    monkeypatch.setattr(_memory, "_CGROUP_CURRENT", tmp_path / "memory.current")
    report = torchport.memory_report("cpu")
    assert report.total == limit
    assert report.free == limit - used
    assert any("cgroup" in note for note in report.notes)


def test_without_proc_falls_back_to_getrusage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_memory, "_PROC_STATUS", tmp_path / "absent")
    monkeypatch.setattr(_memory, "_PROC_MEMINFO", tmp_path / "absent")
    report = torchport.memory_report("cpu")
    assert report.process_rss is None
    assert report.process_peak_rss is not None and report.process_peak_rss > 0
    assert report.total is not None and report.total > 0
    assert any("not reported" in note for note in report.notes)


@pytest.mark.gpu
@cuda
def test_cuda_numbers_follow_allocations() -> None:
    device = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.reset_peak_memory_stats(device)
    before = torchport.memory_report(device)
    block = torch.empty(256 * 2**20, dtype=torch.uint8, device=device)
    during = torchport.memory_report(device)
    assert isinstance(during, MemoryReport) and during.device == str(device)
    assert before.allocated is not None and during.allocated is not None
    assert during.allocated - before.allocated >= 256 * 2**20
    assert during.reserved is not None and during.reserved >= during.allocated
    assert during.peak_allocated is not None and during.peak_allocated >= during.allocated
    assert during.total is not None and during.free is not None and during.free < during.total
    assert during.total == torch.cuda.get_device_properties(device).total_memory
    del block


def test_torchport_device_meta_is_a_clear_device_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHPORT_DEVICE", "meta")
    with pytest.raises(torchport.DeviceError, match=r"TORCHPORT_DEVICE='meta'.*no memory") as info:
        torchport.memory_report()
    assert isinstance(info.value, torchport.TorchportError)

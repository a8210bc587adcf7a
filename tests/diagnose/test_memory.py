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


# A child process lowers each of its own limits in turn, leaving itself 256 MiB of room,
# asks for more than the room (but less than the limit) and for more than the limit, and
# lifts the limit again.
_UNDER_A_LIMIT = r"""
import json, resource
import torch
import torchport as tp
from torchport.diagnose._memory import process_limit

MiB = 1024**2
torch.set_num_threads(1)

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

for name, field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
    which = getattr(resource, name)
    before = resource.getrlimit(which)
    cap = status(field) + 256 * MiB
    resource.setrlimit(which, (cap, before[1]))
    out = {"limit": name, "cap": cap, "room": process_limit().room}
    report = tp.memory_report("cpu")
    out["free"], out["total"], out["notes"] = report.free, report.total, list(report.notes)
    past_room = out["room"] + (cap - out["room"]) // 2  # more than the room, less than the cap
    for label, size in (("past_room", past_room), ("past_limit", cap + 256 * MiB)):
        try:
            kept = torch.empty(size, dtype=torch.uint8)
            out[label] = None
            del kept
        except RuntimeError as err:
            e = tp.explain_oom(err)
            out[label] = [e.case.name, e.allowed, e.allowed_by, str(e)]
    resource.setrlimit(which, before)
    print(json.dumps(out))
"""


@pytest.mark.skipif(not _memory._PROC_STATUS.exists(), reason="needs /proc/self/status")
def test_a_real_process_limit_bounds_the_report_and_explains_the_error() -> None:
    import subprocess
    import sys

    free_ram, _ = _memory.host_memory(within_process_limit=False)
    if free_ram is None or free_ram < 2**30:
        pytest.skip("needs 1 GiB of free RAM, so that only the limit can refuse")
    done = subprocess.run(
        [sys.executable, "-c", _UNDER_A_LIMIT],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    commands = {"RLIMIT_AS": "ulimit -v", "RLIMIT_DATA": "ulimit -d"}
    results = [json.loads(line) for line in done.stdout.strip().splitlines()]
    assert [out["limit"] for out in results] == list(commands)
    for out in results:
        limit = out["limit"]
        named = f"{limit} ({commands[limit]})"
        cap, room = out["cap"], out["room"]
        assert out["total"] == cap and 0 < out["free"] <= room <= 256 * 2**20
        assert any(named in note for note in out["notes"])
        if out["past_room"] is None or out["past_limit"] is None:
            continue  # this kernel does not enforce the limit on these allocations
        # more than is left under the limit, while the machine has RAM: the limit is the cause
        case, allowed, allowed_by, text = out["past_room"]
        assert (case, allowed, allowed_by) == ("PROCESS_LIMIT", cap, named)
        assert f"{commands[limit]} unlimited" in text and "allowed to this process by" in text
        # more than the limit itself: no setting of the program makes it fit
        case, allowed, allowed_by, text = out["past_limit"]
        assert (case, allowed_by) == ("REQUEST_TOO_LARGE", named)
        assert "this process's limit" in text


def test_under_ulimit_v_the_report_names_the_limit_not_total_ram() -> None:
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import resource, torchport as tp
        from rich.console import Console
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = 8 * 2**30 if hard == resource.RLIM_INFINITY else min(hard, 8 * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        report = tp.memory_report("cpu")
        print(report.total_is, report.total == limit)
        Console(width=200).print(report.render())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    first, _, table = done.stdout.partition("\n")
    assert first == "RLIMIT_AS (ulimit -v) True"
    assert "total RAM" not in table and "ulimit -v" in table

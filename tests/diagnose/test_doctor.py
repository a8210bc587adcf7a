"""doctor() on this CPU machine and on simulated broken environments: findings, no tracebacks."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport
from torchport.diagnose import CopyBandwidth, DoctorFinding, DoctorReport, Severity, _env, _probes
from torchport.diagnose._bandwidth import measure_bandwidth, median_rate

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
cpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="simulates a machine without GPUs")
# A CUDA or ROCm wheel on a machine without a GPU (the version matrix's torch legs) is itself
# an error doctor reports; tests that pin doctor's verdict on a CPU-only build skip there.
GPU_BUILD = torch.version.cuda is not None or torch.version.hip is not None
cpu_build = pytest.mark.skipif(GPU_BUILD, reason="pins doctor's verdict on a CPU-only torch build")


def errors(report: DoctorReport) -> list[DoctorFinding]:
    return [f for f in report.findings if f.severity is Severity.ERROR]


def find(report: DoctorReport, text: str) -> DoctorFinding:
    matches = [f for f in report.findings if text in f.message]
    assert matches, f"no finding mentions {text!r}: {report.findings}"
    return matches[0]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _env.ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def cuda_build(clean_env: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Make this CPU torch look like a CUDA 12.4 build; tests add the driver and GPUs."""
    clean_env.setattr(torch.version, "cuda", "12.4")
    clean_env.setattr(torch.cuda, "get_arch_list", lambda: ["sm_80", "sm_86", "sm_90"])
    clean_env.setattr(torch._C, "_cuda_getDriverVersion", lambda: 12040, raising=False)
    clean_env.setattr(_env, "_NVIDIA_DRIVER", _env.Path("/nonexistent"))
    return clean_env


def fake_gpus(monkeypatch: pytest.MonkeyPatch, *props: tuple[str, int, int]) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(props))

    def properties(index: int) -> Any:
        name, major, minor = props[index]
        return SimpleNamespace(name=name, major=major, minor=minor, total_memory=80 * 2**30)

    def no_nvml(index: int) -> int:
        raise ModuleNotFoundError("pynvml")

    monkeypatch.setattr(torch.cuda, "get_device_properties", properties)
    monkeypatch.setattr(torch.cuda, "device_memory_used", no_nvml)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index: (60 * 2**30, 80 * 2**30))
    # A real CUDA build would ask its driver about the fake devices' contexts.
    monkeypatch.setattr(torch._C, "_cuda_hasPrimaryContext", lambda index: False, raising=False)


@cpu_only
def test_this_cpu_machine(clean_env: pytest.MonkeyPatch) -> None:
    report = torchport.doctor()
    assert isinstance(report, DoctorReport)
    no_gpu = [] if not GPU_BUILD else [f"torch is built for {report.torch and report.torch.kind}"]
    assert [f.message.split(" but ")[0] for f in errors(report)] == no_gpu
    assert report.torch is not None and report.torch.version == torch.__version__
    assert report.torch.kind in ("CPU-only", f"CUDA {torch.version.cuda}")
    assert report.gpus == ()
    assert report.accelerators is not None and report.accelerators.cuda_available is False
    assert report.host_memory is not None and report.host_memory.device == "cpu"
    assert report.choice is not None and report.choice.device == "cpu"
    assert "no accelerator" in report.choice.reason
    assert report.bandwidth.device is None and report.bandwidth.h2d_pinned is None
    assert set(report.environment) == set(_env.ENV_VARS)
    assert report.cuda_context_created is False


def test_report_is_json_serialisable_and_renders() -> None:
    report = torchport.doctor()
    data = json.loads(report.to_json())
    assert data["ok"] == report.ok
    assert data["torch"]["version"] == torch.__version__ and "kind" in data["torch"]
    assert all(f["severity"] in ("error", "warning", "info") for f in data["findings"])
    text = str(report)
    assert "torch" in text and "pick_device()" in text and "environment" in text


def test_doctor_prints_nothing_and_creates_no_cuda_state(capfd: pytest.CaptureFixture[str]) -> None:
    code = (
        "import torch, torchport\n"
        "r = torchport.doctor(free_memory=False)\n"
        "assert not r.cuda_context_created\n"
        "print(torch.cuda.is_initialized() if not torch.cuda.is_available() else 'gpu')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() in ("False", "gpu")
    torchport.doctor()
    assert capfd.readouterr() == ("", "")


def test_cuda_build_without_driver(cuda_build: pytest.MonkeyPatch) -> None:
    cuda_build.setattr(torch._C, "_cuda_getDriverVersion", lambda: 0, raising=False)
    cuda_build.setattr(torch.cuda, "is_available", lambda: False)
    report = torchport.doctor()
    assert not report.ok
    finding = find(report, "no NVIDIA driver")
    assert finding.severity is Severity.ERROR and "CPU wheel" in finding.fix
    assert report.driver is not None and report.driver.supports_runtime is False
    assert report.torch is not None and report.torch.kind == "CUDA 12.4"
    # One cause, one error: the generic "sees no GPU" is not repeated.
    assert len(errors(report)) == 1


def test_cuda_build_with_driver_but_no_gpu(cuda_build: pytest.MonkeyPatch) -> None:
    cuda_build.setattr(torch.cuda, "is_available", lambda: False)
    report = torchport.doctor()
    assert find(report, "sees no GPU").severity is Severity.ERROR


def test_driver_too_old(cuda_build: pytest.MonkeyPatch) -> None:
    cuda_build.setattr(torch._C, "_cuda_getDriverVersion", lambda: 11080, raising=False)
    fake_gpus(cuda_build, ("NVIDIA A100", 8, 0))
    report = torchport.doctor()
    assert report.driver is not None
    assert (report.driver.version, report.driver.supports_runtime) == ("11.8", False)
    assert "update the driver" in find(report, "driver supports CUDA 11.8").fix


def test_driver_older_minor_is_a_warning(cuda_build: pytest.MonkeyPatch) -> None:
    cuda_build.setattr(torch._C, "_cuda_getDriverVersion", lambda: 12020, raising=False)
    fake_gpus(cuda_build, ("NVIDIA A100", 8, 0))
    report = torchport.doctor()
    assert find(report, "minor-version compatibility").severity is Severity.WARNING
    assert report.driver is not None and report.driver.supports_runtime is True


def test_capability_not_in_arch_list(cuda_build: pytest.MonkeyPatch) -> None:
    fake_gpus(cuda_build, ("NVIDIA A100", 8, 0), ("NVIDIA RTX PRO 6000", 12, 0), ("L4", 8, 9))
    report = torchport.doctor()
    a100, blackwell, l4 = report.gpus
    assert (a100.capability, a100.supported_by_build) == ("8.0", True)
    assert (blackwell.capability, blackwell.supported_by_build) == ("12.0", False)
    assert l4.supported_by_build is True  # sm_86 SASS runs on 8.9
    finding = find(report, "sm_120")
    assert finding.severity is Severity.ERROR and "cuda:1" in finding.message
    assert not report.ok
    assert a100.free_memory == 60 * 2**30 and "cudaMemGetInfo" in a100.free_memory_source


@pytest.mark.parametrize(
    ("capability", "arch_list", "supported"),
    [
        ((9, 0), ["sm_90a"], True),
        ((10, 0), ["sm_90a"], False),
        ((10, 0), ["sm_80", "compute_90"], True),  # PTX JIT-compiles forward
        ((7, 5), ["sm_80", "compute_80"], False),
        ((8, 6), ["sm_80"], True),
        ((10, 3), ["sm_100f"], True),  # family-specific: later minor of the same major
        ((12, 0), ["sm_100f"], False),
    ],
)
def test_arch_rules(capability: tuple[int, int], arch_list: list[str], supported: bool) -> None:
    build = _probes.TorchBuild("x", "3", "linux", "12.8", None, None, tuple(arch_list))
    assert _probes._arch_supported("{}.{}".format(*capability), build) is supported


def test_xpu_devices_are_listed(clean_env: pytest.MonkeyPatch) -> None:
    props = SimpleNamespace(name="Intel(R) Arc(TM) A770", total_memory=16 * 2**30)
    clean_env.setattr(torch.xpu, "is_available", lambda: True)
    clean_env.setattr(torch.xpu, "device_count", lambda: 1)
    clean_env.setattr(torch.xpu, "get_device_properties", lambda index: props)
    clean_env.setattr(torch.xpu, "mem_get_info", lambda index: (12 * 2**30, 16 * 2**30))
    clean_env.setattr(torch.cuda, "is_available", lambda: False)  # the XPU machine's only GPU
    (gpu,) = torchport.doctor().gpus
    assert (gpu.device, gpu.name, gpu.free_memory) == ("xpu:0", props.name, 12 * 2**30)
    assert gpu.supported_by_build is None


def test_mps_built_but_unavailable_on_a_mac(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setattr(_env, "_IS_MAC", True)
    clean_env.setattr(torch.backends.mps, "is_built", lambda: True)
    clean_env.setattr(torch.backends.mps, "is_available", lambda: False)
    finding = find(torchport.doctor(), "includes MPS")
    assert finding.severity is Severity.WARNING and "macOS 12.3" in finding.fix


@pytest.mark.parametrize(
    ("local_rank", "expected"),
    [(None, "cuda:1"), ("0", "cuda:0")],
)
def test_choice_and_reason_are_pick_devices_own(
    clean_env: pytest.MonkeyPatch,
    fake_accelerator: Callable[..., Any],
    local_rank: str | None,
    expected: str,
) -> None:
    from torchport.place import pick_device_with_reason

    fake_accelerator([1 * 2**30, 8 * 2**30])  # cuda:1 has the most free memory
    if local_rank is not None:
        clean_env.setenv("LOCAL_RANK", local_rank)
    choice = _env.probe_choice()
    device, reason = pick_device_with_reason()
    assert (choice.device, choice.reason) == (str(device), reason)
    assert choice.device == expected and reason


@pytest.mark.parametrize("visible", ["", "-1", "none"])
def test_cuda_visible_devices_hides_everything(
    cuda_build: pytest.MonkeyPatch, visible: str
) -> None:
    cuda_build.setenv("CUDA_VISIBLE_DEVICES", visible)
    cuda_build.setattr(torch.cuda, "is_available", lambda: False)
    report = torchport.doctor()
    finding = find(report, "hides every GPU")
    assert finding.severity is Severity.ERROR and "unset CUDA_VISIBLE_DEVICES" in finding.fix
    assert report.environment["CUDA_VISIBLE_DEVICES"] == visible
    assert len(errors(report)) == 1


@cpu_only
@cpu_build
def test_cuda_visible_devices_on_a_cpu_build_only_warns(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("CUDA_VISIBLE_DEVICES", "")
    report = torchport.doctor()
    assert find(report, "hides every GPU").severity is Severity.WARNING
    assert report.ok


@pytest.mark.parametrize("value", ["bogus", "cuda:0:1", "xla:7"])
def test_bad_torchport_device(clean_env: pytest.MonkeyPatch, value: str) -> None:
    clean_env.setenv("TORCHPORT_DEVICE", value)
    report = torchport.doctor()
    assert find(report, "TORCHPORT_DEVICE").severity is Severity.ERROR
    assert report.choice is not None and report.choice.device is None
    assert "DeviceError" in report.choice.reason
    assert not report.ok


DEVICE_SETTINGS = st.builds(
    lambda pad1, name, index, pad2, upper: pad1 + (name.upper() if upper else name) + index + pad2,
    st.sampled_from(["", " ", "\t"]),
    st.sampled_from(["cpu", "meta", "cuda", "mps", "xpu", "auto", "bogus", "", "cpu:"]),
    st.sampled_from(["", ":0", ":1", ":x", ":0:1"]),
    st.sampled_from(["", " ", "\n"]),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(value=DEVICE_SETTINGS)
def test_doctor_and_pick_device_read_torchport_device_alike(value: str) -> None:
    # One reading of device strings: doctor reports an error exactly when pick_device() raises.
    with pytest.MonkeyPatch.context() as env:
        for name in _env.ENV_VARS:
            env.delenv(name, raising=False)
        env.setenv("TORCHPORT_DEVICE", value)
        try:
            torchport.pick_device()
        except torchport.DeviceError:
            accepted = False
        else:
            accepted = True
        flagged = [f for f in torchport.doctor().findings if "TORCHPORT_DEVICE" in f.message]
    assert accepted == (not flagged), (value, flagged)


@pytest.mark.parametrize("value", ["cpu", "auto", "", "cpu ", " AUTO", "cpu:0"])
def test_good_torchport_device(clean_env: pytest.MonkeyPatch, value: str) -> None:
    clean_env.setenv("TORCHPORT_DEVICE", value)
    report = torchport.doctor()
    assert not [f for f in report.findings if "TORCHPORT_DEVICE" in f.message]
    assert report.choice is not None and report.choice.device is not None


def test_bad_local_rank(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LOCAL_RANK", "first")
    assert find(torchport.doctor(), "LOCAL_RANK").severity is Severity.ERROR


def test_a_raising_probe_becomes_a_finding(clean_env: pytest.MonkeyPatch) -> None:
    def broken() -> bool:
        raise RuntimeError("CUDA driver initialization failed, you might not have a CUDA gpu.")

    clean_env.setattr(torch.cuda, "is_available", broken)
    report = torchport.doctor()
    finding = find(report, "CUDA driver initialization failed")
    assert finding.severity is Severity.ERROR and "reading" in finding.message
    assert not report.ok
    json.loads(report.to_json())
    # The text folds to the terminal's width (80 under pytest-xdist's workers): a message
    # may break between any two words (with a CUDA wheel each finding's did)
    assert "CUDA driver initialization failed" in " ".join(str(report).split())


def test_findings_are_ordered_worst_first(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("CUDA_VISIBLE_DEVICES", "")
    clean_env.setenv("TORCHPORT_DEVICE", "bogus")
    severities = [f.severity for f in torchport.doctor().findings]
    order = [Severity.ERROR, Severity.WARNING, Severity.INFO]
    assert severities == sorted(severities, key=order.index)


def test_bandwidth_on_cpu_is_not_applicable(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("TORCHPORT_DEVICE", "cpu")
    report = torchport.doctor(bandwidth=True)
    assert report.bandwidth.device is None
    assert report.bandwidth.reason is not None and "not applicable" in report.bandwidth.reason
    assert (report.bandwidth.h2d_pinned, report.bandwidth.d2h_pageable) == (None, None)
    assert "not applicable" in str(report)


def test_median_rate_drops_warmup() -> None:
    # Warm-up copies are slow outliers; the median of the rest decides.
    times = [9.0, 5.0, 0.004, 0.002, 0.003, 1.0, 0.002]
    assert median_rate(times, 6 * 10**6, warmup=2) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="no timed copies"):
        median_rate([1.0], 10, warmup=1)


def test_gpu_and_bandwidth_rendering(cuda_build: pytest.MonkeyPatch) -> None:
    fake_gpus(cuda_build, ("NVIDIA A100", 8, 0), ("NVIDIA RTX PRO 6000", 12, 0))
    report = torchport.doctor()
    measured = CopyBandwidth("cuda:0", 64 * 2**20, 7, 24.61, 11.02, 25.3, 6.47)
    text = str(dataclasses.replace(report, bandwidth=measured))
    for expected in ("cuda:1", "NVIDIA RTX PRO 6000", "12.0", "NO", "24.6", "6.5", "80 GiB"):
        assert expected in text
    assert "CUDA 12.4" in text and "12.4 for runtime 12.4: supports it" in text


def test_accelerator_probe_failing_keeps_the_rest(clean_env: pytest.MonkeyPatch) -> None:
    def broken(check_available: bool = False) -> torch.device | None:
        raise RuntimeError("driver shim crashed")

    clean_env.setattr(torch.accelerator, "current_accelerator", broken)
    clean_env.setenv("LOCAL_RANK", "0")
    report = torchport.doctor()
    assert "driver shim crashed" in find(report, "accelerators").message
    assert report.environment["LOCAL_RANK"] == "0"
    assert report.torch is not None and report.host_memory is not None
    json.loads(report.to_json())


@pytest.mark.gpu
@cuda
def test_no_context_without_free_memory_in_a_fresh_process() -> None:
    code = (
        "import torch, torchport\n"
        "r = torchport.doctor(free_memory=False)\n"
        "n = torch.cuda.device_count()\n"
        "print(any(torch._C._cuda_hasPrimaryContext(i) for i in range(n)), len(r.gpus), n)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    created, listed, count = out.stdout.split()
    assert created == "False" and listed == count and int(count) >= 1


@pytest.mark.gpu
@cuda
def test_real_gpu_facts() -> None:
    report = torchport.doctor()
    # the whole report in every message: this failed once among 16 workers on the H200 and
    # passed alone twice; the cut suite lost its traceback (issue 36)
    facts = report.to_json()
    assert report.gpus and report.driver is not None and report.driver.supports_runtime, facts
    gpu = report.gpus[0]
    assert gpu.total_memory == torch.cuda.get_device_properties(0).total_memory, facts
    assert gpu.free_memory is not None and 0 < gpu.free_memory <= gpu.total_memory, facts
    assert gpu.supported_by_build is True, facts
    assert report.choice is not None and report.choice.device is not None, facts
    assert report.choice.device.startswith("cuda"), facts


@pytest.mark.gpu
@cuda
def test_real_copy_bandwidth() -> None:
    result = measure_bandwidth(torch.device("cuda", 0), size_bytes=16 * 2**20, repeats=3)
    assert isinstance(result, CopyBandwidth) and result.device == "cuda:0"
    figures = (result.h2d_pinned, result.h2d_pageable, result.d2h_pinned, result.d2h_pageable)
    assert all(value is not None and value > 0 for value in figures)


# -- the host and its software, in every form -----------------------------------------


def test_the_host_and_its_software_are_reported(clean_env: pytest.MonkeyPatch) -> None:
    import os

    import numpy as np

    host = torchport.doctor().host
    assert host is not None
    assert (host.torchport, host.numpy) == (torchport.__version__, np.__version__)
    assert host.cpu_count == os.cpu_count()
    assert (host.torch_threads, host.torch_interop_threads) == (
        torch.get_num_threads(),
        torch.get_num_interop_threads(),
    )
    assert host.os.strip()
    data = json.loads(torchport.doctor().to_json())["host"]
    assert data["torchport"] == torchport.__version__ and data["cpu_count"] == os.cpu_count()


def test_numpy_missing_is_said(clean_env: pytest.MonkeyPatch) -> None:
    real = _probes.importlib.util.find_spec
    clean_env.setattr(
        _probes.importlib.util, "find_spec", lambda name: None if name == "numpy" else real(name)
    )
    report = torchport.doctor()
    assert report.host is not None and report.host.numpy is None
    assert "- NumPy: not installed" in report.to_markdown()


@given(
    threads=st.integers(1, 64),
    usable=st.none() | st.integers(1, 64),
    quota=st.none() | st.floats(0.1, 64),
)
def test_more_torch_threads_than_usable_cpus_is_a_warning(
    threads: int, usable: int | None, quota: float | None
) -> None:
    host = _probes.HostInfo("0", None, "Linux", 64, usable, quota, threads, 1)
    found = _probes.host_findings(host)
    limits = [n for n in (usable, quota) if n is not None]
    allowed = max(1, int(min(limits))) if limits else None
    assert bool(found) == (allowed is not None and threads > allowed)
    if found:
        (finding,) = found
        assert finding.severity is Severity.WARNING
        assert f"torch.set_num_threads({allowed})" in finding.fix


@functools.cache
def _report() -> DoctorReport:
    return torchport.doctor(free_memory=False)


def _squeezed(text: str) -> str:
    """Text without whitespace and table borders: what is left when a cell folds."""
    return "".join(ch for ch in text if not ch.isspace() and ch not in "│┃┌┐└┘├┤┬┴┼─━┏┓┗┛┡┩╇╈")


_LONG = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_.0123456789", min_size=30, max_size=140)


@given(platform=_LONG, reason=_LONG, os_name=_LONG, width=st.sampled_from([60, 80, 120]))
@settings(max_examples=20)
def test_no_value_is_cut_at_any_width(platform: str, reason: str, os_name: str, width: int) -> None:
    report = _report()
    assert report.torch is not None and report.host is not None and report.choice is not None
    report = dataclasses.replace(
        report,
        torch=dataclasses.replace(report.torch, platform=platform),
        host=dataclasses.replace(report.host, os=os_name),
        choice=dataclasses.replace(report.choice, reason=reason),
    )
    from torchport.diagnose._drawing import render_text

    text = render_text(report, width=width)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    squeezed = _squeezed(text)
    for value in (platform, reason, os_name, torchport.__version__, torch.__version__):
        assert _squeezed(value) in squeezed
    markdown = report.to_markdown().splitlines()
    assert f"- platform: {platform}" in markdown and f"- OS: {os_name}" in markdown


def test_markdown_is_one_fact_per_line_and_names_what_a_bug_report_needs() -> None:
    import numpy as np

    markdown = _report().to_markdown()
    lines = markdown.splitlines()
    assert all(line.startswith(("- ", "  - ")) for line in lines)
    for expected in (
        f"- torchport: {torchport.__version__}",
        f"- torch: {torch.__version__}",
        f"- NumPy: {np.__version__}",
        "- OS: ",
        "- CPUs: ",
        f"- torch threads: {torch.get_num_threads()} per op",
        "- pick_device(): ",
        "- findings:",
    ):
        assert any(line.startswith(expected) for line in lines), expected


# -- companions, the CPU, a host CUDA toolkit ------------------------------------------------


def test_companion_libraries_and_the_cpu_model_are_reported(clean_env: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    report = torchport.doctor()
    assert report.host is not None
    expected = []
    for name in ("numpy", "optree", "accelerate", "transformers", "lightning"):
        try:
            expected.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            continue
    assert [pair for pair in report.host.libraries if pair[0] in dict(expected)] == expected
    markdown = report.to_markdown()
    for name, version in expected:
        if name != "numpy":
            assert f"{name} {version}" in markdown
    assert "- CPU: " in markdown
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists() and "model name" in cpuinfo.read_text():
        model = next(
            line.split(":", 1)[1].strip()
            for line in cpuinfo.read_text().splitlines()
            if line.startswith("model name")
        )
        assert report.host.cpu_model == model and f"- CPU: {model}" in markdown
    data = json.loads(report.to_json())["host"]
    assert [tuple(pair) for pair in data["libraries"]] == list(report.host.libraries)


def _fake_nvcc(folder: Path, release: str) -> None:
    nvcc = folder / "nvcc"
    nvcc.write_text(
        "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
        f"echo 'Cuda compilation tools, release {release}, V{release}.131'\n"
    )
    nvcc.chmod(0o755)


@pytest.mark.skipif(sys.platform == "win32", reason="a shell-script nvcc")
@pytest.mark.parametrize("driver", [None, "12.4"])
def test_a_host_cuda_toolkit_beside_a_cpu_only_torch(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, driver: str | None
) -> None:
    from torchport.diagnose import _doctor
    from torchport.diagnose._probes import DriverInfo

    _fake_nvcc(tmp_path, "12.4")
    clean_env.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    clean_env.setattr(torch.version, "cuda", None)
    clean_env.setattr(torch.version, "hip", None)
    clean_env.setattr(
        _doctor,
        "probe_driver",
        lambda *a, **k: (DriverInfo(version=driver, runtime=None, supports_runtime=None), []),
    )
    report = torchport.doctor()
    assert report.host is not None and report.host.cuda_toolkit is not None
    assert (report.host.cuda_toolkit.version, report.host.cuda_toolkit.found_by) == ("12.4", "PATH")
    markdown = report.to_markdown()
    assert "- host CUDA toolkit: 12.4 (" in markdown and "torch is a CPU-only build" in markdown
    warned = [f for f in report.findings if "CUDA toolkit 12.4" in f.message]
    if driver is None:  # no GPU driver here: a fact, not a problem
        assert warned == []
    else:
        (finding,) = warned
        assert "whl/cu124" in finding.fix


def test_no_toolkit_is_said(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from torchport.diagnose import _software

    clean_env.setenv("PATH", str(tmp_path))
    clean_env.delenv("CUDA_HOME", raising=False)
    clean_env.delenv("CUDA_PATH", raising=False)
    clean_env.setattr(_software, "cuda_toolkit", lambda: None)
    clean_env.setattr(_probes, "cuda_toolkit", lambda: None)  # /usr/local/cuda may hold one
    assert "- host CUDA toolkit: none found" in torchport.doctor().to_markdown()

"""doctor(): the facts about this machine's torch, drivers and devices, with findings.

``doctor()`` collects and returns a :class:`DoctorReport` of facts; it prints nothing.
``to_json()`` serializes it; :mod:`._drawing` draws it (``str()`` and ``rich.print`` go
there), so the CLI stays a thin shell. Each probe runs guarded: a probe that raises
becomes an error finding, never a traceback.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from torchport import hardware
from torchport._device_types import CPU
from torchport.diagnose._bandwidth import NOT_REQUESTED, CopyBandwidth, measure_bandwidth
from torchport.diagnose._env import (
    DeviceChoice,
    check_environment,
    probe_choice,
    read_environment,
)
from torchport.diagnose._findings import DoctorFinding, Severity
from torchport.diagnose._memory import MemoryReport, memory_report
from torchport.diagnose._probes import (
    AcceleratorInfo,
    DriverInfo,
    GpuInfo,
    HostInfo,
    TorchBuild,
    cuda_contexts,
    host_findings,
    probe_accelerators,
    probe_build,
    probe_driver,
    probe_gpus,
    probe_host,
    toolkit_findings,
)
from torchport.errors import TorchportError

__all__ = ["DoctorReport", "doctor"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class DoctorReport:
    """Everything ``torchport doctor`` knows about this machine.

    Attributes:
        torch: How torch was built.
        driver: The GPU driver against the runtime.
        accelerators: What each backend reports.
        gpus: Visible CUDA/ROCm devices.
        environment: The device-steering environment variables (``None``: unset).
        host_memory: This process's and the system's RAM.
        choice: The device ``pick_device()`` picks and why.
        bandwidth: Measured copy bandwidth, or why it was not measured.
        cuda_context_created: Whether ``doctor()`` itself created a CUDA context.
        findings: Problems, worst first.
        host: torchport's and NumPy's versions, the OS, the CPUs and torch's threads.
    """

    torch: TorchBuild | None
    driver: DriverInfo | None
    accelerators: AcceleratorInfo | None
    gpus: tuple[GpuInfo, ...]
    environment: dict[str, str | None]
    host_memory: MemoryReport | None
    choice: DeviceChoice | None
    bandwidth: CopyBandwidth
    cuda_context_created: bool
    findings: tuple[DoctorFinding, ...] = field(default=())
    host: HostInfo | None = None

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        """The facts as plain JSON-ready values (sizes in bytes, bandwidth in GB/s)."""
        data: dict[str, Any] = _plain(asdict(self))
        data["ok"] = self.ok
        if self.torch is not None:
            data["torch"]["kind"] = self.torch.kind
        return data

    def to_json(self, *, indent: int | None = 2) -> str:
        """The facts as a JSON document."""
        return json.dumps(self.to_dict(), indent=indent)

    def to_markdown(self) -> str:
        """The facts as a Markdown list to paste into a bug report (plain text reads too)."""
        from torchport.diagnose._doctor_drawing import doctor_markdown

        return doctor_markdown(self)

    # Drawing lives in ._drawing; these delegate so that print(report) shows the tables.
    def render(self) -> Any:
        """The report as rich tables (drawn by the pillar's one renderer)."""
        from torchport.diagnose._doctor_drawing import render_doctor

        return render_doctor(self)

    def __rich__(self) -> Any:
        return self.render()

    def __str__(self) -> str:
        from torchport.diagnose._drawing import render_text

        return render_text(self)


def doctor(*, bandwidth: bool = False, free_memory: bool = True) -> DoctorReport:
    """Collect the facts about torch, drivers and devices on this machine.

    Prints nothing. Creates no CUDA context unless free GPU memory must be read without
    NVML (``free_memory=False`` prevents that) or ``bandwidth`` is true; the report's
    ``cuda_context_created`` says whether it did. With ``bandwidth`` it synchronizes the
    chosen device after each measured copy.

    Args:
        bandwidth: Measure pinned and pageable copy bandwidth to the chosen device.
        free_memory: Read each GPU's free memory.

    Returns:
        The report; ``report.ok`` is false when any finding is an error.
    """
    findings: list[DoctorFinding] = []
    contexts_before = _guard(findings, "CUDA contexts", cuda_contexts) or frozenset()
    build = _guard(findings, "the torch build", probe_build)
    if build is not None and hardware.below_floor(build.version):
        findings.append(
            DoctorFinding(
                Severity.ERROR,
                f"torch {build.version} is older than torchport supports (torch>={hardware.FLOOR})",
                f"upgrade torch: pip install 'torch>={hardware.FLOOR}' (for this machine's build)",
            )
        )
    driver = None
    if build is not None:
        driver = _guard_with_findings(findings, "the GPU driver", lambda: probe_driver(build))
    accel = _guard(findings, "the accelerators", probe_accelerators)
    gpus: tuple[GpuInfo, ...] = ()
    env = read_environment()
    if build is not None:
        gpus = (
            _guard_with_findings(
                findings, "the GPUs", lambda: probe_gpus(build, free_memory=free_memory)
            )
            or ()
        )
        if accel is not None:
            findings += (
                _guard(findings, "the environment", lambda: check_environment(env, build, accel))
                or []
            )
            findings += _unexplained_missing_gpu(build, accel, findings)
    host = _guard(findings, "host memory", lambda: memory_report(CPU))
    software = _guard(findings, "the host and its software", probe_host)
    if software is not None:
        findings += host_findings(software)
        findings += toolkit_findings(software, build, driver)
    choice = None
    if accel is not None:
        choice = _choose(findings)
    measured = CopyBandwidth(device=None, reason=NOT_REQUESTED)
    if bandwidth:
        target = hardware.device_spec(choice.device if choice and choice.device else CPU)
        measured = _guard(findings, "copy bandwidth", lambda: measure_bandwidth(target)) or (
            CopyBandwidth(device=None, reason="measurement failed; see findings")
        )
    contexts_after = _guard(findings, "CUDA contexts", cuda_contexts) or frozenset()
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    return DoctorReport(
        torch=build,
        driver=driver,
        accelerators=accel,
        gpus=gpus,
        environment=env,
        host_memory=host,
        choice=choice,
        bandwidth=measured,
        cuda_context_created=bool(contexts_after - contexts_before),
        findings=tuple(sorted(findings, key=lambda f: order[f.severity])),
        host=software,
    )


def _choose(findings: list[DoctorFinding]) -> DeviceChoice:
    try:
        return probe_choice()
    except TorchportError as exc:
        explained = any(
            f.severity is Severity.ERROR and name in f.message
            for f in findings
            for name in ("TORCHPORT_DEVICE", "LOCAL_RANK")
        )
        if not explained:
            findings.append(
                DoctorFinding(Severity.ERROR, f"pick_device() fails: {exc}", "see the message")
            )
        return DeviceChoice(None, f"pick_device() raised {type(exc).__name__}: {exc}")
    except Exception as exc:
        findings.append(_probe_failed("pick_device()", exc))
        return DeviceChoice(None, f"pick_device() raised {type(exc).__name__}: {exc}")


def _unexplained_missing_gpu(
    build: TorchBuild, accel: AcceleratorInfo, findings: list[DoctorFinding]
) -> list[DoctorFinding]:
    """A GPU build that sees no GPU, when no other finding already says why."""
    if not (build.cuda or build.hip) or accel.cuda_available:
        return []
    if any(f.severity is Severity.ERROR for f in findings):
        return []
    return [
        DoctorFinding(
            Severity.ERROR,
            f"torch is built for {build.kind} but sees no GPU",
            "check that nvidia-smi (or rocm-smi) lists a GPU, that a container was started "
            "with the GPU passed in (docker --gpus all), and that CUDA_VISIBLE_DEVICES is "
            "unset or names it; install the CPU wheel if this machine has no GPU",
        )
    ]


def _guard(findings: list[DoctorFinding], what: str, probe: Callable[[], _T]) -> _T | None:
    try:
        return probe()
    except Exception as exc:
        # Any failure of a probe is a fact about a broken environment, not a crash.
        findings.append(_probe_failed(what, exc))
        return None


def _guard_with_findings(
    findings: list[DoctorFinding], what: str, probe: Callable[[], tuple[_T, list[DoctorFinding]]]
) -> _T | None:
    result = _guard(findings, what, probe)
    if result is None:
        return None
    value, found = result
    findings += found
    return value


def _probe_failed(what: str, exc: BaseException) -> DoctorFinding:
    first_line = (str(exc).strip().splitlines() or [""])[0][:200]
    fix = (
        "this usually means a broken driver or torch install; reinstall torch for this "
        "machine's driver, and include `torchport doctor --json` in any bug report"
    )
    if isinstance(exc, TypeError | AttributeError):  # an API this torch lacks or changed
        fix = (
            f"this torch may lack an API torchport reads (torchport supports torch>="
            f"{hardware.FLOOR}); upgrade torch, and include `torchport doctor --json` "
            "in any bug report"
        )
    return DoctorFinding(
        Severity.ERROR, f"reading {what} failed: {type(exc).__name__}: {first_line}", fix
    )


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


DoctorReport.__module__ = "torchport"
doctor.__module__ = "torchport"

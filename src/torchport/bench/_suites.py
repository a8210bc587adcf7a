"""The suite registry and :func:`run_suites`, the entry point `torchport bench` calls."""

from __future__ import annotations

import datetime
import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from torchport._device_types import CPU, CUDA
from torchport.bench._model import BenchRun, SuiteResult
from torchport.bench._suite_batch import batch_transfer
from torchport.bench._suite_link import link_bandwidth
from torchport.bench._suite_loader import loader_overlap
from torchport.bench._suite_overhead_diagnose import diagnose_rows
from torchport.bench._suite_overhead_traversal import NOTE as TRAVERSAL_NOTE
from torchport.bench._suite_overhead_traversal import traversal_rows
from torchport.bench._suite_pack import pack_small_tensors
from torchport.errors import ConfigError

if TYPE_CHECKING:
    import torch

ProgressHook = Callable[[str, str], None]
"""Called with (suite name, what it is measuring now) as a run proceeds."""

CaseHook = Callable[[str], None]
DeviceSuite = Callable[..., SuiteResult]


# suite name -> whether it needs a CUDA/ROCm GPU; each suite's module docstring
# (``_suite_link.py``, ``_suite_pack.py``, ...) says what it compares
SUITES: dict[str, bool] = {
    "link": True,
    "pack": True,
    "batch": True,
    "loader": True,
    "overhead": False,
}
SUITE_NAMES: tuple[str, ...] = tuple(SUITES)

_GPU_SUITES: dict[str, DeviceSuite] = {
    "link": link_bandwidth,
    "pack": pack_small_tensors,
    "batch": batch_transfer,
    "loader": loader_overlap,
}


def select_suites(names: Sequence[str]) -> list[str]:
    """Validate suite names and return them deduplicated, in order; all suites when empty.

    Raises:
        ConfigError: A name is not a suite; the message lists the suites.
    """
    unknown = [name for name in names if name not in SUITES]
    if unknown:
        raise ConfigError(
            f"unknown bench suite {', '.join(map(repr, unknown))}; "
            f"expected one of: {', '.join(SUITE_NAMES)}"
        )
    return list(dict.fromkeys(names)) if names else list(SUITE_NAMES)


def accelerator() -> tuple[torch.device | None, str]:
    """The CUDA/ROCm device the accelerator suites use, or ``None`` and why there is none.

    Honours ``TORCHPORT_DEVICE`` through ``torchport.pick_device``.
    """
    from torchport.place import pick_device

    device = pick_device()
    if device.type == CUDA:
        return device, ""
    if device.type == CPU:
        return (
            None,
            "needs a CUDA or ROCm GPU; torch reports none on this machine",
        )
    return (
        None,
        f"needs a CUDA or ROCm GPU (streams, events, pinned memory); the device here is {device}",
    )


def overhead(*, quick: bool = False, on_case: CaseHook | None = None) -> SuiteResult:
    """The CPU ``overhead`` suite: traversal cost and strict()/audit() cost, in one result.

    Never synchronizes with an accelerator.
    """
    rows, checks = traversal_rows(quick=quick, on_case=on_case)
    more_rows, more_checks, notes = diagnose_rows(quick=quick, on_case=on_case)
    return SuiteResult(
        "overhead",
        (*rows, *more_rows),
        (*checks, *more_checks),
        (TRAVERSAL_NOTE, *notes),
    )


def run_suites(
    names: Sequence[str] = (), *, quick: bool = False, progress: ProgressHook | None = None
) -> BenchRun:
    """Run the named suites (all when empty) and return their results.

    Suites that need a CUDA/ROCm GPU are skipped, with the reason, where there is none.

    Args:
        names: Suite names from ``SUITE_NAMES``.
        quick: Fewer sizes and repeats: a smoke run, not a measurement to publish.
        progress: Told each suite and case as it starts.

    Raises:
        ConfigError: An unknown suite name.

    The GPU suites synchronize the host with the device around every sample.
    """
    selected = select_suites(names)
    started = _now()
    device, why_not = accelerator() if any(SUITES[n] for n in selected) else (None, "")
    results: list[SuiteResult] = []
    for name in selected:

        def on_case(step: str, name: str = name) -> None:
            if progress is not None:
                progress(name, step)

        on_case("starting")
        if not SUITES[name]:
            results.append(overhead(quick=quick, on_case=on_case))
        elif device is None:
            results.append(SuiteResult(name, skipped=why_not))
        else:
            results.append(_GPU_SUITES[name](device, quick=quick, on_case=on_case))
    return record(results, device=device, quick=quick, started=started)


def record(
    results: Sequence[SuiteResult],
    *,
    device: torch.device | None = None,
    quick: bool = False,
    started: str | None = None,
) -> BenchRun:
    """Wrap suite results with the facts a reader needs: device, machine, versions, time.

    ``benchmarks/`` scripts use this to print results of single suite functions.
    """
    import torch

    import torchport

    return BenchRun(
        suites=tuple(results),
        device=_describe(device),
        quick=quick,
        started=started or _now(),
        machine=f"{platform.platform()}; {_cpu_model()}",
        torch_version=torch.__version__,
        torchport_version=torchport.__version__,
    )


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _describe(device: torch.device | None) -> str:
    if device is None:
        return CPU
    from torchport import hardware

    return f"{device} ({hardware.device_name(device)})"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"

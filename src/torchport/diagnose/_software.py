"""What a bug report needs beside torch's own build: companion libraries, the CPU, a CUDA toolkit.

Read without importing the libraries (package metadata only) and without touching a
device. The host's CUDA toolkit (``nvcc`` on ``PATH``, under ``CUDA_HOME``/``CUDA_PATH``
or ``/usr/local/cuda``) matters beside a CPU-only torch: it is the usual sign that the
wrong wheel was installed on a GPU machine.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["COMPANIONS", "CudaToolkit", "companion_versions", "cpu_model", "cuda_toolkit"]

COMPANIONS = (
    "numpy",
    "optree",
    "accelerate",
    "transformers",
    "lightning",
    "pytorch-lightning",
    "torchvision",
    "torchaudio",
)
"""Distributions whose versions a PyTorch bug report asks for, in the order shown."""


def companion_versions() -> tuple[tuple[str, str], ...]:
    """``(distribution, version)`` of each of :data:`COMPANIONS` that is installed."""
    found = []
    for name in COMPANIONS:
        try:
            found.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            continue
    return tuple(found)


_CPUINFO = Path("/proc/cpuinfo")


def cpu_model() -> str | None:
    """The CPU's model name (``"AMD EPYC 7763 64-Core Processor"``), ``None`` if unknown."""
    if _CPUINFO.exists():
        try:
            for line in _CPUINFO.read_text(errors="replace").splitlines():
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                    return value.strip()
        except OSError:
            pass
    if sys.platform == "darwin":
        try:
            done = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or None


@dataclass(frozen=True)
class CudaToolkit:
    """A CUDA toolkit installed on the host, apart from the runtime inside torch's wheel.

    Attributes:
        version: ``nvcc``'s release (``"12.4"``), ``None`` when it would not say.
        nvcc: Where ``nvcc`` was found.
        found_by: How: ``"PATH"``, ``"CUDA_HOME"``, ``"CUDA_PATH"`` or ``"/usr/local/cuda"``.
    """

    version: str | None
    nvcc: str
    found_by: str


_RELEASE = re.compile(r"release (\d+\.\d+)")


def cuda_toolkit() -> CudaToolkit | None:
    """Find ``nvcc`` and ask it its release; ``None`` when no toolkit is installed."""
    exe = "nvcc.exe" if sys.platform == "win32" else "nvcc"
    candidates: list[tuple[str | None, str]] = [(shutil.which("nvcc"), "PATH")]
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(variable)
        if root:
            candidates.append((str(Path(root) / "bin" / exe), variable))
    candidates.append(("/usr/local/cuda/bin/nvcc", "/usr/local/cuda"))
    for path, found_by in candidates:
        if path and Path(path).is_file():
            return CudaToolkit(_nvcc_release(path), path, found_by)
    return None


def _nvcc_release(path: str) -> str | None:
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = _RELEASE.search(done.stdout)
    return match.group(1) if match else None

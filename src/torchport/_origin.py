"""Whose code a stack frame runs: the user's, torch's, torchport's, or another installed package's.

Every part that looks at the stack asks here: the audit (to attribute an event
to the user's line), strict (to find the user's frames in a traceback), the
CUDA stand-ins and the child-process patches of ``torchport run`` (to let torch
and torchport call the real API). Torch's folder is found without importing
torch, so the torch-free parts (the torchrun launcher) can ask too.

"Installed" code is the standard library and any package under a
``site-packages`` or ``dist-packages`` folder (transformers, tqdm, torchvision):
code the user did not write and cannot change at that line. The audit walks past
it to the user's own line (and names the installed line it went through); the
CUDA stand-ins do not, since an installed package asking ``torch.cuda`` on the
user's behalf must see the redirect, so :func:`is_library` stays torch and
torchport only.
"""

from __future__ import annotations

import enum
import importlib.util
import os
import sys
import sysconfig
from typing import Final

__all__ = [
    "LIBRARY_DIRS",
    "STDLIB_DIRS",
    "TORCHPORT_DIR",
    "TORCH_DIR",
    "Origin",
    "caller_is_library",
    "is_installed",
    "is_library",
    "origin",
]


def _package_dir(name: str) -> str:
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    # No torch installed (the checker's own install): no frame can be torch's.
    return os.path.dirname(os.path.abspath(origin)) + os.sep if origin else "\0no torch" + os.sep


TORCH_DIR: Final = _package_dir("torch")
TORCHPORT_DIR: Final = os.path.dirname(os.path.abspath(__file__)) + os.sep
LIBRARY_DIRS: Final = (TORCH_DIR, TORCHPORT_DIR)


def _stdlib_dirs() -> tuple[str, ...]:
    found = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib")}
    return tuple(sorted(os.path.abspath(path) + os.sep for path in found if path))


STDLIB_DIRS: Final = _stdlib_dirs()
# Folders pip, conda and Debian install packages into, wherever the environment lives
_PACKAGE_FOLDERS: Final = tuple(
    f"{os.sep}{name}{os.sep}" for name in ("site-packages", "dist-packages")
)


class Origin(enum.Enum):
    """Who wrote the code a frame runs."""

    USER = "user"
    TORCH = "torch"
    TORCHPORT = "torchport"
    INSTALLED = "installed"
    """The standard library or another installed package (transformers, tqdm, ...)."""


def is_installed(filename: str) -> bool:
    """Whether ``filename`` is the standard library's or an installed package's code.

    Torch and torchport are installed too; :func:`origin` tells them apart first.
    Code compiled from a string (``"<string>"``) is the user's; frozen modules
    (``"<frozen runpy>"``) are the standard library's.
    """
    if filename.startswith("<"):
        return filename.startswith("<frozen ")
    return filename.startswith(STDLIB_DIRS) or any(part in filename for part in _PACKAGE_FOLDERS)


def origin(filename: str) -> Origin:
    """Whose code ``filename`` (a code object's ``co_filename``) is."""
    if filename.startswith(TORCHPORT_DIR):
        return Origin.TORCHPORT
    if filename.startswith(TORCH_DIR):
        return Origin.TORCH
    if is_installed(filename):
        return Origin.INSTALLED
    return Origin.USER


def is_library(filename: str) -> bool:
    """Whether ``filename`` is torch's or torchport's code (not the user's)."""
    return filename.startswith(LIBRARY_DIRS)


def caller_is_library(*, past: tuple[str, ...] = ()) -> bool:
    """Whether the code that called the caller is torch's or torchport's.

    Frames whose file starts with one of ``past`` (the caller's own folder, a
    wrapper's module) are stepped over first, so a stand-in called through
    other stand-ins asks about the code that started the chain.
    """
    frame = sys._getframe(2)
    while frame is not None and past and frame.f_code.co_filename.startswith(past):
        frame = frame.f_back  # type: ignore[assignment]
    return frame is not None and is_library(frame.f_code.co_filename)

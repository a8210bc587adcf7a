"""Whose code a stack frame runs: the user's, torch's or torchport's.

Every part that looks at the stack asks here: the audit (to attribute an event
to the user's line), strict (to find the user's frames in a traceback), the
CUDA stand-ins and the child-process patches of ``torchport run`` (to let torch
and torchport call the real API). Torch's folder is found without importing
torch, so the torch-free parts (the torchrun launcher) can ask too.
"""

from __future__ import annotations

import enum
import importlib.util
import os
import sys
from typing import Final

__all__ = [
    "LIBRARY_DIRS",
    "TORCHPORT_DIR",
    "TORCH_DIR",
    "Origin",
    "caller_is_library",
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


class Origin(enum.Enum):
    """Who wrote the code a frame runs."""

    USER = "user"
    TORCH = "torch"
    TORCHPORT = "torchport"


def origin(filename: str) -> Origin:
    """Whose code ``filename`` (a code object's ``co_filename``) is."""
    if filename.startswith(TORCHPORT_DIR):
        return Origin.TORCHPORT
    if filename.startswith(TORCH_DIR):
        return Origin.TORCH
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

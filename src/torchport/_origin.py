"""Whose code a stack frame runs: the user's, torch's, torchport's, or another installed package's.

Every part that looks at the stack asks here, in one vocabulary (:class:`Origin`): the
audit (to charge an event to the user's line, and to tell torch's bookkeeping and
module moves from the program's own work), strict (to find the user's frames in a
traceback), the simulated accelerator (to name the user's line of a copy), the CUDA
stand-ins and the child-process patches of ``torchport run`` (to let torch and
torchport call the real API, and to tell a project's ``-m`` module from an installed
one), and the runner (to print a script's traceback without
its own frames). ``tests/test_origin.py`` fails when another module compares a frame's
file name itself. Torch's folder is found without importing torch, so the torch-free
parts (the torchrun launcher) can ask too; the questions about torch's code objects
(:func:`code_origin`) import torch on first use, asked only where torch is loaded.

"Installed" code is the standard library and any package under a
``site-packages`` or ``dist-packages`` folder (transformers, tqdm, torchvision):
code the user did not write and cannot change at that line. The audit walks past
it to the user's own line (and names the installed line it went through); the
CUDA stand-ins do not, since an installed package asking ``torch.cuda`` on the
user's behalf must see the redirect, so :func:`is_library` stays torch and
torchport only.
"""

from __future__ import annotations

import contextlib
import enum
import importlib.util
import os
import runpy
import sys
import sysconfig
from collections.abc import Iterable
from types import CodeType, FrameType
from typing import Final

__all__ = [
    "LIBRARY",
    "Origin",
    "added_by_watcher",
    "caller_frame",
    "caller_is_library",
    "code_origin",
    "count_as_torchport",
    "forget_claims",
    "installed_path",
    "is_installed",
    "is_library",
    "is_runner",
    "module_move_codes",
    "of_project",
    "of_simulator",
    "origin",
]


def _package_dir(name: str) -> str:
    spec = importlib.util.find_spec(name)
    found = spec.origin if spec is not None else None
    # No torch installed (the checker's own install): no frame can be torch's.
    return os.path.dirname(os.path.abspath(found)) + os.sep if found else "\0no torch" + os.sep


_TORCH_DIR: Final = _package_dir("torch")
_TORCHPORT_DIR: Final = os.path.dirname(os.path.abspath(__file__)) + os.sep
_SIMULATOR_DIR: Final = _package_dir("torchport.sim")  # (found, not imported)
_LIBRARY_DIRS: Final = (_TORCH_DIR, _TORCHPORT_DIR)


def _folders(paths: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(sorted({os.path.abspath(path) + os.sep for path in paths if path}))


_STDLIB_DIRS: Final = _folders(sysconfig.get_path(name) for name in ("stdlib", "platstdlib"))


# Where this interpreter installs packages (the venv's or the system's site-packages),
# and the folder names pip, conda and Debian install into, wherever the environment lives.
# Not site.getsitepackages(): on Windows it lists the interpreter's whole prefix.
_INSTALL_DIRS: Final = _folders(sysconfig.get_path(name) for name in ("purelib", "platlib"))
_PACKAGE_FOLDERS: Final = tuple(
    f"{os.sep}{name}{os.sep}" for name in ("site-packages", "dist-packages")
)

# Torch code that reads tensors living on the host by design, on every machine: the
# optimizers' step counters (unless capturable/fused; the audit's loading module tells
# them from the other reads of a step) and the data loading machinery (sampler
# permutations, worker seeds, collation). The learning-rate schedulers are not:
# ReduceLROnPlateau.step(loss) reads the user's loss, on the device in a GPU run.
_HOST_SIDE_DIRS: Final = tuple(
    os.path.join(_TORCH_DIR, *parts) + os.sep for parts in (("optim",), ("utils", "data"))
)
_USER_READS_IN_TORCH: Final = frozenset(
    os.path.join(_TORCH_DIR, "optim", name) for name in ("lr_scheduler.py", "swa_utils.py")
)
# Torch's dispatch code: frames a dispatch or function mode adds between a call and its
# caller (torch 2.15 decomposes complex->real .to() in torch/_ops.py under a mode).
_DISPATCH_FILES: Final = frozenset(
    os.path.join(_TORCH_DIR, *parts) for parts in (("_ops.py",), ("utils", "_python_dispatch.py"))
)
# What `torchport run` runs a script through besides its own code: runpy, and the
# context managers that hold the redirect around it.
_RUNNER_FILES: Final = frozenset(
    {os.path.abspath(runpy.__file__), os.path.abspath(contextlib.__file__), "<frozen runpy>"}
)


class Origin(enum.Enum):
    """Who wrote the code a frame runs (and, for torch's, the two roles the audit needs)."""

    USER = "user"
    TORCH = "torch"
    HOST_SIDE = "torch's host bookkeeping"
    """Torch code that reads host tensors by design on every machine: ``torch.optim``
    (step counters; not the learning-rate schedulers) and ``torch.utils.data``."""
    MODULE_MOVE = "torch's module move"
    """The per-tensor functions ``nn.Module.to``/``.cpu`` apply (only from
    :func:`code_origin`): a move of the model, a copy on an accelerator."""
    TORCHPORT = "torchport"
    """Torchport's code, and code a torchport watcher runs a call through (only from
    :func:`code_origin`: torch's ``__torch_function__`` dispatch, the tensor methods the
    audit wraps): frames of the call being watched, never its caller."""
    INSTALLED = "installed"
    """The standard library or another installed package (transformers, tqdm, ...)."""


LIBRARY: Final = frozenset({Origin.TORCH, Origin.HOST_SIDE, Origin.MODULE_MOVE, Origin.TORCHPORT})
"""Torch's and torchport's code: what :func:`is_library` answers for."""

_BY_FILE: dict[str, Origin] = {}


def is_installed(filename: str) -> bool:
    """Whether ``filename`` is the standard library's or an installed package's code.

    Torch and torchport are installed too; :func:`origin` tells them apart first.
    Code compiled from a string (``"<string>"``) is the user's; frozen modules
    (``"<frozen runpy>"``) are the standard library's.
    """
    if filename.startswith("<"):
        return filename.startswith("<frozen ")
    return filename.startswith(_STDLIB_DIRS + _INSTALL_DIRS) or any(
        part in filename for part in _PACKAGE_FOLDERS
    )


def origin(filename: str) -> Origin:
    """Whose code ``filename`` (a code object's ``co_filename``, an absolute path) is.

    Never :attr:`Origin.MODULE_MOVE`: that is a question about code objects
    (:func:`code_origin`). Cached per file name.
    """
    found = _BY_FILE.get(filename)
    if found is None:
        found = _BY_FILE[filename] = _origin_of_file(filename)
    return found


def _origin_of_file(filename: str) -> Origin:
    if filename.startswith(_TORCHPORT_DIR):
        return Origin.TORCHPORT
    if filename.startswith(_HOST_SIDE_DIRS) and filename not in _USER_READS_IN_TORCH:
        return Origin.HOST_SIDE
    if filename.startswith(_TORCH_DIR):
        return Origin.TORCH
    if is_installed(filename):
        return Origin.INSTALLED
    return Origin.USER


def is_library(filename: str) -> bool:
    """Whether ``filename`` is torch's or torchport's code (not the user's): one prefix test,
    as the CUDA stand-ins ask on every call; the same answer as ``origin(filename) in LIBRARY``."""
    return filename.startswith(_LIBRARY_DIRS)


def added_by_watcher(filename: str, *, watcher: str) -> bool:
    """Whether ``filename`` is code a watcher puts between a call and its caller: the
    ``watcher``'s own module (its wrappers), or torch's dispatch code (``torch/_ops.py``,
    ``torch/utils/_python_dispatch.py``) that runs only because a mode is on."""
    return filename == watcher or filename in _DISPATCH_FILES


def at_line_of(frame: FrameType, filename: str, lineno: int) -> bool:
    """Whether ``filename:lineno`` (where a warning points, say) is ``frame``'s current line."""
    return filename == frame.f_code.co_filename and lineno == frame.f_lineno


def is_runner(filename: str) -> bool:
    """Whether ``filename`` is code ``torchport run`` runs a script through (torchport's own,
    runpy, contextlib): frames the script's traceback leaves out, as ``python`` would."""
    return filename.startswith(_TORCHPORT_DIR) or filename in _RUNNER_FILES


def of_simulator(filename: str) -> bool:
    """Whether ``filename`` is the simulated accelerator's code: its kernels compute on host
    tensors for the device, so a torch call they make is the device's, not its caller's."""
    return filename.startswith(_SIMULATOR_DIR)


def of_project(filename: str, roots: tuple[str, ...]) -> bool:
    """Whether ``filename`` is one of a project's own files: under one of ``roots``
    (resolved folders ending in the path separator, or single files), as ``port --verify``
    reads the lines of the program it ported."""
    return filename.startswith(roots)


def installed_path(filename: str) -> str | None:
    """The part of an installed file's path a reader needs, or None for other files.

    From the package folder for a package (``transformers/modeling_utils.py``), from the
    standard library's folder for its modules.
    """
    for folder in _PACKAGE_FOLDERS:
        cut = filename.rfind(folder)
        if cut >= 0:
            return filename[cut + len(folder) :]
    for stdlib in _STDLIB_DIRS:
        if filename.startswith(stdlib):
            return filename[len(stdlib) :]
    return None


def caller_frame(frame: FrameType | None, *, past: tuple[str, ...]) -> FrameType | None:
    """The first frame at or above ``frame`` whose file does not start with one of ``past``
    (a module's own file, a folder of wrappers), or None."""
    while frame is not None and frame.f_code.co_filename.startswith(past):
        frame = frame.f_back
    return frame


def caller_is_library(*, past: tuple[str, ...] = ()) -> bool:
    """Whether the code that called the caller is torch's or torchport's.

    Frames whose file starts with one of ``past`` (the caller's own folder, a
    wrapper's module) are stepped over first, so a stand-in called through
    other stand-ins asks about the code that started the chain.
    """
    frame = caller_frame(sys._getframe(2), past=past) if past else sys._getframe(2)
    return frame is not None and is_library(frame.f_code.co_filename)


# -- torch's code objects, for the audit ---------------------------------------------------

_BY_CODE: dict[CodeType, Origin] = {}
_torch_codes_claimed = False


def module_move_codes() -> frozenset[CodeType]:
    """The code objects of the per-tensor functions ``Module.to``/``.cpu`` apply.

    Found through ``inspect.unwrap``: ``torchport.redirect`` may have patched
    ``Module.to`` over the original (``torchport run``). Imports torch.
    """
    import inspect

    from torch import nn

    return frozenset(
        const
        for method in (nn.Module.to, nn.Module.cpu)
        for const in inspect.unwrap(method).__code__.co_consts
        if isinstance(const, CodeType)
    )


def count_as_torchport(codes: Iterable[CodeType]) -> None:
    """Make :func:`code_origin` answer :attr:`Origin.TORCHPORT` for ``codes``: code a
    torchport watcher runs a call through (the Python-defined tensor methods it wraps).

    The watcher calls this when it is imported, before the program runs: torch's own
    codes are found then too, while ``nn.Module.to`` is still torch's (or torchport's
    redirect, which keeps the original reachable), not a later patch of the program's.
    """
    if not _torch_codes_claimed:
        _claim_torch_codes()
    _claim(codes, Origin.TORCHPORT)


def forget_claims(codes: Iterable[CodeType]) -> None:
    """Undo :func:`count_as_torchport` for ``codes`` (code made at run time, let go)."""
    for code in codes:
        _BY_CODE.pop(code, None)


def _claim(codes: Iterable[CodeType], origin: Origin) -> None:
    for code in codes:
        _BY_CODE[code] = origin


def _claim_torch_codes() -> None:
    global _torch_codes_claimed
    import torch
    import torch._ops

    _claim(module_move_codes(), Origin.MODULE_MOVE)
    _claim(
        (
            code
            for code in (
                getattr(torch.overrides.handle_torch_function, "__code__", None),
                getattr(torch._ops.OpOverload.__call__, "__code__", None),
            )
            if code is not None
        ),
        Origin.TORCHPORT,
    )
    _torch_codes_claimed = True  # last: another thread asking meanwhile claims them again


def code_origin(code: CodeType) -> Origin:
    """Whose code a code object is: :func:`origin` of its file, except that the functions
    a module move applies are :attr:`Origin.MODULE_MOVE` and the code a watcher runs a
    call through is :attr:`Origin.TORCHPORT`. Imports torch on first use.

    Not cached here: the audit keeps its own per-code-object cache on its hot path.
    """
    if not _torch_codes_claimed:
        _claim_torch_codes()
    claimed = _BY_CODE.get(code)
    return claimed if claimed is not None else origin(code.co_filename)

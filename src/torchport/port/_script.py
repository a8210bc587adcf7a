"""Run a script or module in this process the way ``python script.py`` / ``python -m`` would.

Same ``sys.argv``, ``__name__ == "__main__"``, ``sys.path[0]`` (the script's
folder, or the working directory for a module), stdin and stdout, and the same
exit code: ``sys.exit(n)`` gives ``n``, an uncaught exception prints its
traceback (without torchport's own frames) and gives 1.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import runpy
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType

from torchport.errors import ConfigError

__all__ = ["Target", "check_target", "run_target"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


@dataclass(frozen=True)
class Target:
    """What to run: a script path or a module name, and the arguments it gets."""

    name: str
    args: tuple[str, ...] = ()
    module: bool = False


def check_target(target: Target) -> None:
    """Raise :class:`~torchport.ConfigError` unless ``target`` can be started.

    Modules are looked up with the working directory first on ``sys.path``, as
    ``python -m`` does; finding a submodule imports its parent packages.
    """
    if not target.module:
        if not os.path.exists(target.name):
            raise ConfigError(
                f"script {target.name!r} does not exist; give the path of a Python file "
                "(or use -m NAME for a module)"
            )
        if os.path.isdir(target.name) and not os.path.exists(
            os.path.join(target.name, "__main__.py")
        ):
            raise ConfigError(
                f"{target.name!r} is a folder without __main__.py; give the script inside it"
            )
        return
    with _sys_path_head(os.getcwd()):
        try:
            spec = importlib.util.find_spec(target.name)
            if spec is not None and spec.submodule_search_locations is not None:
                spec = importlib.util.find_spec(f"{target.name}.__main__")
        except (ImportError, ValueError):
            spec = None
    if spec is None:
        raise ConfigError(
            f"no module named {target.name!r} that can be run (or it is a package without "
            "__main__); check the name and that its folder is on sys.path or the working directory"
        )


def run_target(
    target: Target, device: str | None = None, *, audit: bool = False, strict: bool = False
) -> int:
    """Run ``target`` on ``device`` (CUDA redirected there unless it is CUDA); return its exit code.

    Args:
        target: The script or module and its arguments.
        device: Device string; None lets :func:`torchport.pick_device` choose.
        audit: Wrap the run in :func:`torchport.audit` and print its report to
            stderr at exit, also when the script raised or called ``sys.exit``.
        strict: Wrap the run in :func:`torchport.strict`.

    Raises:
        torchport.ConfigError: ``target`` cannot be started.
        torchport.DeviceError: ``device`` is malformed or not present.
    """
    check_target(target)
    from torchport.place import pick_device
    from torchport.place._device import parse_device
    from torchport.port._redirect import redirect

    # A device from the command line is named as the flag in error messages.
    resolved = pick_device() if device is None else parse_device(device, source="--device")
    report: object = None
    try:
        # The script's exceptions leave through strict() (which rewrites device
        # mismatches) and redirect() (which undoes itself) before they are printed.
        with contextlib.ExitStack() as stack:
            if audit:
                from torchport.diagnose import audit as audit_context

                report = stack.enter_context(audit_context())
            if strict:
                from torchport.diagnose import strict as strict_context

                stack.enter_context(strict_context())
            # Innermost, so audit and strict see the devices after the rewrite.
            stack.enter_context(redirect(resolved))
            _execute(target)
    except SystemExit as exc:
        return _exit_code(exc.code)
    except Exception as exc:
        _trim_chain(exc)
        sys.excepthook(type(exc), exc, exc.__traceback__)
        return 1
    finally:
        if report is not None:
            sys.stderr.flush()
            print(report, file=sys.stderr)
    return 0


def _execute(target: Target) -> None:
    head = os.getcwd() if target.module else os.path.dirname(os.path.abspath(target.name))
    saved_argv = sys.argv
    sys.argv = [target.name, *target.args]
    try:
        with _sys_path_head(head):
            if target.module:
                runpy.run_module(target.name, run_name="__main__", alter_sys=True)
            else:
                # python gives the main script an absolute __file__ (3.9+); so does this.
                runpy.run_path(os.path.abspath(target.name), run_name="__main__")
    finally:
        sys.argv = saved_argv


def _exit_code(code: object) -> int:
    """The process exit status Python gives for ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _sys_path_head(head: str) -> Iterator[None]:
    """Make ``head`` be ``sys.path[0]`` (where Python puts the script's folder) for the block."""
    saved = list(sys.path)
    sys.path[:1] = [head]
    try:
        yield
    finally:
        sys.path[:] = saved


def _trim_chain(exc: BaseException) -> None:
    """Trim the traceback of ``exc`` and of every exception chained to it."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = _trim(current.__traceback__)
        pending += [current.__cause__, current.__context__]


def _trim(tb: TracebackType | None) -> TracebackType | None:
    """The traceback without runpy's and torchport's own frames (the runner, redirect, strict).

    What is left reads as ``python script.py`` would print it. An exception
    raised by torchport around the script (strict's rewritten mismatch) keeps no
    frames: the exception chained to it shows where the script failed.
    """
    kept = [entry for entry in _walk(tb) if not _is_runner(entry.tb_frame.f_code.co_filename)]
    if not kept:
        return None
    for entry, following in itertools.pairwise(kept):
        entry.tb_next = following
    kept[-1].tb_next = None
    return kept[0]


def _walk(tb: TracebackType | None) -> Iterator[TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _is_runner(filename: str) -> bool:
    return filename.startswith((_PACKAGE_DIR, "<frozen runpy>")) or filename in (
        runpy.__file__,
        contextlib.__file__,
    )

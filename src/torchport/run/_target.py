"""Run a script or module in this process the way ``python script.py`` / ``python -m`` would.

Same ``sys.argv`` (``argv[0]`` as given for a script, the module's file for
``-m``), ``__name__ == "__main__"`` in a fresh ``__main__`` module (so
``multiprocessing`` and pickle find the script's functions), ``sys.path[0]``
(the script's folder, or the working directory for a module), stdin and
stdout, and the same end: ``sys.exit(n)`` gives ``n``; an uncaught exception
prints its traceback (without torchport's own frames) and gives 1; Ctrl-C
prints the traceback and ends the process by SIGINT; non-daemon threads are
joined and ``atexit`` handlers run, all before the redirect is undone.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import importlib.machinery
import importlib.util
import io
import itertools
import os
import runpy
import signal
import sys
import threading
import types
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from torchport._origin import is_runner
from torchport.errors import ConfigError
from torchport.run._module_spec import find_runnable

if TYPE_CHECKING:
    import torch  # the launcher checks targets without paying for torch

__all__ = ["Target", "check_target", "run_target"]


@dataclass(frozen=True)
class Target:
    """What to run: a script path or a module name, and the arguments it gets."""

    name: str
    args: tuple[str, ...] = ()
    module: bool = False


def check_target(target: Target) -> None:
    """Raise :class:`~torchport.ConfigError` unless ``target`` can be started.

    Imports nothing: a module is looked up on ``sys.path`` (the working
    directory first, as ``python -m`` does) without running its packages'
    ``__init__``, which must only run once the redirect is in place.
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
        spec = find_runnable(target.name)
    if spec is None:
        raise ConfigError(
            f"no module named {target.name!r} that can be run (or it is a package without "
            "__main__); check the name and that its folder is on sys.path or the working directory"
        )


def run_target(
    target: Target,
    device: str | None = None,
    *,
    audit: bool = False,
    strict: bool = False,
    quiet: bool = False,
    redirect_cuda: bool = True,
) -> int:
    """Run ``target`` on ``device`` (CUDA redirected there unless it is CUDA); return its exit code.

    Under torchrun (``LOCAL_WORLD_SIZE`` set) the script sees one CUDA device
    per local worker, all of them ``device``, and its output is written in
    whole lines so workers sharing a terminal do not mix within a line.

    Args:
        target: The script or module and its arguments.
        device: Device string; None lets :func:`torchport.pick_device` choose.
        audit: Wrap the run in :func:`torchport.audit` and print its report to
            stderr at exit, also when the script raised or called ``sys.exit``.
        strict: Wrap the run in :func:`torchport.strict`.
        quiet: Do not say on stderr that CUDA is redirected (said once, by rank 0,
            when the redirect first changes a CUDA request of the script).
        redirect_cuda: False runs the script without the redirect: on ``sim`` it
            then sees an accelerator that is not CUDA (``torch.cuda.is_available()``
            is False, as on MPS or XPU); ``port --verify`` runs a port so too.

    Returns:
        The exit status ``python`` would give, or ``-signal.SIGINT`` when Ctrl-C
        ended the script (the caller then ends the process by that signal; see
        :func:`torchport.run._shutdown.die_by_signal`).

    Raises:
        torchport.ConfigError: ``target`` cannot be started.
        torchport.DeviceError: ``device`` is malformed or not present.
    """
    check_target(target)
    from torchport.hardware import named_type, parse_device
    from torchport.place import pick_device
    from torchport.run._lines import whole_lines
    from torchport.run._notice import on_first_use
    from torchport.run._redirect import redirect
    from torchport.run._shutdown import ExitHandlers, free_cycles, join_threads

    if named_type(device) == "sim":
        from torchport.sim import simulate_accelerator

        simulate_accelerator()
    # A device from the command line is named as the flag in error messages.
    resolved = pick_device() if device is None else parse_device(device, argument="--device")
    count = _local_world_size()
    announce: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if (
        not quiet
        and redirect_cuda
        and resolved.type != "cuda"
        and os.environ.get("RANK", "0") == "0"
    ):
        # Said when the redirect first acts: a script that never names CUDA is not redirected.
        announce = on_first_use(functools.partial(_announce, resolved, count))
    before = set(threading.enumerate())
    handlers = ExitHandlers()
    # The redirect is outermost: it stays until the script's threads and atexit
    # handlers are done, as the script's own CUDA would.
    lines = whole_lines() if "LOCAL_RANK" in os.environ else contextlib.nullcontext()
    redirected = (
        redirect(resolved, device_count=count) if redirect_cuda else contextlib.nullcontext()
    )
    with redirected, announce, lines:
        with _main_module(target), handlers.collecting():
            # On the simulated accelerator a mismatch is the finding: strict names its culprit.
            code = _run_watched(target, audit=audit, strict=strict or resolved.type == "sim")
            try:
                join_threads(before)
                handlers.run()
            except KeyboardInterrupt:
                code = -signal.SIGINT
        free_cycles()  # the script's module is gone: what only the collector frees goes now
    return code


def _run_watched(target: Target, *, audit: bool, strict: bool) -> int:
    """Run the script under audit/strict; print its traceback or exit message; give its status."""
    report: object = None
    try:
        # The script's exceptions leave through strict(), which rewrites device
        # mismatches, before they are printed.
        with contextlib.ExitStack() as stack:
            if audit:
                from torchport.diagnose import audit as audit_context

                report = stack.enter_context(audit_context())
            if strict:
                from torchport.diagnose import strict as strict_context

                stack.enter_context(strict_context())
            _execute(target)
    except SystemExit as exc:
        return _exit_code(exc.code)
    except (Exception, KeyboardInterrupt) as exc:
        _trim_chain(exc)
        sys.excepthook(type(exc), exc, exc.__traceback__)
        return -signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 1
    finally:
        if report is not None:
            sys.stderr.flush()
            print(report, file=sys.stderr)
    return 0


def _local_world_size() -> int:
    """How many workers torchrun started on this node; 1 outside torchrun."""
    value = os.environ.get("LOCAL_WORLD_SIZE", "1")
    return int(value) if value.isdigit() and int(value) > 0 else 1


def _announce(device: torch.device, count: int) -> None:
    """Say once, on stderr, what this run redirects: the script may print 'Using cuda'."""
    devices = "1 device" if count == 1 else f"{count} devices"
    print(
        f"torchport run: CUDA is redirected to {device}: the script sees {devices} "
        f"and each one is {device} (--quiet hides this line)",
        file=sys.stderr,
        flush=True,
    )


@contextlib.contextmanager
def _main_module(target: Target) -> Iterator[None]:
    """A fresh ``__main__`` module, ``sys.argv`` and ``sys.path[0]``, as python sets them.

    They stay until the run has joined its threads and run its atexit handlers.
    """
    if target.module:
        head = os.getcwd()
    elif _is_archive_or_folder(target.name):
        head = os.path.abspath(target.name)
    else:
        head = os.path.dirname(os.path.realpath(target.name))  # python resolves symlinks here
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    saved_argv, saved_main = sys.argv, sys.modules["__main__"]
    sys.argv = [target.name, *target.args]
    sys.modules["__main__"] = module
    try:
        with _sys_path_head(head):
            yield
    finally:
        sys.argv = saved_argv
        sys.modules["__main__"] = saved_main


def _is_archive_or_folder(name: str) -> bool:
    """Whether python runs ``name`` as a folder or zip archive holding ``__main__.py``."""
    return os.path.isdir(name) or zipfile.is_zipfile(name)


def _execute(target: Target) -> None:
    """Run the target's code in the ``__main__`` module set up by :func:`_main_module`."""
    if target.module:
        # What `python -m` calls; it sets argv[0] to the module's file.
        runpy._run_module_as_main(target.name, alter_argv=True)  # type: ignore[attr-defined]
    elif _is_archive_or_folder(target.name):
        # What `python folder` / `python app.zip` calls: folder/__main__.py.
        runpy._run_module_as_main("__main__", alter_argv=False)  # type: ignore[attr-defined]
    else:
        path = os.path.abspath(target.name)  # python gives __main__ an absolute __file__
        with io.open_code(path) as file:
            source = file.read()
        main = sys.modules["__main__"]
        main.__dict__.update(
            __file__=path,
            __cached__=None,
            __loader__=importlib.machinery.SourceFileLoader("__main__", path),
            __spec__=None,
            __package__=None,
        )
        exec(compile(source, path, "exec", dont_inherit=True), main.__dict__)


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
    kept = [entry for entry in _walk(tb) if not is_runner(entry.tb_frame.f_code.co_filename)]
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

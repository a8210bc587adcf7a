"""The ``torchport`` command: builds one parser from the subcommand modules and dispatches.

Each subcommand lives in its own module (``cli/doctor.py``, ``cli/check.py``, ...)
exposing ``register(subparsers)``, which adds its parser and sets ``handler`` to a
function ``(argparse.Namespace) -> int``. Subcommand modules import torch only
inside their handler, so ``torchport check`` never pays for it.

Exit codes: 0 clean, 1 findings (or the script's own failure), 2 usage or configuration error.
A reader that closes the pipe early (``torchport check . | head``) changes none of
them: the rest of the output goes nowhere (see :mod:`torchport.cli._pipe`).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

from torchport import __version__
from torchport.cli._pipe import pipe_safe_stdout
from torchport.cli._plain_check import plain_check
from torchport.errors import MissingDependencyError, TorchportError

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    import argparse
    from typing import Any, TextIO

SUBCOMMANDS = ("doctor", "check", "fix", "port", "rule", "run", "bench")
_CHECKER = frozenset({"check", "fix", "port", "rule"})  # exit 1 means findings there


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the ``argv`` it will parse, naming a subcommand, with that one alone.

    Each subcommand module is imported to register it, so a run imports only its
    own (``torchport check x.py`` never loads ``port`` or ``bench``); without a known
    subcommand in ``argv`` (``--help``, a typo) every one is registered, so the help
    and the "invalid choice" message list them all.
    """
    import argparse  # here: a plain `check PATH` never builds a parser (start-up)

    parser = argparse.ArgumentParser(
        prog="torchport",
        description="Run the same PyTorch code correctly and fast on any device.",
    )
    parser.add_argument("--version", action="version", version=f"torchport {__version__}")
    sub = parser.add_subparsers(dest="subcommand", metavar="COMMAND")
    for name in _named(argv) or SUBCOMMANDS:
        module = importlib.import_module(f"torchport.cli.{name}")
        module.register(sub)
    return parser


def _named(argv: Sequence[str] | None) -> tuple[str, ...]:
    """The subcommand ``argv`` names: its first word not an option, when it is one of ours."""
    first = next((word for word in argv or () if not word.startswith("-")), None)
    return (first,) if first in SUBCOMMANDS else ()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; returns its exit code (see the module docstring).

    Called as the program (no ``argv``: the ``torchport`` command, ``python -m
    torchport``), a ``check``, ``fix`` or ``port`` ends the process itself (:func:`exit_now`).
    """
    program = _named(sys.argv[1:]) if argv is None else ()
    program_check = program == ("check",)
    program_fix = program in (("fix",), ("port",))
    if program_check:
        from torchport.cli import check

        check.AS_PROGRAM = True  # its start-up keeps what it loads (check._imports_kept)
    paused = False
    if program_fix:
        import gc

        # As the program's check (check._run): the run pauses the cyclic collector while
        # it fixes (files/_work.no_cycle_scans); resumed at its end, the collector's first
        # scan went over everything the run still held (every kept tree and module's
        # facts: ~0.3 s of timm's port) to free almost nothing the exit does not.
        paused = gc.isenabled()
        gc.disable()
    code = _guarded(argv)
    if program_check:
        exit_now(code)
        # The usual exit runs after all: hand it back what the start-up froze
        # (check._imports_kept), or the teardown would neither free nor finalize it; and
        # resume the collector the check left paused for the exit (check._run).
        import gc

        gc.unfreeze()
        if check.PAUSED:
            gc.enable()
    elif program_fix:
        # Its teardown frees every module's facts and kept tree one by one (~0.15 s of
        # timm's port): skipped as a check's is, where it has nothing else to do.
        exit_now(code)
        if paused:  # the usual exit runs after all: with the collector as it found it
            import gc

            gc.enable()
    return code


def exit_now(code: int) -> None:
    """End the process with ``code`` now, skipping the interpreter's teardown when it is idle.

    The teardown frees the objects of the ~190 modules a check loaded one by one (about
    11 ms, a sixth of a small check's whole run), where the exit frees them at once.
    Taken only when nothing else would run there: no ``atexit`` callback, no
    ``threading`` loaded (a worker pool's shutdown joins its threads there), not in
    development mode (its warnings about unclosed files come from the teardown), and the
    standard streams flushed without an error. Otherwise returns, and the usual exit
    runs. Every file a check writes (cache, ``--add-noqa``) is closed before it returns.
    """
    import atexit

    if atexit._ncallbacks() or "threading" in sys.modules or sys.flags.dev_mode:
        return
    try:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _guarded(argv: Sequence[str] | None) -> int:
    try:
        with pipe_safe_stdout() as real_stdout:
            return _main(argv, real_stdout)
    except BrokenPipeError:  # a write that bypassed sys.stdout: the documented recipe
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return 1


def _main(argv: Sequence[str] | None, real_stdout: TextIO) -> int:
    words = sys.argv[1:] if argv is None else argv
    plain = plain_check(words)  # argparse's reading of the commonest line, without argparse
    args: Any = plain if plain is not None else _parsed(words)
    handler = getattr(args, "handler", None)
    if handler is None:
        build_parser(words).print_help(sys.stderr)
        return 2
    if args.subcommand == "run":  # the script owns its stdout: it gets the real one
        sys.stdout = real_stdout
    try:
        return int(handler(args))
    except TorchportError as exc:
        print(f"torchport {args.subcommand}: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # `run`, `doctor`, `bench` on the checker-only install
        missing = MissingDependencyError.of(exc, f"`torchport {args.subcommand}`")
        if missing is None:
            raise
        print(f"torchport {args.subcommand}: error: {missing}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise  # main's: never "internal error"
    except Exception:
        if args.subcommand not in _CHECKER:
            raise
        # Python's own exit status for a crash is 1, which these commands use for
        # "findings": a CI reading the code must see an error instead.
        import traceback

        traceback.print_exc()
        print(
            f"torchport {args.subcommand}: internal error (a torchport bug; please report it "
            f"with the traceback above)",
            file=sys.stderr,
        )
        return 2


def _parsed(words: Sequence[str]) -> argparse.Namespace:
    """argparse's reading of ``words``; a usage error exits 2 with the subcommand's usage."""
    import argparse

    parser = build_parser(words)
    args, unknown = parser.parse_known_args(words)
    if unknown[:1] == ["--"] and getattr(args, "verify", None) is not None:
        args.verify, unknown = [*args.verify, *unknown[1:]], []  # `port --verify -- ARGS`
    if unknown:  # the subcommand's usage, not the top-level one: `check --bogus`
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        owner = subparsers.choices.get(getattr(args, "subcommand", None) or "", parser)
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


if __name__ == "__main__":
    raise SystemExit(main())

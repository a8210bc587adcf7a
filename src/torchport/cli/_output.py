"""Where a file command's report goes, whether it is coloured, and the progress line.

The report goes to stdout or ``--output-file``; colour only when that is a
terminal (``NO_COLOR`` set: never; ``FORCE_COLOR`` set: always). Progress is
one line on stderr, rewritten in place, only when stderr is a terminal and the
run is not ``--quiet``: a pipe or a CI log gets none of it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

from torchport.errors import ConfigError

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    import argparse
    from typing import IO


def _colour(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty() and os.environ.get("TERM") != "dumb"


@contextlib.contextmanager
def report_stream(args: argparse.Namespace, default: IO[str]) -> Iterator[tuple[IO[str], bool]]:
    """``(stream, colour)`` for the report: ``--output-file`` when given, else ``default``.

    Entered before the run: a report that cannot be written is an error (exit 2)
    before any file is read or fixed, never a traceback after the work is done.
    Missing folders on the way to the file are made, as Ruff does.

    Raises:
        ConfigError: the file cannot be created or written.
    """
    path = getattr(args, "output_file", None)
    if path is None:
        yield default, _colour(default)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise ConfigError(
            f"--output-file {path}: cannot write the report there ({exc.strerror or exc}); "
            f"name a file in a folder you may write to"
        ) from None
    with fh:
        yield fh, False


class ProgressLine:
    """``Checking 120/2285 files`` on stderr, at most ten times a second; cleared at the end."""

    def __init__(self, verb: str, args: argparse.Namespace) -> None:
        self.verb = verb
        self.on = (
            not getattr(args, "quiet", False)
            and not getattr(args, "no_progress", False)
            and sys.stderr.isatty()
        )
        self._last = 0.0
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.on or (now - self._last < 0.1 and done < total):
            return
        self._last = now
        sys.stderr.write(f"\r\x1b[2K{self.verb} {done}/{total} files")
        sys.stderr.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
            self._shown = False

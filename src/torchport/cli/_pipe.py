"""A standard output that a reader closing the pipe early cannot crash.

``torchport check . | head`` closes the pipe after ten lines; the next write
raises :class:`BrokenPipeError`, and so does the interpreter's own flush at exit.
Python's documented recipe (the ``signal`` module's notes on SIGPIPE) is to point
stdout at ``os.devnull`` when that happens. Here the redirection happens in the
write itself, so the command finishes its work, writes the rest of its report
nowhere, and exits with the code it would have had (1 for findings, 0 for a
clean run): no traceback, no "internal error", the same exit code as with no pipe.

Not used for ``torchport run``, whose script owns its standard output.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["pipe_safe_stdout"]


class _PipeSafeRaw(io.RawIOBase):
    """File descriptor ``fd`` for writing; a closed pipe turns it into ``os.devnull``."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data)
        try:
            return os.write(self._fd, view)
        except BrokenPipeError:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._fd)  # the documented recipe: the rest goes nowhere
            finally:
                os.close(null)
            return len(view)

    def close(self) -> None:  # the descriptor is the process's stdout: never ours to close
        super().close()


@contextlib.contextmanager
def pipe_safe_stdout() -> Iterator[TextIO]:
    """Within the block, ``sys.stdout`` (and its ``.buffer``) survive a closed pipe.

    Yields the stdout it replaced (for code that must have the real one back). A
    stdout with no file descriptor (a test's capture) is left as it is.
    """
    original = sys.stdout
    try:
        fd = original.fileno()
    except (AttributeError, OSError, ValueError):
        yield original
        return
    with contextlib.suppress(BrokenPipeError, OSError, ValueError):
        original.flush()
    raw = _PipeSafeRaw(fd)
    buffered = io.BufferedWriter(raw)  # type: ignore[type-var]  # typeshed wants a RawIO with readinto
    wrapper = io.TextIOWrapper(
        buffered,
        encoding=original.encoding,
        errors=original.errors,
        line_buffering=bool(original.line_buffering),
    )
    sys.stdout = wrapper
    try:
        yield original
    finally:
        with contextlib.suppress(OSError, ValueError):
            wrapper.flush()
        with contextlib.suppress(ValueError):
            wrapper.detach()  # leaves the descriptor open (it is the process's stdout)
        sys.stdout = original

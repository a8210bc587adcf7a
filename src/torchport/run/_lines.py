"""Whole-line output for workers that share a terminal: one write per line, never half a line."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from typing import TextIO

__all__ = ["WholeLines", "whole_lines"]


class WholeLines(io.TextIOWrapper):
    """A text stream that hands its binary stream whole lines only, each in one write.

    A ``print`` is several writes (each argument, then the newline), and one
    argument may itself hold newlines (a tensor's repr). Text after the last
    newline waits for the next one, or for an explicit ``flush()`` (progress
    bars flush their partial lines and get them out at once).
    """

    _tail = ""

    def write(self, text: str) -> int:
        if "\n" not in text:
            self._tail += text
            return len(text)
        head, newline, self._tail = (self._tail + text).rpartition("\n")
        super().write(head + newline)
        super().flush()
        return len(text)

    def flush(self) -> None:
        if self._tail:
            tail, self._tail = self._tail, ""
            super().write(tail)
        super().flush()


@contextlib.contextmanager
def whole_lines() -> Iterator[None]:
    """Make stdout and stderr write whole lines, so workers sharing a terminal never mix mid-line.

    torchrun starts workers with ``python -u``: every piece of a ``print`` is its
    own write, and other workers' writes land between them. One write per line
    (atomic on a pipe up to its buffer size) keeps lines whole.
    """
    saved = sys.stdout, sys.stderr
    streams: list[TextIO] = []
    for stream in saved:
        if not isinstance(stream, io.TextIOWrapper) or isinstance(stream, WholeLines):
            streams.append(stream)
            continue
        stream.flush()
        streams.append(
            WholeLines(
                stream.buffer,
                encoding=stream.encoding,
                errors=stream.errors,
                write_through=True,
            )
        )
    sys.stdout, sys.stderr = streams
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        for stream in streams:
            if isinstance(stream, WholeLines):
                with contextlib.suppress(Exception):
                    stream.flush()
                    # Let go of the binary stream without closing it: it is still stdout's.
                    stream.detach()

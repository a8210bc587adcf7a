"""How a Python file's bytes become text: the size limit, the encoding, the stamp.

Size: a Python file over :data:`MAX_SOURCE_BYTES` (4 MiB) is skipped with an
error saying so, before it is read: Python's parser needs 100-200 bytes of
memory per byte of dense source, so a larger file would take gigabytes (hand
written code stays far below; generated tables and data do not). A notebook
may be larger on disk (outputs); its code cells count against the same limit.

Reading: bytes are decoded with the PEP 263 cookie or BOM
(:func:`tokenize.detect_encoding`, UTF-8 by default), keeping line endings as
they are. A file that cannot be read or decoded raises :class:`SourceError`,
which callers turn into a per-file error, never a silent skip.
"""

from __future__ import annotations

import io
import os
import stat

from torchport.check._records import field, record

__all__ = [
    "MAX_SOURCE_BYTES",
    "SourceError",
    "SourceFile",
    "Stamp",
    "decode_source",
    "newline_of",
    "read_source",
    "special_file_message",
    "too_large_message",
]

MAX_SOURCE_BYTES = 4 * 1024 * 1024
_MAX_NOTEBOOK_BYTES = 64 * MAX_SOURCE_BYTES  # outputs (images) make notebooks larger on disk


class SourceError(Exception):
    """A file that cannot be read or decoded; the message says why and what to do."""


@record(frozen=True)
class Stamp:
    """What a file was when it was read, to tell before writing whether it changed since."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    data: bytes
    # Not compared: a chmod or a new hard link while fix runs changes no byte to keep.
    # The check cache keys on it, since no tool can set it back (``touch -d`` cannot).
    ctime_ns: int = field(default=0, compare=False)

    @classmethod
    def of(cls, st: os.stat_result, data: bytes) -> Stamp:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, data, st.st_ctime_ns)


@record(frozen=True)
class SourceFile:
    """A decoded file and the encoding to write it back with (``utf-8-sig`` keeps a BOM).

    ``stamp`` records the bytes read and the file's state then (``None`` for text
    that did not come from a file).
    """

    text: str
    encoding: str
    stamp: Stamp | None = None


def newline_of(text: str) -> str | None:
    """The one line ending ``text`` uses (``"\n"``, ``"\r\n"`` or ``"\r"``); None if mixed or none.

    Fixes insert ``"\n"``; a file that uses another ending throughout is fixed
    with its endings turned into ``"\n"`` and turned back afterwards (Python
    reads all three as a newline, even inside strings, so this changes no
    meaning), so it never ends up with mixed endings.
    """
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    kinds = [(n, ending) for n, ending in ((lf, "\n"), (crlf, "\r\n"), (cr, "\r")) if n]
    return kinds[0][1] if len(kinds) == 1 else None


def special_file_message(mode: int) -> str:
    """Why a file that is no regular file (a FIFO, a device, a socket) is skipped."""
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    return (
        f"skipped: it is {kind}, not a regular file; torchport reads only regular files "
        f"(pipe source text in with `-` instead)"
    )


def too_large_message(size: int, limit: int = MAX_SOURCE_BYTES) -> str:
    """Why a file over the size limit is skipped (see the module docstring)."""
    return (
        f"skipped: {size / 2**20:.1f} MiB of Python is over the {limit / 2**20:.0f} MiB "
        f"torchport checks (parsing takes 100-200 bytes of memory per byte of source); "
        f"split the file, or exclude it if it is generated"
    )


def _declared_encoding(data: bytes) -> str:
    """:func:`tokenize.detect_encoding`'s answer for ``data``; it raises what that raises.

    Without a BOM and without the word ``coding`` in the first two lines (where a
    cookie must be), its answer is UTF-8 whatever else they hold (a line that is not
    UTF-8 raises "invalid or missing encoding declaration", which the caller reads as
    UTF-8): said here without importing tokenize (~1 ms of a small check's start-up).
    """
    first = data.find(b"\n")
    second = -1 if first < 0 else data.find(b"\n", first + 1)
    head = data if second < 0 else data[: second + 1]
    if not data.startswith(b"\xef\xbb\xbf") and b"coding" not in head:
        return "utf-8"
    import tokenize

    return tokenize.detect_encoding(io.BytesIO(data).readline)[0]


def decode_source(data: bytes) -> tuple[str, str]:
    """Decode Python source bytes as Python does: BOM, coding cookie, else UTF-8.

    Returns the text and the encoding (``utf-8-sig`` with a BOM).

    Raises:
        SourceError: a bad coding cookie, or bytes invalid in the encoding.
    """
    try:
        encoding = _declared_encoding(data)
    except SyntaxError as exc:
        # detect_encoding also raises when the first two lines are not UTF-8 and
        # carry no cookie; say where the bad byte is, as for later lines.
        encoding = "utf-8"
        if "invalid or missing encoding declaration" not in str(exc.msg):
            raise SourceError(f"bad encoding declaration: {exc.msg}") from exc
    try:
        return data.decode(encoding), encoding
    except (UnicodeDecodeError, LookupError) as exc:
        where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        raise SourceError(
            f"not valid {encoding}{where}; re-save it as UTF-8 or declare its encoding "
            f"with a '# -*- coding: ... -*-' line (PEP 263)"
        ) from exc


def read_source(path: str | os.PathLike[str]) -> SourceFile:
    """Read and decode one Python file.

    Raises:
        SourceError: unreadable, a bad coding cookie, or bytes invalid in its encoding.
    """
    try:
        # Non-blocking open: a FIFO named here must not wait for a writer (it is refused below).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(21, "Is a directory")
            if not stat.S_ISREG(st.st_mode):
                raise SourceError(special_file_message(st.st_mode))
            limit = _MAX_NOTEBOOK_BYTES if str(path).endswith(".ipynb") else MAX_SOURCE_BYTES
            if st.st_size > limit:
                raise SourceError(too_large_message(st.st_size, limit))
            data = fh.read()
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from exc
    text, encoding = decode_source(data)
    return SourceFile(text, encoding, Stamp.of(st, data))


# ---------------------------------------------------------------- gitignore-style globs

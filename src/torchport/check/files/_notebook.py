"""Jupyter notebooks as one virtual Python file, and back (Ruff's model).

The code cells of a ``.ipynb`` file are joined, in order, into one Python text
that the engine checks and fixes like any file; each cell is preceded by a
marker comment line naming it, so the text can be split back into cells after
fixes have inserted or removed lines. A finding is reported as
``nb.ipynb:cell 3:2:5`` (cell 3 is the third cell of the notebook, markdown
cells counted, as Jupyter shows them; line 2 of that cell).

IPython syntax is not Python; it is kept out of the rules' way, never edited.
Its line forms are recognised where IPython recognises them, at the start of a
logical line (not inside brackets, strings or a backslash continuation of
Python):

* a line magic, shell line, help or autocall escape (``%matplotlib inline``,
  ``!pip install x``, ``!!ls``, ``?obj``, ``obj?``, ``np.*load*??``,
  ``/f x``, ``,f a b``) becomes ``...`` with a marker comment, and
  ``files = !ls`` becomes ``files = ...``, so the line count, indentation and
  the assigned name stay; the lines that continue it (after a line ending in
  a backslash) become marker comments; after fixing, every marker line is
  put back as it was (a fix that lost one makes the notebook refused, never
  written);
* a cell that starts with a cell magic (``%%bash``, ``%%html``) is left out of
  the virtual file whole: its body may not be Python at all; the magics that
  run their body as Python (``%%time``, ``%%timeit``, ``%%capture``, ``%%prun``,
  ``%%debug``) keep it: their first line is a marker like a line magic's.

A cell that does not parse (an exercise left blank) is left out too when
checking, and reported as an error naming it, so the other cells are still
checked; ``fix`` refuses such a notebook, since what the broken cell binds is
unknown.

Writing back changes only the ``source`` of the code cells that changed. The
JSON layout is reproduced with :func:`json.dumps`; a notebook whose layout is
not reproduced byte for byte (indent 1, 2 or 4; ASCII-escaped or not) is
refused rather than reformatted.
"""

from __future__ import annotations

import bisect
import json
import re
import secrets
from collections.abc import Callable

from torchport.check._patterns import lazy_pattern
from torchport.check._records import field, record

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["NotPython", "Notebook", "NotebookError", "read_notebook"]

_LAYOUTS = tuple((indent, ascii_) for indent in (1, 2, 4) for ascii_ in (False, True))
_LINE = lazy_pattern(r"[^\n]*\n|[^\n]+$")
_ASSIGN_MAGIC = lazy_pattern(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[!%]")


class NotPython(Exception):
    """A notebook of another language (R, Julia ...): nothing for a Python checker to read."""


def _lines(text: str) -> list[str]:
    """Lines with their ``\n`` (never split on the other characters ``splitlines`` knows)."""
    return _LINE.findall(text)


class NotebookError(Exception):
    """A notebook that cannot be checked or written back; the message says why and what to do."""


def _cell_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise NotebookError(f"a cell's 'source' is {type(source).__name__}, expected text")


_ESCAPES = ("%", "!", "?", "/", ",", ";")
# `obj?`, `obj.attr??`, `%magic?`, `np.*load*?`: IPython's help at the end of a line.
_HELP_END = lazy_pattern(r"^\s*%{0,2}(?!\d)[\w*]+(?:\.(?!\d)[\w*]+)*\?\??\s*$")


def _is_magic(stripped: str) -> bool:
    """Whether a line that starts a logical line is IPython's, not Python."""
    return stripped.startswith(_ESCAPES) or bool(_HELP_END.match(stripped))


class _PythonLines:
    """Where Python lines leave the tokenizer: inside brackets, a string, a continuation.

    Only a line fed at a logical line's start may be IPython's; the others
    continue Python code (a string that says ``!`` or ends with ``?``).
    """

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""  # the open string's quote ('', "'", '"', "'''" or '"""')
        self.continued = False

    @property
    def at_start(self) -> bool:
        return not (self.depth or self.quote or self.continued)

    def feed(self, line: str) -> None:
        text = line.rstrip("\r\n")
        self.continued = False
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if self.quote:
                if c == "\\":
                    i += 2
                    continue
                if text.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = ""
                    continue
                i += 1
                continue
            if c == "#":
                break
            if c in "\"'":
                triple = text[i : i + 3]
                self.quote = triple if triple in ('"""', "'''") else c
                i += len(self.quote)
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(self.depth - 1, 0)
            elif c == "\\" and i == n - 1:
                self.continued = True
            i += 1
        if self.quote in ('"', "'") and not self.continued and not text.endswith("\\"):
            self.quote = ""  # a one-line string left open: a syntax error Python will report


@record()
class Notebook:
    """A parsed notebook, its virtual Python ``source``, and what is needed to write it back."""

    data: dict[str, Any]
    source: str
    nonce: str
    magics: dict[str, str]  # marker line -> the original IPython line
    ends_newline: dict[int, bool]  # cell index -> its text ended with a newline
    layout: tuple[int, bool] | None  # json.dumps(indent, ensure_ascii) that reproduces the file
    trailing_newline: bool
    skipped: set[int] = field(default_factory=set)  # cells left out: they do not parse

    def skip(self, index: int) -> None:
        """Leave cell ``index`` out of :attr:`source` (it is never written either)."""
        self.skipped.add(index)
        self.magics.clear()
        self.ends_newline.clear()
        self.source = _virtual(self, self.data["cells"])

    def _marker(self, index: int) -> str:
        return f"# torchport:cell-{self.nonce}:{index}"

    def cells_of(self, source: str) -> dict[int, list[str]]:
        """Split a virtual source back into lines per cell index."""
        marker = re.compile(rf"^# torchport:cell-{self.nonce}:(\d+)$")
        cells: dict[int, list[str]] = {}
        before: list[str] = []  # lines a fix put above the first marker: the first cell's
        current: list[str] | None = None
        for line in _lines(source):
            found = marker.match(line.rstrip("\r\n"))
            if found is not None:
                current = cells.setdefault(int(found[1]), [] if cells else before)
            elif current is not None:
                current.append(line)
            else:
                before.append(line)
        return cells

    def locate(self, source: str, line: int) -> tuple[int, int]:
        """(1-based cell number, 1-based line in that cell) of virtual ``line`` in ``source``."""
        return self.locator(source)(line)

    def locator(self, source: str) -> Callable[[int], tuple[int, int]]:
        """:meth:`locate` for many lines of one ``source``: the markers are found once."""
        marker = re.compile(rf"^# torchport:cell-{self.nonce}:(\d+)$", re.MULTILINE)
        starts: list[int] = []  # virtual line of each marker
        cells: list[int] = []
        line, at = 1, 0
        for found in marker.finditer(source):
            line += source.count("\n", at, found.start())
            at = found.start()
            starts.append(line)
            cells.append(int(found[1]))

        def locate(wanted: int) -> tuple[int, int]:
            i = bisect.bisect_left(starts, wanted) - 1  # the last marker above ``wanted``
            if i < 0:
                return 1, wanted
            return cells[i] + 1, wanted - starts[i]

        return locate

    def write(self, fixed: str) -> str:
        """The notebook's JSON text with the code cells of ``fixed`` in place.

        Raises:
            NotebookError: a cell or an IPython line went missing, or the layout is unknown.
        """
        if self.layout is None:
            raise NotebookError(
                "not fixed: its JSON layout is not one torchport can reproduce (indent 1, 2 "
                "or 4, as Jupyter writes), so writing it would reformat the whole file; "
                "save it from Jupyter once, or apply the fixes shown by `check` by hand"
            )
        cells = self.cells_of(fixed)
        if set(cells) != set(self.ends_newline):
            raise NotebookError("not fixed: a fix moved a cell boundary; this is a torchport bug")
        seen: set[str] = set()
        for index, lines in cells.items():
            for i, line in enumerate(lines):
                key = line.rstrip("\r\n").strip()
                if key in self.magics:
                    seen.add(key)
                    end = line[len(line.rstrip("\r\n")) :]
                    lines[i] = self.magics[key] + end
            text = "".join(lines)
            if not self.ends_newline[index] and text.endswith("\n"):
                text = text[:-1]
            cell = self.data["cells"][index]
            if text == _cell_text(cell):
                continue
            if isinstance(cell.get("source"), list):
                cell["source"] = _lines(text)
            else:
                cell["source"] = text
        if seen != set(self.magics):
            raise NotebookError("not fixed: a fix removed an IPython line; this is a torchport bug")
        indent, ascii_ = self.layout
        out = json.dumps(self.data, indent=indent, ensure_ascii=ascii_)
        return out + "\n" if self.trailing_newline else out


# Cell magics that run their body as Python (IPython's own; the body is checked).
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})


def _foreign_cell(text: str) -> bool:
    """Whether a cell starts with a cell magic whose body may not be Python (``%%bash``)."""
    first = text.lstrip()
    if not first.startswith("%%"):
        return False
    name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
    return name not in _PYTHON_CELL_MAGICS


def _virtual(nb: Notebook, cells: list[Any]) -> str:
    parts: list[str] = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = _cell_text(cell)
        if _foreign_cell(text) or index in nb.skipped:
            continue  # a cell magic whose body is no Python (`%%bash`), or a broken cell
        lines = _lines(text)
        python = _PythonLines()
        continues = False  # the line before was IPython's and ended with `\`
        for i, line in enumerate(lines):
            body = line.rstrip("\r\n")
            stripped = body.strip()
            indent = body[: len(body) - len(body.lstrip())]
            if continues:
                placeholder = f"{indent}#"  # what continues a shell or magic line
                continues = body.endswith("\\")
            elif not python.at_start:
                python.feed(line)
                continue
            elif (assign := _ASSIGN_MAGIC.match(body)) is not None:
                placeholder = f"{assign[1]}{assign[2]} = ..."
                continues = body.endswith("\\")
            elif _is_magic(stripped):
                placeholder = f"{indent}..."
                continues = body.endswith("\\")
            else:
                python.feed(line)
                continue
            marker = f"torchport:magic-{nb.nonce}:{len(nb.magics)}"
            key = (
                f"{placeholder.strip()}  # {marker}"
                if placeholder.strip() != "#"
                else f"# {marker}"
            )
            nb.magics[key] = body
            lines[i] = f"{indent}{key}" + line[len(body) :]
        text = "".join(lines)
        nb.ends_newline[index] = text.endswith("\n")
        if text and not text.endswith("\n"):
            text += "\n"
        parts.append(f"{nb._marker(index)}\n{text}")
    return "".join(parts)


def read_notebook(text: str) -> Notebook:
    """Parse a notebook's JSON text into its virtual Python source.

    Raises:
        NotebookError: not JSON or not nbformat 4.
        NotPython: the notebook's language is not Python (callers skip it).
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(
            f"not a valid notebook: its JSON does not parse ({exc.msg} at line {exc.lineno}); "
            f"open and save it in Jupyter"
        ) from exc
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list) or data.get("nbformat") != 4:
        raise NotebookError(
            "not a notebook torchport can read: expected nbformat 4 JSON with a 'cells' "
            "list; convert it with `jupyter nbconvert --to notebook`"
        )
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    language = (metadata.get("language_info") or {}).get("name") or (
        metadata.get("kernelspec") or {}
    ).get("language")
    if isinstance(language, str) and language.lower() != "python":
        raise NotPython(language)
    stripped = text.rstrip("\n")
    layout = next(
        (
            (indent, ascii_)
            for indent, ascii_ in _LAYOUTS
            if json.dumps(data, indent=indent, ensure_ascii=ascii_) == stripped
        ),
        None,
    )
    nb = Notebook(data, "", secrets.token_hex(4), {}, {}, layout, text.endswith("\n"))
    nb.source = _virtual(nb, cells)
    return nb

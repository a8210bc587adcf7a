"""Tests a project's ``conftest.py`` skips on MPS, read from the folders above a test file.

kornia's root ``conftest.py`` (sample M) marks every collected test skipped on MPS whose
name holds a word (``if "gradcheck" in item.name.lower() and "[mps" in item.nodeid:
item.add_marker(skip)``): a gradient check, in float64, never runs on MPS there. The
skip lives in another file, so the test file alone does not show it (TP108).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from torchport.check._listing import note

__all__ = ["words_skipped_on_mps"]

_MPS = re.compile(r"(?<![A-Za-z])mps(?![a-z])", re.IGNORECASE)
_DEPTH = 12  # folders looked at above a test file, at most


def words_skipped_on_mps(path: str) -> frozenset[str]:
    """Words a ``conftest.py`` of ``path``'s folder chain skips test names holding, on MPS.

    The chain stops at the folder holding ``.git`` (the checkout's root) or after
    ``_DEPTH`` folders. A file that cannot be read or parsed adds nothing.
    """
    words: set[str] = set()
    try:
        folder = Path(path).resolve().parent
    except (OSError, ValueError):
        return frozenset()
    for _ in range(_DEPTH):
        conftest = folder / "conftest.py"
        note(conftest)  # what the check cache's answer rests on (check/_listing.py)
        note(folder / ".git")
        try:
            if conftest.is_file():
                stat = conftest.stat()
                words |= _words(str(conftest), stat.st_ctime_ns, stat.st_size)
            if (folder / ".git").exists() or folder.parent == folder:
                break
        except OSError:
            break
        folder = folder.parent
    return frozenset(words)


@functools.lru_cache(maxsize=32)
def _words(path: str, mtime_ns: int, size: int) -> frozenset[str]:
    """``if "<word>" in <a test's name> and <names MPS>: <...>.add_marker(...)``, per file."""
    del mtime_ns, size  # the cache key
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.BoolOp)):
            continue
        if not isinstance(node.test.op, ast.And) or not _marks(node.body):
            continue
        constants = [
            c.value
            for c in ast.walk(node.test)
            if isinstance(c, ast.Constant) and isinstance(c.value, str)
        ]
        if not any(_MPS.search(c) for c in constants):
            continue
        for value in node.test.values:
            if (
                isinstance(value, ast.Compare)
                and len(value.ops) == 1
                and isinstance(value.ops[0], ast.In)
                and isinstance(value.left, ast.Constant)
                and isinstance(value.left.value, str)
                and not _MPS.search(value.left.value)
                and value.left.value.strip()
                and _a_test_s_name(value.comparators[0])
            ):
                found.add(value.left.value.lower())
    return frozenset(found)


def _a_test_s_name(expr: ast.expr) -> bool:
    """``item.name``, ``item.name.lower()``, ``item.nodeid``: where pytest keeps the test's name."""
    return any(
        isinstance(n, ast.Attribute) and n.attr in ("name", "originalname", "nodeid")
        for n in ast.walk(expr)
    )


def _marks(body: list[ast.stmt]) -> bool:
    """A block that adds a marker (``item.add_marker(skip_mps)``): a skip, by the hook's use."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "add_marker"
        for stmt in body
        for n in ast.walk(stmt)
    )

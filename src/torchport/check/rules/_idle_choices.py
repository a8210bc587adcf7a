"""CUDA-or-CPU choices that decide nothing where they stand, for TP109 (benchmarks/RESULTS.md,
issue 34, branch k34: its judged rows in other code over samples A-T).

* A choice bound to a name that the very next statement of the same block binds again,
  without reading it (``dev = torch.device("cuda" if ok else "cpu")`` then ``dev =
  torch.device("cpu")``): the choice is never used, and picking the accelerator there
  changes nothing. A next statement that reads the name (``dev = dev if x else "cpu"``),
  binds it only in part (``dev.index = 0``, ``dev += ...``), or another name keeps it.
* A choice in a build script: a module importing ``setup`` from ``setuptools`` (or
  ``distutils``) and ``torch.utils.cpp_extension`` (``suffices = ["cpu", "cuda"] if
  WITH_CUDA else ["cpu"]``): there CUDA-or-CPU is which kernels to compile, and nothing
  runs on a device. One of the two imports alone is not this (a program may import
  ``torch.utils.cpp_extension`` to compile a kernel it then runs on CUDA).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.rules._test_code import next_statement

__all__ = ["decides_nothing"]


def decides_nothing(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """Whether the choice at ``node`` is overwritten unread at once, or is a build script's."""
    return _builds_extensions(ctx) or _overwritten_unread(node, ctx)


_SETUP = frozenset({"setuptools.setup", "distutils.core.setup"})
_EXTENSIONS = "torch.utils.cpp_extension"


def _builds_extensions(ctx: Context) -> bool:
    """A module importing ``setup`` (setuptools, distutils) and ``torch.utils.cpp_extension``."""
    known = ctx.memo.get("builds_extensions")  # once per file
    if isinstance(known, bool):
        return known
    targets = [target or "" for _local, target in ctx.imported]
    answer = any(t in _SETUP for t in targets) and any(
        t == _EXTENSIONS or t.startswith(f"{_EXTENSIONS}.") for t in targets
    )
    ctx.memo["builds_extensions"] = answer
    return answer


def _overwritten_unread(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """``name = <the choice>`` whose next statement in the block binds ``name`` unread."""
    if not isinstance(node, ast.IfExp):
        return False
    chain = ctx.ancestors
    i = len(chain) - 1
    while i >= 0 and isinstance(chain[i], (ast.Call, ast.IfExp)):
        i -= 1  # `torch.device(<choice>)`
    if i < 1:
        return False
    stmt = chain[i]
    name = _sole_name(stmt)
    if name is None:
        return False
    following = next_statement(stmt, ctx)
    if _sole_name(following) != name:
        return False
    assert isinstance(following, (ast.Assign, ast.AnnAssign))
    value = following.value
    return value is not None and not any(
        isinstance(sub, ast.Name) and sub.id == name for sub in ast.walk(value)
    )


def _sole_name(stmt: ast.AST | None) -> str | None:
    """The single plain name ``stmt`` binds (``x = ...``, ``x: T = ...``), else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        target = stmt.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None

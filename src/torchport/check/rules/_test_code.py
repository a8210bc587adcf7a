"""Code a test runner collects: where a CUDA-or-CPU device default is low value (TP109).

One standard, for every sample judged (benchmarks/RESULTS.md, "sample I"): a test's
device choice decides where the test runs, not where the program does; on MPS or XPU
the test still runs (on the CPU) and passes, so nothing that matters changes. Test code is

* a file in a folder named ``test`` or ``tests`` (any folder of the path as given), or a
  ``conftest.py``;
* a ``test*`` function or a ``Test*`` class in a file that imports ``pytest`` or
  ``unittest``.

A program is not a test because of its name: an experiment driver named
``attack_defense_test.py`` with ``test_*`` functions that no test framework imports is a
program (its ``__main__`` runs them), and its device choice is where its work runs.

In test code CUDA may also be what is tested (:func:`cuda_is_the_subject`): a test
that runs only where CUDA is, or a helper named for it, uses CUDA on purpose, and
another device would change what it tests (TP101 leaves it).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["collected_by_a_test_runner", "cuda_is_the_subject"]

_TEST_FOLDERS = frozenset({"test", "tests"})
_FRAMEWORKS = frozenset({"pytest", "unittest"})


def collected_by_a_test_runner(ctx: Context) -> bool:
    """Whether the node being checked is test code by the standard above."""
    parts = ctx.path.replace("\\", "/").split("/")
    if parts[-1] == "conftest.py" or any(p in _TEST_FOLDERS for p in parts[:-1]):
        return True
    if not any(
        (
            isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef))
            and outer.name.startswith("test")
        )
        or (isinstance(outer, ast.ClassDef) and outer.name.startswith("Test"))
        for outer in ctx.ancestors
    ):
        return False
    return any((target or "").partition(".")[0] in _FRAMEWORKS for _local, target in ctx.imported)


_SUBJECT_WORDS = ("cuda", "gpu")
_SKIPS = frozenset({"skip", "skipif", "skipIf", "skipUnless", "SkipTest", "importorskip"})


def cuda_is_the_subject(node: ast.AST, ctx: Context) -> bool:
    """Whether test code is about CUDA itself, where ``node`` sits.

    Test code (:func:`collected_by_a_test_runner`) inside a function or class that
    is named for CUDA or the GPU (``train_picklable_cuda_net``, ``TestCuda``), or
    whose body returns, skips or raises under a test of CUDA before the node (``if
    not torch.cuda.is_available(): return``). (A decorator that skips where CUDA is
    missing is a device guard already: the guard analysis leaves what it guards.)
    """
    if not collected_by_a_test_runner(ctx):
        return False
    line = getattr(node, "lineno", 0)
    for outer in ctx.ancestors:
        if not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if any(word in outer.name.lower() for word in _SUBJECT_WORDS):
            return True
        if isinstance(outer, ast.ClassDef):
            continue
        for stmt in outer.body:
            if getattr(stmt, "lineno", line) >= line:
                break
            if isinstance(stmt, ast.If) and _tests_cuda(stmt.test) and _leaves(stmt.body):
                return True
    return False


def _tests_cuda(expr: ast.AST) -> bool:
    """Whether ``expr`` asks about CUDA (``torch.cuda.is_available()``, ``device_count()``)."""
    return any(
        isinstance(n, ast.Attribute)
        and n.attr in ("is_available", "device_count")
        and isinstance(n.value, ast.Attribute)
        and n.value.attr == "cuda"
        for n in ast.walk(expr)
    )


def _skips(expr: ast.AST) -> bool:
    return any(
        (isinstance(n, ast.Attribute) and n.attr in _SKIPS)
        or (isinstance(n, ast.Name) and n.id in _SKIPS)
        for n in ast.walk(expr)
    )


def _leaves(body: list[ast.stmt]) -> bool:
    """A block that ends the test: ``return``, ``raise``, or a skip call."""
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.Expr) and _skips(last.value)

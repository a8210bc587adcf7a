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
"""

from __future__ import annotations

import ast


from torchport.check._context import Context

__all__ = ["collected_by_a_test_runner"]

_TEST_FOLDERS = frozenset({"test", "tests"})
_FRAMEWORKS = frozenset({"pytest", "unittest"})


def collected_by_a_test_runner(ctx: Context) -> bool:
    """Whether the node being checked is test code by the standard above."""
    parts = ctx.path.replace("\\", "/").split("/")
    if parts[-1] == "conftest.py" or any(p in _TEST_FOLDERS for p in parts[:-1]):
        return True
    if not any(
        (isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)) and outer.name.startswith("test"))
        or (isinstance(outer, ast.ClassDef) and outer.name.startswith("Test"))
        for outer in ctx.ancestors
    ):
        return False
    return any(
        (target or "").partition(".")[0] in _FRAMEWORKS for _local, target in ctx.imported
    )


"""``collected_by_a_test_runner`` answers once per file where the file decides (t34m).

The file's path and its imports decide most files (a test folder: every node; no test
framework imported: none); only a file importing one outside those needs each node's
enclosing functions and classes. The oracle below is the per-node definition as it was
written before the answer was kept per file, asked at every node of generated files.
"""

from __future__ import annotations

import ast
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.rules._test_code import collected_by_a_test_runner

_FOLDERS = ("test", "tests", "testing")


def _oracle(path: str, imported: list[str], ancestors: list[ast.AST]) -> bool:
    parts = path.replace("\\", "/").split("/")
    framework = any(t.partition(".")[0] in ("pytest", "unittest") for t in imported)
    if parts[-1] == "conftest.py" or any(p in ("test", "tests") for p in parts[:-1]):
        return True
    if re.fullmatch(r"test_\w*\.py|\w+_test\.py", parts[-1]) and framework:
        return True
    if "testing" in parts[:-1] and framework:
        return True
    marked = any(
        (
            isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)
            and (
                a.name.startswith("test")
                or any(
                    ast.unparse(d.func if isinstance(d, ast.Call) else d).split(".")[-1]
                    == "fixture"
                    for d in a.decorator_list
                )
            )
        )
        or (isinstance(a, ast.ClassDef) and a.name.startswith("Test"))
        for a in ancestors
    )
    return marked and framework


_IMPORTS = st.lists(
    st.sampled_from(["import pytest", "import unittest.mock", "import os", "import torch"]),
    max_size=2,
)
_DEFS = st.lists(
    st.sampled_from(
        ["def test_a():", "def helper():", "class TestX:", "class Box:",
         "@pytest.fixture\ndef made():", "@pytest.fixture(params=[1])\ndef made():"]
    ),
    max_size=3,
)  # fmt: skip
_PATHS = st.tuples(
    st.lists(st.sampled_from([*_FOLDERS, "src", "pkg"]), max_size=3),
    st.sampled_from(["conftest.py", "test_m.py", "m_test.py", "m.py", "testing.py"]),
).map(lambda t: "/".join(["", "r", *t[0], t[1]]))


def _nested(defs: list[str]) -> str:
    lines: list[str] = []
    for depth, header in enumerate(defs):
        for line in header.splitlines():
            lines.append("    " * depth + line)
    lines.append("    " * len(defs) + "x = 1")
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None)
@given(path=_PATHS, imports=_IMPORTS, defs=_DEFS)
def test_every_node_answers_as_the_per_node_definition(
    path: str, imports: list[str], defs: list[str]
) -> None:
    source = "\n".join(imports) + "\n" + _nested(defs)
    tree = ast.parse(source)
    ctx = Context(source, path, tree)
    imported = [target or "" for _, target in ctx.imported]
    checked = 0

    def visit(node: ast.AST) -> None:
        nonlocal checked
        want = _oracle(path, imported, list(ctx.ancestors))
        assert collected_by_a_test_runner(ctx) is want, (path, source, ast.dump(node))
        checked += 1
        ctx.ancestors.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)
        ctx.ancestors.pop()

    visit(tree)
    assert checked > 1 + len(defs)

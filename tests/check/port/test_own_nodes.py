"""A project module's function is read node by node (``_module_functions.own_nodes``).

The walk reads a node's fields itself, skipping those that hold no node or only a
context or an operator; the oracle is the walk it replaced, on ``ast.iter_child_nodes``:
on generated programs and on the corners, every function's nodes come in the same
order, less the contexts and operators (which no question about a function asks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.check.port.siblings import load
from torchport.check.port._module_functions import own_nodes as _own_nodes

pytest.importorskip("torch", reason="the port fuzzer's programs need torch (and numpy)")
port_programs = load("port_programs_for_own_nodes", Path(__file__).parent / "port_programs.py")

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_NOT_ASKED = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)

CORNERS = [
    "def f(a, *b, c=1, **d):\n    x = [i for i in a if not i]\n    y = a + b - -c\n"
    "    z = a < b <= c and d or None\n    def g():\n        return 1\n"
    "    class K:\n        w = 2\n    h = lambda q: q\n    yield from a\n    return f'{x!r}'\n",
    "async def f(a):\n    async for x in a:\n        async with a as (m, n):\n"
    "            y: int = (z := x + 1)\n    try:\n        pass\n    except E as e:\n"
    "        del y\n    match a:\n        case [1, *rest]:\n            pass\n"
    "        case {'k': v, **kw}:\n            global g\n    return await a\n",
]


def _old_own_nodes(func: ast.AST) -> Iterator[ast.AST]:
    stack = list(getattr(func, "body", []))
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, _NESTED):
                stack.append(child)


def _same_nodes(source: str) -> None:
    for func in ast.walk(ast.parse(source)):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            want = [n for n in _old_own_nodes(func) if not isinstance(n, _NOT_ASKED)]
            assert [id(n) for n in _own_nodes(func)] == [id(n) for n in want]


@pytest.mark.parametrize("source", CORNERS)
def test_a_function_s_nodes_come_as_before_on_corners(source: str) -> None:
    _same_nodes(source)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_a_function_s_nodes_come_as_before_on_generated_programs(source: str) -> None:
    _same_nodes(source)

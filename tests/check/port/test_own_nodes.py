"""A project module's function is read node by node (``_module_functions.own_nodes``).

The walk reads a node's fields itself, skipping those that hold no node or only a
context or an operator; the oracle is the walk it replaced, on ``ast.iter_child_nodes``:
on generated programs and on the corners, every function's nodes come in the same
order, less the contexts and operators (which no question about a function asks), and
again the same when asked again (they are listed once per function).

``local_values`` (a name's values in a function) is worked out once per function for
every name (each loop's or ``with``'s stores walked once, nested ones with it); the
oracle is the search per name as it was: every name of every function
(and one it lacks) gets the same values in the same order, or None alike.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.check.port.siblings import load
from torchport.check.port._module_functions import local_values
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
            # listed once per function: asked again, the same nodes in the same order
            assert [id(n) for n in _own_nodes(func)] == [id(n) for n in want]


@pytest.mark.parametrize("source", CORNERS)
def test_a_function_s_nodes_come_as_before_on_corners(source: str) -> None:
    _same_nodes(source)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_a_function_s_nodes_come_as_before_on_generated_programs(source: str) -> None:
    _same_nodes(source)


def _old_local_values(func: ast.AST, name: str) -> list[ast.expr] | None:
    values: list[ast.expr] = []
    for node in _own_nodes(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    if len(node.targets) != 1:
                        return None
                    values.append(node.value)
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                    return None
        elif isinstance(
            node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)
        ) and any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for n in ast.walk(node)
        ):
            return None
    args = getattr(func, "args", None)
    if args is not None and any(
        a.arg == name for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
    ):
        return None
    return values or None


def _same_values(source: str) -> int:
    tree = ast.parse(source)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {"absent"}
    names |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    found = 0
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for name in sorted(names):
                want = _old_local_values(func, name)
                got = local_values(func, name)
                assert (None if got is None else [id(v) for v in got]) == (
                    None if want is None else [id(v) for v in want]
                ), name
                found += want is not None
    return found


VALUE_CORNERS = [
    # one target, several, unpacked, subscripted, augmented, annotated, loop and with
    # targets, a store in a loop's nested function, a walrus, a parameter, rebinding
    "def f(p, *q, k=1, **kw):\n    a = 1\n    a = g(a)\n    b = c = 2\n    d, e = 3, 4\n"
    "    b = 0\n    x = 0\n    z = 0\n    n = 0\n    o = 0\n    r = 0\n    u = 0\n    v = 0\n"
    "    w = 0\n    h = 0\n    i = 0\n    s = 0\n"
    "    h[i] = 5\n    s.t = 6\n    u += 1\n    v: int = 7\n    w: int\n"
    "    for x in y:\n        def inner():\n            z = 8\n    with m as n:\n"
    "        o = 9\n    if (r := 10):\n        p = 11\n    lam = lambda j: (j := 1)\n"
    "    return a\n",
    # loops and withs inside loops (each one's stores walked once for all of them)
    "def f(y):\n    k = 2\n    a = 0\n    b = 0\n    c = 0\n    d = 0\n    e = 1\n    for x in y:\n"
    "        for a in x:\n            with a as b:\n                c += 1\n"
    "                for (d, q) in b:\n                    e = d\n    while y:\n"
    "        for t in y:\n            g = t\n    return a, b, c, d, e, g, k\n",
    "async def f():\n    async for x in y:\n        x2 = x\n    async with m as n:\n"
    "        n2 = n\n    class C:\n        a = 1\n    a = 2\n    return a, x2, n2\n",
]


@pytest.mark.parametrize("source", VALUE_CORNERS)
def test_a_name_s_values_are_the_search_s_on_corners(source: str) -> None:
    assert _same_values(source)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_a_name_s_values_are_the_search_s_on_generated_programs(source: str) -> None:
    _same_values(source)

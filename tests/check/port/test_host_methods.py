"""A class's plain methods that return only host values (``_instances.HostMethods``).

The methods' bodies are searched per name, when a call first names one; the oracle
is the search it replaced (every plain method of every class, up front, kept here):
every ``x.attr`` the file calls gets the same answer, on generated programs, the
port's scripts and corners (a name several classes define, one returning host values
and one not, decorated methods, generators, nested classes).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.check.port.siblings import load
from torchport.check._context import Context
from torchport.check.port import _instances
from torchport.check.port._instances import HostMethods

pytest.importorskip("torch", reason="the port fuzzer's programs need torch (and numpy)")
port_programs = load("port_programs_for_host_methods", Path(__file__).parent / "port_programs.py")
SCRIPTS = sorted((Path(__file__).parent / "scripts").glob("*.py"))

CORNERS = [
    # two classes define `step`: one returns host values, the other a forward's output
    "import torch\nclass A:\n    def step(self, x):\n        return self.v(x).numpy()\n"
    "class B:\n    def step(self, x):\n        return self.v(x)\n"
    "a = A()\nb = B()\nc = A() if f else B()\na.step(1)\nb.step(1)\nc.step(1)\n",
    # decorated (not plain), a generator, a method with no return, tuples and subscripts
    "class A:\n    @staticmethod\n    def s(x):\n        return x.item()\n"
    "    def g(self):\n        yield 1\n        return 2\n    def n(self):\n        pass\n"
    "    def t(self, x):\n        if x:\n            return x.tolist()[0], 3\n"
    "        return (x.item(),)\n"
    "    def e(self):\n        return ()\n"
    "a = A()\na.s(1)\na.g()\na.n()\na.t(2)\na.e()\nA().t(1)\nb = a\nb.t(1)\n",
    # a nested class, a nested function's return (not the method's), async methods
    "class A:\n    class B:\n        def m(self):\n            return 1\n"
    "    def m(self):\n        def inner():\n            return x\n        return 2\n"
    "    async def k(self):\n        return 1\n"
    "def f():\n    class A:\n        def m(self):\n            return x\n    return A\n"
    "a = A()\na.m()\na.k()\nb = A.B()\nb.m()\nA.B().m()\n",
]


class _OldHostMethods:
    """The search as it was: every plain method of every class, when the object is made."""

    def __init__(self, ctx: Context, classdefs: list[ast.ClassDef]) -> None:
        self.ctx = ctx
        self._owners: dict[str, set[int]] = {}
        for cls in classdefs:
            for stmt in cls.body:
                if (
                    isinstance(stmt, ast.FunctionDef)
                    and not stmt.decorator_list
                    and _instances._returns_host_values(stmt)
                ):
                    self._owners.setdefault(stmt.name, set()).add(id(cls))

    def gives_host_values(self, func: ast.Attribute) -> bool:
        owners = self._owners.get(func.attr)
        if not owners or not isinstance(func.value, ast.Name):
            return False
        classes = _instances._class_bindings(self.ctx, func.value)
        return classes is not None and all(id(c.node) in owners for c in classes)


def _same_answers(source: str) -> int:
    tree = ast.parse(source)
    classdefs = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    new = HostMethods(Context(source, "<test>", tree), classdefs)
    old = _OldHostMethods(Context(source, "<test>", tree), classdefs)
    asked = yes = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            want = old.gives_host_values(node.func)
            assert new.gives_host_values(node.func) == want, ast.unparse(node)
            asked += 1
            yes += want
    return yes


def test_corners_answer_as_before() -> None:
    found = [_same_answers(source) for source in CORNERS]
    # each corner has calls answered both ways: `a.step` and `a.t` are the ones said yes
    assert found[:2] == [1, 1]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_port_scripts_answer_as_before(script: Path) -> None:
    _same_answers(script.read_text(encoding="utf-8"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_generated_programs_answer_as_before(source: str) -> None:
    _same_answers(source)

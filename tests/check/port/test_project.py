"""A project module's factories (``_project._facts_of``), against the two full rounds.

A module's factory may call another of its factories, so the functions are asked twice;
the second round is skipped when the first found no new factory (it would ask the same
questions of the same knowledge). The oracle is the two rounds as they were, on generated
programs and on chains of factories (one found per round, in either order).
"""

from __future__ import annotations

import ast
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.check.port.siblings import load
from torchport.check._context import Context
from torchport.check.port._models import ModelKnowledge
from torchport.check.port._module_files import Lookups
from torchport.check.port._module_functions import builds, returns_all
from torchport.check.port._project import _facts_of

pytest.importorskip("torch", reason="the port fuzzer's programs need torch (and numpy)")
port_programs = load("port_programs_for_project", Path(__file__).parent / "port_programs.py")

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _old_factories(ctx: Context) -> frozenset[str]:
    classdefs = [n for n in ctx.tree.body if isinstance(n, ast.ClassDef)]
    knowledge = ModelKnowledge(classdefs, ctx.qualname)
    functions = [n for n in ctx.tree.body if isinstance(n, _FUNCTIONS)]
    for _ in range(2):
        for func in functions:
            if returns_all(func, partial(builds, knowledge, func=func)):
                knowledge.factories.add(func.name)
    return frozenset(knowledge.factories & {f.name for f in functions})


def _same_factories(source: str) -> frozenset[str]:
    tree = ast.parse(source)
    want = _old_factories(Context(source, "<factories>", tree))
    got = _facts_of(Context(source, "<factories>", tree), frozenset(), Lookups()).factories
    assert got == want
    return got


_NET = "import torch\n\nclass Net(torch.nn.Module):\n    pass\n\n"
CORNERS = [
    # found in the second round only (`b` calls `c`, defined after it); `a` needs a third
    (_NET + "def a():\n    return b()\n\ndef b():\n    return c()\n\ndef c():\n    return Net()\n",
     {"b", "c"}),
    (_NET + "def c():\n    return Net()\n\ndef b():\n    m = c()\n    return m\n", {"b", "c"}),
    (_NET + "def f():\n    return torch.ones(1)\n\ndef g(x):\n    return x\n", set()),
    ("def f():\n    return 1\n", set()),
]  # fmt: skip


@pytest.mark.parametrize(("source", "factories"), CORNERS)
def test_a_module_s_factories_are_the_two_rounds_on_corners(
    source: str, factories: set[str]
) -> None:
    assert _same_factories(source) == factories


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_a_module_s_factories_are_the_two_rounds_on_generated_programs(source: str) -> None:
    _same_factories(source)

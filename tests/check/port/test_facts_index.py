"""The port's structure walk gathers what the scope map's node index holds.

``PortFacts`` notes every name's place, the imports and the ``.to``/``.cuda`` calls
during its own walk, instead of asking the scope map for a second walk of the file.
The oracle is that index (``ast.walk`` order, every node): on generated programs and
on the corners the walk reaches only through special cases (annotations, defaults,
decorators, class bases, lambdas, nested functions and classes), both agree; and
``own_placement`` names the same call as a search of the index in walk order.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.check.port.siblings import load
from torchport.check._context import Context
from torchport.check.port._choices import flag_placement, own_placement
from torchport.check.port._facts import PortFacts

pytest.importorskip("torch", reason="the port fuzzer's programs need torch (and numpy)")
port_programs = load("port_programs_for_index", Path(__file__).parent / "port_programs.py")

CORNERS = [
    "import torch\n\ndef f(x: torch.Tensor = torch.ones(1), *a: int, k: 'T' = 2, **kw: dict)"
    " -> torch.Tensor:\n    return x.to(0)\n",
    "import torch\n\n@decorate(torch.zeros(2))\nclass A(Base, metaclass=M):\n"
    "    w: int = 3\n    def m(self, y: make_type()):\n        return y.cuda(1)\n",
    "import torch\nimport numpy as np\n\ndef outer():\n    from os import path\n"
    "    def inner(rank):\n        class B:\n            g = lambda q=torch.ones(1): q.to(rank)\n"
    "        return B\n    return inner\n\nmodel = torch.nn.Linear(2, 2).to(3)\n",
]


def _check(source: str) -> None:
    tree = ast.parse(source)
    ctx = Context(source, "<index>", tree)
    facts = PortFacts(ctx)
    if not facts.active:
        return
    want: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
    for n in ctx.scopes.nodes_of(ast.Name):
        assert isinstance(n, ast.Name)
        want[n.id].append((n.lineno, n.col_offset))
    got = {k: sorted(v) for k, v in facts.structure.name_spots.items()}
    assert got == {k: sorted(v) for k, v in want.items()}
    imports = [*ctx.scopes.nodes_of(ast.Import), *ctx.scopes.nodes_of(ast.ImportFrom)]
    assert {id(n) for n in facts.structure.imports} == {id(n) for n in imports}
    placed = own_placement(ctx.scopes.nodes_of(ast.Call))
    # no per-process placement: a model placed under a CUDA flag, if any (x31)
    assert facts.own_placement is (placed if placed is not None else flag_placement(facts, ctx))


@pytest.mark.parametrize("source", CORNERS)
def test_the_walk_sees_every_corner(source: str) -> None:
    _check(source)


def test_two_placements_name_the_first_in_walk_order() -> None:
    source = "import torch\n\ndef f():\n    a.to(0)\n\nm = torch.nn.Linear(1, 1).to(1)\n"
    _check(source)
    facts = PortFacts(Context(source, "<index>", ast.parse(source)))
    assert facts.own_placement is not None and facts.own_placement.lineno == 6


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_the_walk_agrees_with_the_index_on_generated_programs(source: str) -> None:
    _check(source)

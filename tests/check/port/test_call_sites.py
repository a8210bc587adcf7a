"""A call of a partial (``_call_sites.partial_target``), against the search it replaced.

``partial_target`` answers None at once in a file whose text has no ``partial`` (its
function is no ``functools.partial`` there); the oracle is the search as it was, kept
here: for every call of generated programs (some make partials of a model's caller) and
of corners (a partial bound to a name, one of a nested function, an aliased import, the
word only in a comment or a string), both answer the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.check.port.siblings import load
from torchport.check._context import Context
from torchport.check.port import _call_sites
from torchport.check.port._facts import PortFacts

pytest.importorskip("torch", reason="the port fuzzer's programs need torch (and numpy)")
port_programs = load("port_programs_for_call_sites", Path(__file__).parent / "port_programs.py")


def _old_partial_target(facts: PortFacts, node: ast.Call) -> tuple[ast.AST, int] | None:
    made = _call_sites._partial_of(facts, node)
    if made is not None:
        return made, -1
    func = node.func
    if not isinstance(func, ast.Name):
        return None
    found = facts.ctx.scopes.bindings(func.id, func)
    value = found[0].value if len(found) == 1 else None
    if not isinstance(value, ast.Call):
        return None
    made = _call_sites._partial_of(facts, value)
    if made is None or any(isinstance(a, ast.Starred) for a in value.args):
        return None
    return made, len(value.args) - 1


def _same_partials(source: str) -> int:
    tree = ast.parse(source)
    facts = PortFacts(Context(source, "<partials>", tree))
    found = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            want = _old_partial_target(facts, node)
            got = _call_sites.partial_target(facts, node)
            assert got == want, ast.dump(node)[:80]
            found += want is not None
    return found


CORNERS = [
    (
        "import functools\nimport torch\n\ndef step(model, x):\n    return model(x)\n\n"
        "model = torch.nn.Linear(2, 2)\nrun = functools.partial(step, model)\n"
        "run(torch.ones(2))\nfunctools.partial(step, model)(torch.ones(2))\n",
        3,  # both partials made, and the call of `run`
    ),
    (
        "from functools import partial as bind\nimport torch\n\ndef outer(m):\n"
        "    def inner(model, x):\n        return model(x)\n    go = bind(inner, m)\n"
        "    return go(torch.ones(1))\n",
        2,
    ),
    # the word only in a comment and a string: no partial call, the search still runs
    (
        "import torch\n\n# a partial batch\ndef f(x):\n    return x\n\ng = f\n"
        "print('partial', g(torch.ones(1)))\n",
        0,
    ),
    ("import torch\n\ndef f(x):\n    return x\n\nh = f\nh(torch.ones(1))\n", 0),
]


@pytest.mark.parametrize(("source", "partials"), CORNERS)
def test_a_partial_s_target_is_the_search_s_on_corners(source: str, partials: int) -> None:
    assert _same_partials(source) == partials


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_a_partial_s_target_is_the_search_s_on_generated_programs(source: str) -> None:
    _same_partials(source)

"""Call sites, against the searches they replaced.

A call of a partial (``_call_sites.partial_target``):
``partial_target`` answers None at once in a file whose text has no ``partial`` (its
function is no ``functools.partial`` there); the oracle is the search as it was, kept
here: for every call of generated programs (some make partials of a model's caller) and
of corners (a partial bound to a name, one of a nested function, an aliased import, the
word only in a comment or a string), both answer the same.

A function's call sites (``_parameters.CallerKinds._find_sites``) pass over every node
that is no name of a function and no attribute of a method's name; the oracle hands
every node of every scope to ``_site``, as before: the same sites, in the same order,
and the same functions told "not all here".
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.check.port.siblings import load
from torchport.check._context import Context
from torchport.check.port import _call_sites
from torchport.check.port._device_flow import PortScope
from torchport.check.port._facts import PortFacts
from torchport.check.port._parameters import CallerKinds
from torchport.check.port._value_kind import Kind

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


class _OldSites(CallerKinds):
    """``_find_sites`` as it was: every node of every scope handed to ``_site``."""

    def _find_sites(self) -> dict[int, list[tuple[ast.Call, PortScope]] | None]:
        facts, scopes = self.facts, self.scopes
        sites: dict[int, list[tuple[ast.Call, PortScope]] | None] = {}
        functions: dict[tuple[int, str], ast.AST] = {}
        names: set[str] = set()
        methods: dict[str, list[tuple[ast.ClassDef, ast.AST]]] = {}
        for func in self._plain_functions():
            bound = scopes.scope_of(func)
            if len(bound.bindings.get(func.name, ())) == 1 and self._plain_decorators(func):
                functions[(id(bound), func.name)] = func
                names.add(func.name)
                sites[id(func)] = []
            else:
                sites[id(func)] = None
        for cls in facts.classdefs:
            for stmt in cls.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                    if self._plain_decorators(stmt) and not stmt.name.startswith("__"):
                        methods.setdefault(stmt.name, []).append((cls, stmt))
                        sites[id(stmt)] = []
                    else:
                        sites[id(stmt)] = None
        for scope in facts.scopes:
            for node in scope.nodes:
                self._site(node, scope, functions, names, methods, sites)
        return sites


def _sites(kinds: CallerKinds) -> dict[int, list[tuple[str, int]] | None]:
    # (a call through a partial is made anew as the call of the function: by its text)
    found = kinds._find_sites()
    return {
        k: None if v is None else [(ast.dump(c, include_attributes=True), id(s)) for c, s in v]
        for k, v in found.items()
    }


def _same_sites(source: str) -> int:
    tree = ast.parse(source)
    facts = PortFacts(Context(source, "<sites>", tree))
    want = _sites(_OldSites(facts, lambda e: Kind.UNKNOWN))
    got = _sites(CallerKinds(facts, lambda e: Kind.UNKNOWN))
    assert got == want
    return sum(len(v) for v in want.values() if v)


SITE_CORNERS = [
    # called by name, passed on (not all here), through a partial, a method through
    # `self` and through an instance, a method looked up but not called, a local
    # shadowing a function, a nested function's calls
    "import functools\nimport torch\n\ndef step(model, x):\n    return model(x)\n\n"
    "def other(x):\n    return x\n\nclass Agent:\n    def act(self, x):\n"
    "        return self.learn(x)\n    def learn(self, x):\n        return x\n\n"
    "def main():\n    model = torch.nn.Linear(2, 2)\n    step(model, torch.ones(2))\n"
    "    run = functools.partial(step, model)\n    run(torch.ones(2))\n"
    "    agent = Agent()\n    agent.act(torch.ones(2))\n    f = agent.learn\n"
    "    callbacks = [other]\n    def inner(y):\n        return other(y)\n"
    "    other = 3\n    return inner(1), other\n",
]


@pytest.mark.parametrize("source", SITE_CORNERS)
def test_a_function_s_call_sites_are_the_scan_s_on_corners(source: str) -> None:
    assert _same_sites(source)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_a_function_s_call_sites_are_the_scan_s_on_generated_programs(source: str) -> None:
    _same_sites(source)

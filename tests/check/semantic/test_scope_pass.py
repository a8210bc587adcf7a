"""The scope pass records what plain walks of the tree find.

Oracle: ``ast.iter_child_nodes`` (each node's parent) and ``ast.walk`` (which
nodes open a scope, which names are read, each block statement's position),
written here apart from the pass, over the sources of torch's ``nn`` modules and
this project's semantic package, and over a module holding every construct that
opens a scope or binds without a ``Name``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from torchport.check.semantic._binding import ScopeKind
from torchport.check.semantic._scope_pass import ScopePass

_ROOT = Path(torch.__file__).parent
_FILES = sorted((_ROOT / "nn" / "modules").glob("*.py"))[::4]
_FILES += sorted(Path(__file__).parents[3].joinpath("src/torchport/check/semantic").glob("*.py"))
_NOT_RECORDED = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)

EVERY_CONSTRUCT = """
import os.path as p, sys
from torch import nn as n, cuda
@dec(arg)
class C(Base, metaclass=M):
    x: int = 1
    def m(self, a: int = 2, /, b=3, *c, d: "D" = 4, **e) -> R:
        global g
        nonlocal_free = [y for y in a if y for z in y]
        f = lambda q, r=1: q + r
        return {k: v for k, v in e.items()}, {s for s in c}, (t for t in b)
try:
    pass
except ValueError as err:
    del sys
match cmd:
    case [first, *rest]:
        pass
    case {"k": v, **others}:
        pass
    case Point(x=px) as pt:
        pass
with open(p) as fh, other() as (a, b):
    pass
for i, (j, k) in pairs:
    if (w := i):
        pass
async def co():
    async for item in source():
        await item
"""


def _sources() -> list[tuple[str, str]]:
    found = [(path.name, path.read_text(encoding="utf-8")) for path in _FILES]
    return [*found, ("every construct", EVERY_CONSTRUCT)]


@pytest.mark.parametrize(("name", "source"), _sources(), ids=lambda v: v[:20])
def test_parents_and_scopes_match_plain_walks(name: str, source: str) -> None:
    tree = ast.parse(source)
    built = ScopePass(tree)
    expected = {
        id(child): node
        for node in ast.walk(tree)
        for child in ast.iter_child_nodes(node)
        if not isinstance(child, _NOT_RECORDED)
    }
    assert {k: id(v) for k, v in built.parent.items()} == {k: id(v) for k, v in expected.items()}
    openers = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
               ast.SetComp, ast.DictComp, ast.GeneratorExp)  # fmt: skip
    scoped = {id(tree), *(id(node) for node in ast.walk(tree) if isinstance(node, openers))}
    assert set(built.scopes) == scoped
    assert built.scopes[id(tree)] is built.module and built.module.kind is ScopeKind.MODULE
    for scope in built.scopes.values():  # each scope's parent is the scope around its node
        if scope is not built.module:
            assert scope.parent is not None and id(scope.parent.node) in scoped
    loads = {
        id(n) for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    assert set(built.read_in) == loads
    blocks = {  # every statement of a body, else or finally block: its block, index, field
        id(stmt): (id(block), i, field)
        for node in ast.walk(tree)
        for field in ("body", "orelse", "finalbody")
        if isinstance(block := getattr(node, field, None), list)
        for i, stmt in enumerate(block)
    }
    assert {k: (id(b), i, f) for k, (b, i, f) in built.positions.items()} == blocks


def test_every_construct_binds_its_names() -> None:
    built = ScopePass(ast.parse(EVERY_CONSTRUCT))
    module = built.module.bindings
    for name in ("p", "sys", "n", "cuda", "C", "err", "first", "rest", "v", "others", "px", "pt",
                 "fh", "a", "b", "i", "j", "k", "w", "co"):  # fmt: skip
        assert name in module, name
    method = next(s for s in built.scopes.values() if getattr(s.node, "name", "") == "m")
    assert {"self", "a", "b", "c", "d", "e", "nonlocal_free", "f"} <= set(method.bindings)
    assert method.declared_global == {"g"}
    lambda_scope = next(s for s in built.scopes.values() if s.kind is ScopeKind.LAMBDA)
    assert set(lambda_scope.bindings) == {"q", "r"} and lambda_scope.parent is method

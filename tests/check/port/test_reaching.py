"""Where a statement sits, as the may-reach walk asks it, against a walk of its own.

``Reaching._block(holder, child)`` answers from the scope pass's statement positions
(and ``holder``'s handlers for an ``except``); the oracle is the index it replaced, kept
here as it was: one ``ast.walk`` of the tree recording each item of every ``body``,
``orelse``, ``finalbody`` and ``handlers`` list. Asked of every node with its parent and
with a holder that is not its parent, on corners (``try``/``except*``/``else``/``finally``,
``match``, loops with ``else``, nested functions and classes) and generated programs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.check.port.siblings import load
from torchport.check.port._reaching import Reaching
from torchport.check.semantic import ScopeMap

pytest.importorskip("torch", reason="the port fuzzer's programs need torch (and numpy)")
port_programs = load("port_programs_for_reaching", Path(__file__).parent / "port_programs.py")

_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def _old_index(tree: ast.Module) -> dict[int, tuple[list[ast.stmt], int]]:
    where: dict[int, tuple[list[ast.stmt], int]] = {}
    for node in ast.walk(tree):
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if isinstance(block, list):
                for i, s in enumerate(block):
                    where[id(s)] = (block, i)
    return where


def _old_block(
    where: dict[int, tuple[list[ast.stmt], int]], holder: ast.AST, child: ast.AST
) -> tuple[list[ast.stmt], int] | None:
    found = where.get(id(child))
    if found is None:
        return None
    block, i = found
    return (block, i) if any(getattr(holder, f, None) is block for f in _BLOCKS) else None


def _same_blocks(source: str) -> None:
    tree = ast.parse(source)
    reaching = Reaching(ScopeMap(tree))
    pairs = [(p, c) for p in ast.walk(tree) for c in ast.iter_child_nodes(p)]
    # and holders that are not the parent: the module, and each node's grandparent
    pairs += [(tree, c) for _, c in pairs]
    pairs += [(g, c) for g, p in pairs for c in ast.iter_child_nodes(p)]
    where = _old_index(tree)
    asked = 0
    for holder, child in pairs:
        want = _old_block(where, holder, child)
        got = reaching._block(holder, child)
        assert (None if got is None else (id(got[0]), got[1])) == (
            None if want is None else (id(want[0]), want[1])
        ), (ast.dump(holder)[:60], ast.dump(child)[:60])
        asked += want is not None
    assert asked or not any(isinstance(n, ast.stmt) for n in ast.walk(tree))


CORNERS = [
    "import torch\n\ntry:\n    x = 1\nexcept ValueError as e:\n    x = 2\n    y = 3\n"
    "except Exception:\n    pass\nelse:\n    x = 4\nfinally:\n    z = 5\n",
    "for i in range(3):\n    x = i\n    if x:\n        break\nelse:\n    x = 0\n"
    "while x:\n    x -= 1\nelse:\n    y = 1\n",
    "def f(a):\n    class C:\n        b = 1\n        def m(self):\n            return b\n"
    "    async def g():\n        async with a as b:\n            c = b\n"
    "        async for d in a:\n            c = d\n    return lambda: [c for c in a]\n",
    "match x:\n    case [1, *rest]:\n        y = rest\n    case {'k': v, **kw}:\n"
    "        y = v\n    case _:\n        y = None\n",
    "with open(p) as f, open(q) as g:\n    if f:\n        x = 1\n    elif g:\n        x = 2\n"
    "    else:\n        x = 3\n",
    "try:\n    x = 1\nexcept* ValueError:\n    x = 2\nexcept* TypeError as e:\n"
    "    x = e\nelse:\n    x = 3\nfinally:\n    x = 4\n",
]


@pytest.mark.parametrize("source", CORNERS)
def test_a_statement_s_block_is_the_walk_s_on_corners(source: str) -> None:
    _same_blocks(source)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_a_statement_s_block_is_the_walk_s_on_generated_programs(source: str) -> None:
    _same_blocks(source)

"""The per-file node index answers as the walks it replaced did.

``ScopeMap.nodes_of``, ``loads_of`` and ``reads_of`` stand in for a walk of the
module or a scope per match, and the scope pass records each statement's block
and index (once a second whole-tree walk). Oracle: the plain walks, written
here, over the sources of torch's own ``nn`` and ``optim`` packages and this
project's check package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from torchport.check.semantic._scope import ScopeMap

_ROOT = Path(torch.__file__).parent
_FILES = sorted([*(_ROOT / "nn" / "modules").glob("*.py"), *(_ROOT / "optim").glob("*.py")])[::3]
_FILES += sorted(Path(__file__).parents[3].joinpath("src/torchport/check/semantic").glob("*.py"))


@pytest.mark.parametrize("path", _FILES, ids=lambda p: p.name)
def test_the_index_matches_plain_walks(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scopes = ScopeMap(tree)
    walked = list(ast.walk(tree))
    for kind in (ast.Call, ast.ClassDef, ast.Name, ast.Attribute):
        assert scopes.nodes_of(kind) == [n for n in walked if type(n) is kind]
    loads = [n for n in walked if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    for name in sorted({n.id for n in loads})[:40]:
        mine = [n for n in loads if n.id == name]
        assert scopes.loads_of(name) == mine
        for scope in {id(scopes.resolve(name, n)): scopes.resolve(name, n) for n in mine}.values():
            assert scopes.reads_of(name, scope) == [
                n for n in mine if scopes.resolve(name, n) is scope
            ]
    positions = {}
    for node in walked:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                for i, stmt in enumerate(block):
                    if isinstance(stmt, ast.stmt):
                        positions[id(stmt)] = (id(block), i, field)
    recorded = {k: (id(v[0]), v[1], v[2]) for k, v in scopes.flow._positions.items()}
    assert recorded == positions

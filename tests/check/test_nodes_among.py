"""``check._nodes.nodes_among`` finds what ``ast.walk`` finds, in its order.

Oracle: ``ast.walk`` filtered by exact class, over the sources of torch's ``nn``
modules, this project's semantic package and a module holding every construct
(the scope pass's test module), for class sets hypothesis draws.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import torch
from hypothesis import given
from hypothesis import strategies as st

from torchport.check._nodes import nodes_among

_ROOT = Path(torch.__file__).parent
_FILES = sorted((_ROOT / "nn" / "modules").glob("*.py"))[1::6]
_FILES += sorted(Path(__file__).parents[2].joinpath("src/torchport/check/semantic").glob("*.py"))
_NOT_WALKED = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
# every node class but contexts and operators (the walk does not look into them)
_CLASSES = sorted(
    (
        c
        for c in vars(ast).values()
        if isinstance(c, type) and issubclass(c, ast.AST) and not issubclass(c, _NOT_WALKED)
    ),
    key=lambda c: c.__name__,
)


def _every_construct() -> str:
    """The scope pass test's module of every construct (read from that file's text)."""
    path = Path(__file__).parent.joinpath("semantic", "test_scope_pass.py")
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "EVERY_CONSTRUCT":
            assert isinstance(node.value, ast.Constant)
            return str(node.value.value)
    raise AssertionError("test_scope_pass.py holds no EVERY_CONSTRUCT")


@functools.cache
def _trees() -> list[ast.Module]:
    sources = [path.read_text(encoding="utf-8") for path in _FILES] + [_every_construct()]
    return [ast.parse(source) for source in sources]


@given(st.sets(st.sampled_from(_CLASSES), min_size=1, max_size=6), st.integers(0, 1000))
def test_nodes_among_is_ast_walk_filtered(classes: set[type[ast.AST]], pick: int) -> None:
    trees = _trees()
    tree = trees[pick % len(trees)]
    keep = frozenset(classes)
    expected = [node for node in ast.walk(tree) if node.__class__ in keep]
    assert [id(n) for n in nodes_among(tree, keep)] == [id(n) for n in expected]


def test_the_cuda_questions_classes_in_every_file() -> None:
    """The two class sets asked (checks_cuda_values, cuda_mentions), on every tree."""
    for keep in (
        frozenset({ast.Assert, ast.Compare, ast.Call}),
        frozenset({ast.Constant, ast.Call, ast.Attribute, ast.Name}),
    ):
        for tree in _trees():
            expected = [node for node in ast.walk(tree) if node.__class__ in keep]
            assert [id(n) for n in nodes_among(tree, keep)] == [id(n) for n in expected]

"""A model class's name rebound to its own instance (``ModelKnowledge.rebound``), found
by a walk of the statements only (``_models.assignments``).

``GRUmodel = GRUmodel(...)`` is an assignment, and an assignment is a statement: it is
found in the blocks of statements (a body, an ``else``, a ``finally``, an ``except``
handler, a ``match`` case), never inside an expression. The oracle is the search it
replaced, kept here as it was (``ast.walk`` of the whole tree): on generated programs
nesting the assignment in every kind of block at random depth (and next to expressions
with a ``body`` of their own: a conditional expression, a lambda), both find the same
assignments, and ``ModelKnowledge`` the same rebound names and rebinding calls; on the
port's own scripts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.port._models import ModelKnowledge, assignments, own_build

SCRIPTS = Path(__file__).parent / "scripts"

# Block openers, each with its body indented below it (`{}`: the body), some with a
# second block (`else`, `finally`, `case`) that holds a body of its own.
_OPENERS = (
    "if flag:\n{}",
    "if flag:\n    pass\nelse:\n{}",
    "for i in range(2):\n{}",
    "for i in range(2):\n    pass\nelse:\n{}",
    "while flag:\n{}",
    "with ctx() as c:\n{}",
    "try:\n{}\nexcept ValueError:\n    pass",
    "try:\n    pass\nexcept ValueError:\n{}",
    "try:\n    pass\nexcept* ValueError:\n{}",
    "try:\n    pass\nexcept ValueError:\n    pass\nelse:\n{}",
    "try:\n    pass\nfinally:\n{}",
    "match flag:\n    case 1:\n{}",
    "match flag:\n    case 1:\n        pass\n    case _:\n{}",
    "def f(x=lambda: 1 if flag else 2):\n{}",
    "async def g():\n{}",
    "class Inner(Net):\n{}",
)
# Statements at a leaf: rebindings, other assignments, expressions with bodies.
_LEAVES = (
    "Net = Net(3)",
    "Net = Net(3).to(device)",
    "Other = Net(3)",
    "a = b = Net(1)",
    "x = (lambda: 1) if flag else (lambda: 2)",
    "y: int = 3",
    "z += 1",
    "Net(2)",
    "w = [v for v in range(3) if v]",
)


def _indent(text: str, depth: int) -> str:
    return "\n".join(" " * depth + line for line in text.splitlines())


@st.composite
def _block(draw: st.DrawFn, depth: int = 0) -> str:
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        if depth < 4 and draw(st.booleans()):
            opener = draw(st.sampled_from(_OPENERS))
            inner = draw(_block(depth + 1))
            body_depth = 8 if opener.startswith("match") else 4
            parts.append(opener.format(_indent(inner, body_depth)))
        else:
            parts.append(draw(st.sampled_from(_LEAVES)))
    return "\n".join(parts)


def _old_rebinding(known: ModelKnowledge, tree: ast.AST) -> tuple[set[str], set[int]]:
    """The search as it was: every node of the tree (the oracle)."""
    rebound: set[str] = set()
    rebinding: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(name := node.targets[0], ast.Name)
            and (build := own_build(node.value, name.id)) is not None
            and (name.id in known.classes or known._project_kind(build.func) == "class")
        ):
            rebound.add(name.id)
            rebinding.add(id(build))
    return rebound, rebinding


def _agree(source: str) -> None:
    tree = ast.parse(source)
    found = [id(n) for n in assignments(tree)]
    assert len(found) == len(set(found))  # each once
    assert set(found) == {id(n) for n in ast.walk(tree) if isinstance(n, ast.Assign)}
    ctx = Context(source, "<string>", tree)
    classdefs = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    known = ModelKnowledge(classdefs, ctx.qualname, lambda e: None, tree)
    assert (known.rebound, known.rebinding) == _old_rebinding(known, tree)


@settings(max_examples=150, deadline=None)
@given(_block())
def test_the_statement_walk_finds_what_the_whole_walk_finds(body: str) -> None:
    source = f"import torch.nn as nn\nclass Net(nn.Module):\n    pass\n{body}\n"
    _agree(source)


def test_every_kind_of_block_is_searched() -> None:
    """One rebinding alone in each kind of block: each is found (and only it)."""
    for opener in _OPENERS:
        body = _indent("Net = Net(3)", 8 if opener.startswith("match") else 4)
        source = f"import torch.nn as nn\nclass Net(nn.Module):\n    pass\n{opener.format(body)}\n"
        tree = ast.parse(source)
        ctx = Context(source, "<string>", tree)
        classdefs = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        known = ModelKnowledge(classdefs, ctx.qualname, lambda e: None, tree)
        assert known.rebound == {"Net"}, opener
        assert len(known.rebinding) == 1, opener
        _agree(source)


def test_a_project_class_rebound_is_found_through_the_project() -> None:
    source = "from model import GRUmodel\nif flag:\n    GRUmodel = GRUmodel(3)\nout = GRUmodel(x)\n"
    tree = ast.parse(source)
    ctx = Context(source, "<string>", tree)

    def project(expr: ast.expr) -> tuple[str, str] | None:
        is_it = isinstance(expr, ast.Name) and expr.id == "GRUmodel"
        return ("class", "GRUmodel") if is_it else None

    known = ModelKnowledge([], ctx.qualname, project, tree)
    assert known.rebound == {"GRUmodel"}
    assert (known.rebound, known.rebinding) == _old_rebinding(known, tree)


def test_the_port_scripts_agree() -> None:
    scripts = sorted(SCRIPTS.glob("*.py"))
    assert scripts
    for script in scripts:
        _agree(script.read_text(encoding="utf-8"))

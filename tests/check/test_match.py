"""The shared matchers: tensor/module guesses, keyword edits, statement guards."""

from __future__ import annotations

import ast

import pytest

from torchport.check._context import Context
from torchport.check._match import (
    add_keyword,
    guard_statement,
    probably_module,
    probably_tensor,
)


def at_last_call(source: str) -> tuple[ast.Call, Context]:
    """Walk like the engine up to the last call of ``go(...)``; return it and the context there."""
    tree = ast.parse(source)
    ctx = Context(source, "<t>", tree)
    found: list[tuple[ast.Call, list[ast.AST]]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "go":
            found.append((node, list(ctx.ancestors)))
            return
        ctx.enter(node)
        for child in ast.iter_child_nodes(node):
            visit(child)
            if found:
                return
        ctx.leave(node)

    visit(tree)
    call, ancestors = found[0]
    ctx.ancestors = ancestors
    return call, ctx


@pytest.mark.parametrize(
    ("source", "tensor", "module"),
    [
        ("import torch\nx = torch.zeros(3)\ngo(x)\n", True, False),
        ("import torch\na = torch.zeros(3).float() * 2\ngo(a)\n", True, False),
        ("net = Net()\ngo(net)\n", False, True),
        ("import torch.nn as nn\nm = nn.Linear(2, 2)\ngo(m)\n", False, True),
        ("go(model)\n", False, True),
        ("go(labels)\n", True, False),
        ("go(weight_post_process)\n", False, False),
        ("go(inputs)\n", False, False),  # may be a BatchEncoding whose .to() works in place
        ("def f(batch):\n    images = batch[0]\n    go(images)\n", True, False),
    ],
)
def test_tensor_and_module_guesses(source: str, tensor: bool, module: bool) -> None:
    call, ctx = at_last_call(source)
    arg = call.args[0]
    assert probably_tensor(arg, ctx) is tensor
    assert probably_module(arg, ctx) is module


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("go()\n", "go(k=1)\n"),
        ("go(a)\n", "go(a, k=1)\n"),
        ("go(a,)\n", "go(a, k=1,)\n"),
        ("go(\n    a,\n    b=2,\n)\n", "go(\n    a,\n    b=2, k=1,\n)\n"),
        ("go(*xs, **kw)\n", "go(*xs, **kw, k=1)\n"),
    ],
)
def test_add_keyword(source: str, expected: str) -> None:
    call, ctx = at_last_call(source)
    edit = add_keyword(call, "k=1", ctx)
    out = source[: edit.start] + edit.text + source[edit.end :]
    assert out == expected
    ast.parse(out)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("go()\n", "if torch.accelerator.is_available():\n    sync()\n"),
        (
            "def f():\n    go()  # why\n",
            "def f():\n    if torch.accelerator.is_available():\n        sync()  # why\n",
        ),
        ("x = go()\n", None),
        ("a = 1; go()\n", None),
        ("if a: go()\n", None),
    ],
)
def test_guard_statement(source: str, expected: str | None) -> None:
    call, ctx = at_last_call(source)
    edit = guard_statement(call, "sync()", ctx)
    if expected is None:
        assert edit is None
    else:
        assert edit is not None
        assert source[: edit.start] + edit.text + source[edit.end :] == expected

"""Where values live (check/_residence.py), asked the way rules ask: mid-walk."""

from __future__ import annotations

import ast

import pytest

from torchport.check._context import Context
from torchport.check._residence import known_device_object, known_on_cpu, known_on_device


def _at(source: str, marker: str) -> tuple[ast.expr, Context]:
    """The expression ``marker(...)``'s argument, with a Context whose ancestors lead to it."""
    tree = ast.parse(source)
    ctx = Context(source, "<test>", tree)
    found: list[tuple[ast.expr, list[ast.AST]]] = []

    def visit(node: ast.AST, chain: list[ast.AST]) -> None:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == marker
            and node.args
        ):
            found.append((node.args[0], [*chain, node]))
        for child in ast.iter_child_nodes(node):
            visit(child, [*chain, node])

    visit(tree, [])
    assert len(found) == 1, f"{marker} appears {len(found)} times"
    expr, chain = found[0]
    ctx.ancestors = chain
    return expr, ctx


@pytest.mark.parametrize(
    ("source", "cpu", "device"),
    [
        ("out = model(x)\nout = out.cpu()\nHERE(out)\n", True, False),
        ("import torch\n\nHERE(torch.linspace(0, 1, 5)[2])\n", True, False),
        ("import torch\n\nt = torch.zeros(3)\nHERE(t.sum())\n", True, False),
        ('import torch\n\nt = torch.zeros(3, device="cuda")\nHERE(t)\n', False, True),
        ("import numpy as np\n\nHERE(np.array([1, 2]).sum())\n", True, False),
        ("HERE(x.to(device).float())\n", False, True),
        ("HERE(x.to(torch.float16))\n", False, False),
        ("net = Net().cuda()\nHERE(net(x))\n", False, True),
        ("HERE(model(x.to(device)).softmax(-1))\n", False, True),
        ("import torch\n\nvals = [HERE(v) for v in torch.arange(4)]\n", True, False),
        ("HERE(batch)\n", False, False),
        # Rebound in one branch only: either value may reach, so nothing is known.
        ("out = model(x).cpu()\nif ok:\n    out = out.cuda()\nHERE(out)\n", False, False),
    ],
)
def test_placement(source: str, cpu: bool, device: bool) -> None:
    expr, ctx = _at(source, "HERE")
    assert known_on_cpu(expr, ctx) is cpu
    assert known_on_device(expr, ctx) is device


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("HERE(x.device)\n", True),
        ("HERE(next(model.parameters()).device)\n", True),
        ('import torch\n\nd = torch.device("cuda")\nHERE(d)\n', True),
        ("HERE(self.device)\n", False),
        ("HERE(args.device)\n", False),
        ('d = "cuda"\nHERE(d)\n', False),
    ],
)
def test_known_device_object(source: str, expected: bool) -> None:
    expr, ctx = _at(source, "HERE")
    assert known_device_object(expr, ctx) is expected

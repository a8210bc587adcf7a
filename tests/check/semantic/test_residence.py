"""Where values live (check/semantic/_residence.py), asked the way rules ask: mid-walk."""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest

from torchport.check._context import Context
from torchport.check.semantic._residence import known_device_object, known_on_cpu, known_on_device

# The `expr_at` fixture (tests/check/semantic/conftest.py): `HERE(expr)` and the walk state there.
ExprAt = Callable[[str, str], tuple[ast.expr, Context]]


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
def test_placement(source: str, cpu: bool, device: bool, expr_at: ExprAt) -> None:
    expr, ctx = expr_at(source, "HERE")
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
def test_known_device_object(source: str, expected: bool, expr_at: ExprAt) -> None:
    expr, ctx = expr_at(source, "HERE")
    assert known_device_object(expr, ctx) is expected

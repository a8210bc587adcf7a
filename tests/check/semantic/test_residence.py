"""Where values live (check/semantic/_residence.py), asked the way rules ask: mid-walk."""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.semantic._residence import (
    bound_value,
    known_device_object,
    known_on_cpu,
    known_on_device,
)

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


# Every way a name can be bound, the loop targets written every way the text may show them.
_BINDINGS = [
    "{n} = make()",
    "{n}: int = make()",
    "{n}: int",
    "{n} += 1",
    "{n}, other = pair",
    "[{n}] = pair",
    "for {n} in rows:\n    pass",
    "for ({n}) in rows:\n    pass",
    "for (\n    # the row\n    {n}\n) in rows:\n    pass",
    "for \\\n    {n} in rows:\n    pass",
    "for {n}, other in rows:\n    pass",
    "async def a():\n    async for {n} in rows:\n        pass",
    "values = [{n} for {n} in rows]",
    "values = {{k: {n} for k, {n} in rows}}",
    "if ({n} := make()):\n    pass",
    "with ctx() as {n}:\n    pass",
    "try:\n    pass\nexcept Exception as {n}:\n    pass",
    "def f({n}):\n    return {n}",
    "def {n}():\n    pass",
    "class {n}:\n    pass",
    "import torch as {n}",
    "from torch import cuda as {n}",
    "def g():\n    global {n}\n    {n} = 1",
    "del {n}",
    "label = 'for {n} in rows'  # for {n} in rows",
    "class C:\n    {n} = make()",
]


@given(
    name=st.sampled_from(["x", "device", "rows_x"]),
    bound=st.lists(st.sampled_from(_BINDINGS), max_size=3),
    other=st.sampled_from(["", "xs = 1", "for y in rows:\n    pass"]),
)
def test_bound_value_without_a_scope_pass_is_the_scope_passes_answer(
    name: str, bound: list[str], other: str
) -> None:
    """Where no binding of a name can give it a value or an iterable (``may_hold_a_value``
    False), ``bound_value`` answers None without a scope pass: the answer a context made to
    ask the scope pass always gives, at every read of every name."""
    body = [b.format(n=name) for b in bound]
    reads = [f"use({name})", f"def h():\n    return {name}", f"rows_x = [{name} for _ in x]"]
    source = "\n".join([*body, other, *reads]) + "\n"
    tree = ast.parse(source)
    fast = Context(source, "x.py", tree)
    slow = Context(source, "x.py", tree)
    slow.may_hold_a_value = lambda name: True  # type: ignore[method-assign]
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            assert bound_value(node, fast) is bound_value(node, slow), (source, node.id)


def test_names_no_binding_gives_a_value_need_no_scope_pass(expr_at: ExprAt) -> None:
    # the test above holds something: its fast answer comes without a scope map
    expr, ctx = expr_at("import torch\n\ndef f(x):\n    return HERE(torch)\n", "HERE")
    assert isinstance(expr, ast.Name) and bound_value(expr, ctx) is None
    assert ctx.built_scopes is None
    expr, ctx = expr_at("for (\n    # c\n    dev) in devices:\n    HERE(dev)\n", "HERE")
    assert isinstance(expr, ast.Name) and isinstance(bound_value(expr, ctx), ast.Name)

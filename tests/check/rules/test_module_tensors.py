"""Which tensors a module keeps apart from ``model.to(device)``, checked against torch itself.

``zero_dim`` decides which made tensors are left alone because they mix with
tensors on any device: the oracle is torch, which makes each drawn call and
tells its ``dim()``. ``held_apart`` follows the made tensor through arithmetic
and its own methods to the attribute that keeps it.
"""

from __future__ import annotations

import ast

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check.rules._module_tensors import held_apart, zero_dim

MAKERS = ("torch.tensor", "torch.as_tensor", "torch.ones", "torch.zeros", "torch.randn")
ARGS = ("2.0", "-1", "3", "1", "[2.0]", "(2, 3)", "()", "True", "2, 3", "0.5")


@settings(max_examples=60, deadline=None)
@given(maker=st.sampled_from(MAKERS), arg=st.sampled_from(ARGS))
def test_zero_dim_matches_what_torch_makes(maker: str, arg: str) -> None:
    text = f"{maker}({arg})"
    try:
        made = eval(text, {"torch": torch})
    except (TypeError, RuntimeError):
        return  # not a call torch takes: nothing to compare
    call = ast.parse(text, mode="eval").body
    assert isinstance(call, ast.Call)
    assert zero_dim(call, maker) == (made.dim() == 0), text


@settings(max_examples=30, deadline=None)
@given(
    maker=st.sampled_from(["torch.ones(2)", "torch.zeros(1)", "torch.arange(3)"]),
    wrap=st.sampled_from(["{}", "{} * 2", "-{}", "{}.float()", "({} + 1).view(1, -1)"]),
    wrapped_in_call=st.booleans(),
)
def test_held_apart_follows_the_tensor_to_its_attribute(
    maker: str, wrap: str, wrapped_in_call: bool
) -> None:
    value = wrap.format(maker)
    if wrapped_in_call:
        value = f"torch.nn.Parameter({value})"  # a parameter: moved with the model
    source = (
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        f"        self.kept = {value}\n"
        "    def forward(self, x):\n"
        "        return x * self.kept\n"
    )
    tree = ast.parse(source)
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    init = cls.body[0]
    assert isinstance(init, ast.FunctionDef)
    call = next(
        n
        for n in ast.walk(init)
        if isinstance(n, ast.Call)
        and ast.unparse(n.func) in ("torch.ones", "torch.zeros", "torch.arange")
    )
    name = ast.unparse(call.func)
    assert held_apart(call, name, init, parents) == (None if wrapped_in_call else "kept")

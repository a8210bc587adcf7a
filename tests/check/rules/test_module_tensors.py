"""Which tensors a module keeps apart from ``model.to(device)``, checked against torch itself.

``zero_dim`` decides which made tensors are left alone because they mix with
tensors on any device: the oracle is torch, which makes each drawn call and
tells its ``dim()``. ``held_apart`` follows the made tensor through arithmetic
and its own methods to the attribute that keeps it.
"""

from __future__ import annotations

import ast

import torch
from hypothesis import example, given, settings
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

    # the file imports torch by its name: a dotted name is its own qualified name
    def qualname(expr: ast.expr) -> str | None:
        return ast.unparse(expr) if isinstance(expr, ast.Name | ast.Attribute) else None

    expected = None if wrapped_in_call else "kept"
    assert held_apart(call, name, init, parents, qualname) == expected


# ``builds_the_module`` is answered once per method (kept in the walk's Context); the
# oracle is the answer as it was computed at every ask, kept here: every method of every
# class (nested ones too) of generated modules, asked twice in either order, answers alike.

_BODIES = (
    "        self.{callee}()\n",
    "        x = self.{callee}\n",
    "        return nn.Linear(2, 2)\n",
    "        pass\n",
    "        def inner():\n            self.{callee}()\n        inner()\n",
    # the name as a word that is no attribute (the text's count is then no proof)
    "        s = '{callee}'  # self.{callee}()\n",
    "        {callee} = 1\n",
    "        s = '\u00e9'\n",  # not ASCII: the text is not read
)


_OTHER_CLASS = "class N:\n    def build(self):\n        self.helper()\n"


def _old_builds_the_module(method: ast.FunctionDef, cls: ast.ClassDef, tree: ast.AST) -> bool:
    from torchport.check.rules._init_calls import init_chain  # (the search, not kept)

    if method.name == "__init__":
        return True
    chain, inside, _ = init_chain(cls)
    return method.name in chain and not any(
        isinstance(n, ast.Attribute) and n.attr == method.name and id(n) not in inside
        for n in ast.walk(tree)
    )


@settings(max_examples=80, deadline=None)
@given(
    calls=st.lists(
        st.tuples(
            st.sampled_from(["__init__", "build", "reset", "forward", "helper"]),
            st.sampled_from(range(len(_BODIES))),
            st.sampled_from(["build", "reset", "helper", "forward", "other"]),
        ),
        min_size=1,
        max_size=7,
    ),
    outside=st.sampled_from(["", "m = M()\nm.reset()\n", _OTHER_CLASS]),
    reverse=st.booleans(),
)
# `M.build` is built by `__init__`, `N.build` (same name, another class) is not
@example(calls=[("__init__", 0, "build"), ("build", 3, "")], outside=_OTHER_CLASS, reverse=False)
@example(calls=[("__init__", 0, "build"), ("build", 3, "")], outside=_OTHER_CLASS, reverse=True)
def test_builds_the_module_answers_as_when_asked_each_time(
    calls: list[tuple[str, int, str]], outside: str, reverse: bool
) -> None:
    from torchport.check._context import Context
    from torchport.check.rules._module_tensors import builds_the_module

    methods = "".join(
        f"    def {name}(self):\n" + _BODIES[body].format(callee=callee)
        for name, body, callee in calls
    )
    source = f"class M(nn.Module):\n{methods}{outside}"
    tree = ast.parse(source)
    ctx = Context(source, "<test>", tree)
    asked = [
        (method, cls)
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef)
        for method in cls.body
        if isinstance(method, ast.FunctionDef)
    ]
    for method, cls in (asked[::-1] if reverse else asked) * 2:
        want = _old_builds_the_module(method, cls, tree)
        assert builds_the_module(method, cls, ctx) == want, (source, method.name)

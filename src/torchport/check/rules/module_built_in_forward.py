"""TP510 module-built-in-forward: a module method builds a module that holds weights."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._module_tensors import (
    PARAMETERS_DEVICE,
    builds_the_module,
    device_of_the_inputs,
    method_of_a_module,
)
from torchport.check.rules._port import is_move, port_facts

_CLASS = "import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n"


class ModuleBuiltInForward(Rule):
    """## What it does
    Finds a module with weights (`nn.Linear(...)`, `nn.LayerNorm(4)`) built
    inside a method of an `nn.Module` other than `__init__`, most often
    `forward`.

    ## Why is this bad?
    `model.to(device)` moves the submodules `__init__` registered; a module
    built on each call is made on the CPU, and the forward fails once its
    input is on an accelerator. The fix moves it to the input's device where
    it is built (`nn.LayerNorm(4).to(x.device)`): its weights are drawn on
    the CPU as before, so results on the CPU are unchanged. (Building it once
    in `__init__` is usually what was meant: its weights are then trained and
    saved; that is a change of behaviour the port leaves to the author.)
    """

    code = "TP510"
    name = "module-built-in-forward"
    intent = Intent.PORT
    default = False
    message = "move the module to the input's device where it is built: `.to(x.device)`"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    valid = (
        _CLASS + "    def __init__(self):\n        super().__init__()\n"
        "        self.norm = nn.LayerNorm(4)\n",
        _CLASS + "    def forward(self, x):\n        return nn.ReLU()(x)\n",
        _CLASS + "    def forward(self, x):\n        return nn.LayerNorm(4).to(x.device)(x)\n",
        _CLASS + "    def __init__(self):\n        super().__init__()\n        self.build()\n"
        "    def build(self):\n        self.fc = nn.Linear(4, 2)\n",
    )
    invalid = (
        Example(
            _CLASS + "    def forward(self, x):\n        norm = nn.LayerNorm(x.size(-1))\n"
            "        return norm(x)\n",
            fixed=_CLASS + "    def forward(self, x):\n"
            "        norm = nn.LayerNorm(x.size(-1)).to(x.device)\n        return norm(x)\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        facts = port_facts(ctx)
        scope = facts.scope_of.get(id(node))
        method = method_of_a_module(scope)
        if scope is None or method is None:
            return
        if not facts.known.constructor(node) or builds_the_module(method, scope.cls, ctx):
            return  # `__init__` or a method only it calls: registered, moved with the model
        if facts.known.stateless(node):
            return  # `nn.ReLU()`: no tensors to be anywhere
        parent = facts.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and is_move(facts.parents.get(id(parent), parent)):
            return
        if isinstance(parent, ast.Attribute) and parent.attr == "to":
            return  # `.to(x.device)`, `.to(dtype)`: placed or cast by the code
        device = device_of_the_inputs(method, scope.nodes, facts, scope.cls)
        if device is None or (device == PARAMETERS_DEVICE and _registered(parent)):
            # a method `__init__` calls, or `self.encoder = AutoModel.from_pretrained(...)`:
            # maybe the module's first parameters, so `next(self.parameters())` would raise
            yield ctx.finding(self, node)
            return
        edits = ctx.append_call(node, f".to({device})")
        yield ctx.finding(self, node, fix=Fix(edits, FixSafety.SAFE))


def _registered(parent: ast.AST | None) -> bool:
    """Whether the built module is assigned to an attribute of ``self`` (a submodule)."""
    return isinstance(parent, ast.Assign) and any(
        isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        for t in parent.targets
    )

"""TP118 factory-beside-placed-siblings: a tensor made without the device its class uses."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import keyword
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._module_tensors import in_a_module_method, zero_dim
from torchport.check.rules._port import creators, port_facts

_CLASS = (
    "import torch\n\n\nclass Solver:\n"
    "    def ones(self, n):\n        return torch.ones(n, device=self.device)\n\n"
    "    def zeros(self, n):\n        return torch.zeros(n, device=self.device)\n\n"
)


class FactoryBesidePlacedSiblings(Rule):
    """## What it does
    Finds a tensor made without `device=` (`torch.zeros(n)`) in a class whose
    other tensors are made on a device it holds: at least two other factories
    of the class pass the same attribute (`device=self.current_device`).

    ## Why is this bad?
    The class says where its tensors live, and this one is made on the CPU
    instead: once `self.current_device` is an accelerator, it meets the others
    and the operation fails, or its values are copied between devices. Passing
    the same `device=` keeps the class on one device. Reported without a fix:
    the tensor may be meant for the host (a CPU-only library call).

    A method of an `nn.Module` is left to TP504, and a 0-dim tensor
    (`torch.tensor(0.0)`) mixes with any device.

    ## Why is it off by default?
    New (recall round 5c), and not yet judged on the precision samples.
    `--extend-select TP118` runs it.
    """

    code = "TP118"
    name = "factory-beside-placed-siblings"
    intent = Intent.DEVICE
    default = False
    message = (
        "make this tensor where the class makes the others (`device=self.{attr}`): "
        "made on the CPU, it meets tensors on that device"
    )
    fix_safety = FixSafety.NONE
    node_types = (ast.ClassDef,)
    valid = (
        _CLASS + "    def loss(self, n):\n        return torch.zeros(n, device=self.device)\n",
        _CLASS + "    def loss(self, n):\n        return torch.tensor(0.0)\n",
    )
    invalid = (Example(_CLASS + "    def loss(self, n):\n        return torch.zeros(n)\n"),)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.ClassDef)
        made_by, _ = creators()
        placed: dict[str, int] = {}  # `self` attribute -> factories that name it as device
        bare: list[ast.Call] = []
        for method in node.body:
            if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if in_a_module_method(method, ctx):
                return  # TP504's: the module's inputs and parameters decide its device
            for call in ast.walk(method):
                if not isinstance(call, ast.Call):
                    continue
                name = ctx.qualname(call.func)
                if name not in made_by:
                    continue
                given = keyword(call, "device")
                device = given.value if given is not None else None
                if device is None:
                    if not (zero_dim(call, name) or _follows_its_input(call, name)):
                        bare.append(call)
                elif (
                    isinstance(device, ast.Attribute)
                    and isinstance(device.value, ast.Name)
                    and device.value.id == "self"
                ):
                    placed[device.attr] = placed.get(device.attr, 0) + 1
        attrs = [attr for attr, count in placed.items() if count >= 2]
        if len(attrs) != 1:
            return  # none, or two devices the class keeps apart: which one is unclear
        message = self.message.format(attr=attrs[0])
        for call in bare:
            if not _moved(call, ctx):
                yield ctx.finding(self, call, message=message)


_FROM_INPUT = frozenset({"torch.bernoulli", "torch.normal", "torch.tensor", "torch.as_tensor"})


def _follows_its_input(call: ast.Call, name: str) -> bool:
    """``torch.bernoulli(p)``, ``torch.as_tensor(x)``: made where a tensor argument is
    (or from a name that may hold one); ``**kwargs`` may hold a device, ``out=`` places it."""
    first = call.args[0] if call.args else None
    if any(k.arg is None or k.arg == "out" for k in call.keywords):
        return True
    return name in _FROM_INPUT and not isinstance(first, ast.List | ast.Tuple | ast.Constant)


def _moved(call: ast.Call, ctx: Context) -> bool:
    """``torch.zeros(n).to(x)``: placed right after it is made."""
    parent = port_facts(ctx).parents.get(id(call))
    return isinstance(parent, ast.Attribute) and parent.attr in ("to", "cuda", "type_as")

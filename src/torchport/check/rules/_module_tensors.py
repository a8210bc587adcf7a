"""Tensors a class keeps where ``model.to(device)`` does not reach them.

A plain tensor attribute of a module (not a parameter or buffer), and the state an
optimizer subclass makes: both stay on the CPU when the model moves.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchport.check._context import Context

if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = [
    "HELD_APART",
    "OPTIMIZER_STATE",
    "held_apart",
    "subclasses_optimizer",
    "submodules",
    "tensor_annotation",
    "zero_dim",
]


HELD_APART = (
    "`model.to(device)` does not move the plain tensor attribute `self.{name}`: register it "
    "with `self.register_buffer({name!r}, ..., persistent=False)` or make it on the input's "
    "device where it is used"
)


OPTIMIZER_STATE = (
    "make the optimizer's tensor on its parameter's device (`device=p.device`, or "
    "`torch.zeros_like(p)`): once the model is on the accelerator, a CPU state meets device "
    "parameters and gradients (no automatic fix: the port leaves optimizers to their authors)"
)


# Makers whose one number argument is the tensor's value (a 0-dim tensor), not a size.
_SCALAR_MAKERS = frozenset({"torch.tensor", "torch.as_tensor", "torch.scalar_tensor"})


def zero_dim(node: ast.Call, name: str) -> bool:
    """Whether ``node`` (a call of ``name``) makes a 0-dim tensor, which mixes with any device.

    ``torch.tensor(2.0)`` does; ``torch.ones(2)`` and ``torch.zeros(1)`` do not (the
    number is a size: a 1-dim CPU tensor meets an accelerator tensor with an error).
    """
    if not node.args:
        return False
    first = node.args[0]
    if isinstance(first, ast.UnaryOp) and isinstance(first.op, ast.USub | ast.UAdd):
        first = first.operand
    if name in _SCALAR_MAKERS:
        return isinstance(first, ast.Constant) and isinstance(first.value, int | float | bool)
    return isinstance(first, ast.Tuple) and not first.elts and len(node.args) == 1  # zeros(())


def _kept_value(node: ast.Call, parents: dict[int, ast.AST]) -> ast.AST:
    """The expression holding what ``node`` makes: through arithmetic and the tensor's
    own methods (``torch.ones(2) * 2``, ``torch.arange(4).float()``), not into another call."""
    expr: ast.AST = node
    while True:
        up = parents.get(id(expr))
        if isinstance(up, ast.BinOp | ast.UnaryOp):
            expr = up
            continue
        call = parents.get(id(up)) if isinstance(up, ast.Attribute) else None
        if isinstance(up, ast.Attribute) and isinstance(call, ast.Call) and call.func is up:
            expr = call
            continue
        return expr


def held_apart(
    node: ast.Call, name: str, init: ast.FunctionDef, parents: dict[int, ast.AST]
) -> str | None:
    """The attribute ``__init__`` keeps ``node`` in (``self.scale = torch.tensor([2.0])``),
    if another method of the class reads it; None for scalars, which mix with any device."""
    if zero_dim(node, name):
        return None  # `torch.tensor(2.0)`: a 0-dim tensor, usable with tensors anywhere
    value = _kept_value(node, parents)
    holder = parents.get(id(value))
    if not (isinstance(holder, ast.Assign) and holder.value is value and len(holder.targets) == 1):
        return None
    target = holder.targets[0]
    if not (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    ):
        return None
    cls = parents.get(id(init))
    if not isinstance(cls, ast.ClassDef):
        return None
    for method in cls.body:
        if method is init or not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for n in ast.walk(method):
            if (
                isinstance(n, ast.Attribute)
                and n.attr == target.attr
                and isinstance(n.ctx, ast.Load)
                and isinstance(n.value, ast.Name)
                and n.value.id == "self"
            ):
                return target.attr
    return None


def subclasses_optimizer(cls: ast.ClassDef, ctx: Context) -> bool:
    """Whether ``cls`` subclasses ``torch.optim.Optimizer`` (directly)."""
    return any(
        (ctx.qualname(base) or "") in ("torch.optim.Optimizer", "torch.optim.optimizer.Optimizer")
        for base in cls.bases
    )


def tensor_annotation(note: ast.expr) -> bool:
    """Whether a parameter's annotation names a tensor type."""
    text = ast.unparse(note)
    return "Tensor" in text


def submodules(cls: ast.ClassDef, facts: PortFacts) -> set[str]:
    """The attributes a module class sets to modules it builds (``self.fc = nn.Linear(...)``)."""
    found: set[str] = set()
    for node in ast.walk(cls):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        for target in node.targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and facts.known.builds(node.value, lambda _: False)
            ):
                found.add(target.attr)
    return found

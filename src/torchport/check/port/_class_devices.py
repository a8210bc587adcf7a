"""A model whose class keeps its inputs on its own device: TP501's second question (issue 31).

``class RNN(nn.Module)`` whose ``__init__`` stores ``self.device = device`` (``device="cpu"``)
and whose ``forward`` makes ``h0 = torch.zeros(..., device=self.device)`` or moves its input
``x.to(self.device)``: the instance is what keeps its tensors there, as a class that keeps
a model keeps that model's inputs (:mod:`~torchport.check.port._placing_callees`, read the
same way, every source of the device :mod:`~torchport.check.port._kept_models` reads).
``RNN(2, 5).to(device)`` would put its weights on the accelerator and its state on the
CPU. The invariant: the class's own CPU is a leftover only where the port moves the model;
there the port hands the program's device to that parameter by keyword
(``RNN(2, 5, device=device).to(device)``) where that is sure to place it (a parameter the
call leaves to its default, the class reading the attribute only as a device), else TP501
reports the model, with no fix (the CPU given by the program, a class attribute, a value
of a config, a setter).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import add_keyword
from torchport.check._rule import Edit
from torchport.check.port._device_flow import NOT_FORWARD
from torchport.check.port._given_devices import cpu_here
from torchport.check.port._kept_models import own_init, plain_reads
from torchport.check.port._placing_callees import (
    argument,
    device_left,
    handed_to_placing_callee,
    moved_of_call,
)
from torchport.check.semantic._receivers import Owner, receiver_owner

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts, PortScope

__all__ = ["own_device_left", "placed_by_callee", "submodule_device_left"]


_LEFT = (
    "hand the program's device to this model: it moves its inputs, or makes its tensors, on "
    "its own `{param}`, which is the CPU here (left to its default, or given the CPU; a "
    "`.to(device)` here would move its weights away from them)"
)
_HANDED = (
    "move the model to `device` and hand it the same device: it moves its inputs, or makes "
    "its tensors, on its own `{param}` (the CPU by default): "
    "`Model(..., {param}=device).to(device)`"
)


def own_device_left(
    call: ast.Call, facts: PortFacts, at: PortScope, device: tuple[str, tuple[Edit, ...]] | None
) -> tuple[str, tuple[Edit, ...] | None] | None:
    """TP501's message and edits (None: reported only) for the model ``call`` builds whose
    class keeps its inputs on its own device (``x.to(self.device)`` in ``forward``,
    ``torch.zeros(..., device=self.device)``) where the call leaves that device to the CPU
    (its default, the CPU, a class attribute, ``kwargs.get("device", "cpu")``); None where
    it does not. ``device``: the program's device name usable there and the edits defining
    it (``PortFacts.device_at``): the edits hand it to that parameter by keyword and move the
    model, where that is sure to place it (:func:`_keyword_places`)."""
    cpu = cpu_here(facts)
    ctx = facts.ctx
    for (p_at, _), param, kept in moved_of_call(call, ctx):
        if p_at != -3:
            continue
        left = device_left(call, param, kept, ctx, lambda d: cpu(d, at))
        if not left:
            continue
        if (
            device is None
            or receiver_owner(call, "to", ctx) is Owner.OTHER  # a `to` of the class's own
            or not _keyword_places(call, param, kept, ctx)
        ):
            return _LEFT.format(param=left), None
        name, edits = device
        handed = (add_keyword(call, f"{left}={name}", ctx), *edits)
        return _HANDED.format(param=left), (*ctx.append_call(call, f".to({name})"), *handed)
    return None


_SUBMODULE = (
    "this submodule moves its inputs, or makes its tensors, on its own `{param}`, the CPU "
    "here: `model.to(device)` moves its weights, not that device; hand it the device the "
    "module is moved to, or make its tensors on its input's device (`x.device`)"
)


def submodule_device_left(call: ast.Call, facts: PortFacts, at: PortScope) -> str | None:
    """TP504's message where a module's method (``at``) builds a submodule whose class keeps
    its tensors on its own device and leaves that device to the CPU there (``self.enc =
    Enc()``, ``Enc(device)`` of a parameter defaulting to the CPU): reported, not fixed (the
    device the module will be moved to is not known where it is built)."""
    cpu = cpu_here(facts)
    for (p_at, _), param, kept in moved_of_call(call, facts.ctx):
        if p_at == -3 and (left := device_left(call, param, kept, facts.ctx, lambda d: cpu(d, at))):
            return _SUBMODULE.format(param=left)
    return None


def _keyword_places(
    call: ast.Call, device: tuple[int, str], kept: bool | tuple[str, ...], ctx: Context
) -> bool:
    """Whether ``call`` hands nothing to the device parameter (no ``*``/``**`` either), and
    the class of the file it calls reads its device attributes only as devices
    (:func:`~torchport.check.port._kept_models.plain_reads`)."""
    if kept is not True or device[0] == -2 or argument(call, *device) is not None:
        return False
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return False
    binding = ctx.scopes.binding_at(call.func) if isinstance(call.func, ast.Name) else None
    cls = binding.node if binding is not None else None
    return isinstance(cls, ast.ClassDef) and plain_reads(cls, own_init(cls))


def placed_by_callee(expr: ast.AST | None, facts: PortFacts, at: PortScope) -> str | None:
    """TP501's question: the model ``expr`` builds in ``at`` handed to a project callable
    that moves it: "" where it is given a device not the CPU (``_given_devices.cpu_here``),
    else that callable's device parameter's name; None: not handed to one."""
    if not isinstance(expr, ast.expr):
        return None
    cpu = cpu_here(facts)
    return handed_to_placing_callee(expr, facts.ctx, NOT_FORWARD, lambda d: cpu(d, at))

"""A model moved to a device value the program carries itself (issue 31, item 2).

``model.to(args.device)``, ``.to(cfg.device)``, ``.to(self.device)``, ``.to(DEVICE)``:
the program chose where its model runs (a command-line option, a config field, a
constant), and a tensor the port moved to a second device of its own (the accelerator)
would meet the model elsewhere: on the CPU where the option says ``cpu``, on the CPU
where a CUDA-or-CPU choice meets MPS or XPU.

* A module-level name bound once to a device value (``DEVICE = "cpu"``,
  ``DEVICE = torch.device(...)``, the CUDA-or-CPU idiom), the program's only device
  choice: the port's moves use it and it adds no device line
  (:meth:`~torchport.check.port._device_name.DeviceName.adopt`).
* Any other such value (an attribute, a local name, several choices): the port cannot
  be sure which value reaches each move; its moves are reported at their lines, naming
  the model's placement, and no second device is written.

Syntax only; a name the file's :class:`DeviceName` already reads as a choice of its own
(``device``, ``dev = torch.device(...)``) is left to it.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchport._device_types import DEVICE_TYPES
from torchport.check.semantic import BindingKind
from torchport.check.semantic._placement import DEVICE_NAMES, means_accelerator

if TYPE_CHECKING:
    from torchport.check._context import Context
    from torchport.check.port._facts import PortFacts

__all__ = ["to_program_device"]


def to_program_device(call: ast.Call, facts: PortFacts, ctx: Context) -> bool:
    """Whether ``call`` (a move of the model) puts it on a device value of the program's own
    that the port's moves cannot reuse as they are (the port reports them instead)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "to":
        return False
    targets = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "device")]
    if len(targets) != 1:
        return False
    target = targets[0]
    if isinstance(target, ast.Attribute):
        return isinstance(target.value, ast.Name) and "dev" in target.attr.lower()
    if not isinstance(target, ast.Name) or target.id in DEVICE_NAMES:
        return False
    name, scopes = target.id, ctx.scopes
    if facts.device_name.chooses(name):
        return False  # the file's device name reads it (`dev = torch.device(...)`)
    bound = scopes.module.bindings.get(name, [])
    if (
        scopes.resolve(name, target) is scopes.module
        and len(bound) == 1
        and bound[0].kind is BindingKind.ASSIGN
        and bound[0].value is not None
        and _device_value(bound[0].value, ctx)
    ):
        return not facts.device_name.adopt(name)
    return "dev" in name.lower()


def _device_value(value: ast.expr, ctx: Context) -> bool:
    """A device string (``"cpu"``, ``"cuda:0"``), ``torch.device(...)``, a CUDA-or-CPU choice."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str) and value.value.partition(":")[0] in DEVICE_TYPES
    if isinstance(value, ast.IfExp):
        return means_accelerator(value, ctx) or (
            _device_value(value.body, ctx) and _device_value(value.orelse, ctx)
        )
    if isinstance(value, ast.Call) and ctx.qualname(value.func) == "torch.device":
        return len(value.args) == 1 and not value.keywords and _device_value(value.args[0], ctx)
    return means_accelerator(value, ctx)

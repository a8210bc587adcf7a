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

from torchport._device_types import CPU, DEVICE_TYPES
from torchport.check._context import Context
from torchport.check.port._imported_devices import (
    CHOICE,
    WRITTEN,
    device_kind,
    imported_value,
)
from torchport.check.semantic import BindingKind
from torchport.check.semantic._placement import DEVICE_NAMES, means_accelerator

TYPE_CHECKING = False
if TYPE_CHECKING:
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
    if not facts.device_name.would_add():
        return False  # the file has a device of its own the port uses: its readers decide
    if isinstance(target, ast.Subscript) or _entry_got(target):
        return True  # `CONFIG["device"]`, `cfg.get("device")`: not read here (module docstring)
    project, value = imported_value(target, ctx)
    if project and value is not None and isinstance(target, ast.Name | ast.Attribute):
        return _imported(target, value, call, facts, ctx)
    if isinstance(target, ast.Attribute):
        if not isinstance(target.value, ast.Name):
            # `Config().device`, `self.cfg.device`: a device setting the port cannot read;
            # not `next(model.parameters()).device` (beside another model's weights)
            text = ast.unparse(target.value)
            return "dev" in target.attr.lower() and not (
                "parameters()" in text or "buffers()" in text or text.startswith("next(")
            )
        if _handed_in(target, ctx):
            return False  # `self.device = device or "cpu"`: the class keeps what it is given
        if not (isinstance(target.value, ast.Name) and "dev" in target.attr.lower()):
            return False
        return not _one_attribute(target, call, ctx) or not facts.device_name.adopt_read(
            target, call
        )
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


def _imported(
    target: ast.Name | ast.Attribute,
    value: ast.expr,
    call: ast.Call,
    facts: PortFacts,
    ctx: Context,
) -> bool:
    """:func:`to_program_device` for a name another module of the project binds once
    (``DEVICE`` after ``from config import DEVICE``, ``config.DEVICE``): bound to the CPU or
    a CUDA-or-CPU choice, the port's moves use it as they use the file's own constant; an
    accelerator written out, or another value named as a device, is reported."""
    kind = device_kind(value)
    if kind in (CPU, CHOICE):
        if isinstance(target, ast.Name):
            return not facts.device_name.adopt(target.id)
        if not _one_text(target, ctx):
            return True
        return not facts.device_name.adopt_read(target, call, anywhere=True)
    return kind == WRITTEN or _named_device(target)  # (not `DTYPE = torch.float16`)


def _entry_got(target: ast.expr) -> bool:
    """``cfg.get("device")``, ``cfg.get("device", "cpu")``: a config's device entry."""
    return (
        isinstance(target, ast.Call)
        and isinstance(target.func, ast.Attribute)
        and target.func.attr == "get"
        and bool(target.args)
        and isinstance(target.args[0], ast.Constant)
        and isinstance(target.args[0].value, str)
        and "dev" in target.args[0].value.lower()
    )


def _named_device(target: ast.Name | ast.Attribute) -> bool:
    return "dev" in (target.id if isinstance(target, ast.Name) else target.attr).lower()


def _handed_in(target: ast.Attribute, ctx: Context) -> bool:
    """``self.<x>`` stored (anywhere in the file) from a parameter of the function storing it:
    a class that keeps the device its caller hands (``_kept_models``' question, not this)."""
    if not isinstance(target.value, ast.Name) or target.value.id != "self":
        return False
    for node in ctx.scopes.nodes_of(ast.Assign):
        assert isinstance(node, ast.Assign)
        if not any(
            isinstance(t, ast.Attribute)
            and t.attr == target.attr
            and getattr(t.value, "id", "") == "self"
            for t in node.targets
        ):
            continue
        function = ctx.scopes.scope_of(node).node
        args = getattr(function, "args", None)
        params = (
            {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} if args else set()
        )
        if any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(node.value)):
            return True
    return False


def _one_attribute(target: ast.Attribute, call: ast.Call, ctx: Context) -> bool:
    """Whether every device-like attribute the file moves or makes anything on
    (``.to(a.b)``, ``device=a.b``) is ``target``'s text, read in ``call``'s function (or,
    for ``self.<x>``, in a method of its class)."""
    text, scopes = ast.unparse(target), ctx.scopes
    home = _owner(scopes.scope_of(call).node, target.value.id == "self", ctx)  # type: ignore[attr-defined]
    for node in scopes.nodes_of(ast.Call):
        assert isinstance(node, ast.Call)
        moved = (
            node.args[:1] if isinstance(node.func, ast.Attribute) and node.func.attr == "to" else []
        )
        for read in [*moved, *(k.value for k in node.keywords if k.arg == "device")]:
            if not (isinstance(read, ast.Attribute) and "dev" in read.attr.lower()):
                continue
            owner = _owner(scopes.scope_of(read).node, target.value.id == "self", ctx)  # type: ignore[attr-defined]
            if ast.unparse(read) != text or owner is not home:
                return False
    return True


def _one_text(target: ast.Attribute, ctx: Context) -> bool:
    """Whether every device-like attribute the file moves or makes anything on is
    ``target``'s text (``config.DEVICE`` everywhere), in any function."""
    text = ast.unparse(target)
    for node in ctx.scopes.nodes_of(ast.Call):
        assert isinstance(node, ast.Call)
        moved = (
            node.args[:1] if isinstance(node.func, ast.Attribute) and node.func.attr == "to" else []
        )
        for read in [*moved, *(k.value for k in node.keywords if k.arg == "device")]:
            device_like = isinstance(read, ast.Attribute) and "dev" in read.attr.lower()
            if device_like and ast.unparse(read) != text:
                return False
    return True


def _owner(node: ast.AST, method: bool, ctx: Context) -> ast.AST:
    """``node``'s function, or for ``self``'s reads, the class holding the method."""
    if not method:
        return node
    up = ctx.scopes.parent(node)
    return up if isinstance(up, ast.ClassDef) else node


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

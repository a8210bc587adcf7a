"""The one ``device`` name every fix of a port uses in a file, and where it may be written.

A port that moved the model to ``_device`` (the accelerator) and a tensor to the
user's ``device`` (a CUDA-or-CPU string, or a function's local) would split them
on any other accelerator, so a file gets one module-level binding, whatever the
node. It is, in this order: a module-level definition written with the port's own
line; the module's own ``device = <an accelerator choice>`` (what the code it has
already uses); the program's own device chosen on several paths; a new definition
under the first free name.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._rule import Edit
from torchport.check.semantic import BindingKind
from torchport.check.semantic._placement import (
    DEVICE_NAMES,
    device_at,
    device_expr,
    means_accelerator,
)

__all__ = ["DeviceName", "same_tree"]


class DeviceName:
    """The file's one device name (chosen on first use) and where fixes may use it."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._name: str | None = None
        self._chosen = False
        self._own = False  # the program's own name, bound on several paths

    def at(self, node: ast.AST) -> tuple[str, tuple[Edit, ...]] | None:
        """The name usable at ``node`` and the edits defining it (None: no fix here).

        A node where the binding is not usable (code above the user's definition,
        a function with its own ``device``) gets no fix: its finding stays.
        """
        if not self._chosen:
            self._name, self._chosen = self._choose(), True
        name = self._name
        if name is None:
            return None
        scopes = self.ctx.scopes
        if self._own:
            if scopes.resolve(name, node) is scopes.module and scopes.definitely_bound(name, node):
                return name, ()
            return None
        found = device_at(self.ctx, node, (name,))
        if found is None or scopes.resolve(name, node) is not scopes.module:
            return None  # a function's own `device` may mean something else
        return found

    def _choose(self) -> str | None:
        body = self.ctx.tree.body
        ours: ast.expr = ast.parse(device_expr(self.ctx.torch_name())).body[0].value  # type: ignore[attr-defined]
        defined: dict[str, ast.expr] = {}
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name) and target.id in DEVICE_NAMES:
                    defined.setdefault(target.id, stmt.value)
        for name in DEVICE_NAMES:
            if name in defined and same_tree(defined[name], ours):
                return name
        scopes = self.ctx.scopes
        for name in DEVICE_NAMES:
            if name in defined and means_accelerator(defined[name], self.ctx):
                found = scopes.module.bindings.get(name, [])
                if len(found) == 1:
                    return name  # the user's own choice, bound once at module level
        for name in DEVICE_NAMES:
            # The program's own device, chosen on several paths (`device = cpu` then
            # `if args.cuda: device = ...`, a gloo branch): the port's moves use it.
            found = scopes.module.bindings.get(name, [])
            if found and all(
                b.kind is BindingKind.ASSIGN and b.value is not None and self._device_value(b.value)
                for b in found
            ):
                self._own = True
                return name
        for name in DEVICE_NAMES:
            if not scopes.module.bindings.get(name) and not scopes.module_reads(name):
                return name  # free: a new module-level definition
        return None

    def _device_value(self, value: ast.expr) -> bool:
        """A value a device name is bound to: ``torch.device(..)``, the accelerator, a choice."""
        if isinstance(value, ast.IfExp):
            return self._device_value(value.body) and self._device_value(value.orelse)
        if isinstance(value, ast.Constant):
            return isinstance(value.value, str)
        return (
            isinstance(value, ast.Call)
            and self.ctx.qualname(value.func)
            in ("torch.device", "torch.accelerator.current_accelerator")
        ) or means_accelerator(value, self.ctx)


def same_tree(a: object, b: object) -> bool:
    """Whether two trees are the same code: ``ast.dump(a) == ast.dump(b)``, positions aside.

    Written out because ``ast.dump`` formats through a closure that calls itself: each
    call leaves a reference cycle for the collector, and a file's analysis leaves none.
    Leaf values compare by type and ``repr`` as ``dump`` shows them (``1`` is not ``True``).
    """
    if isinstance(a, ast.AST):
        if type(a) is not type(b):
            return False
        return all(same_tree(getattr(a, name, None), getattr(b, name, None)) for name in a._fields)
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(same_tree(x, y) for x, y in zip(a, b, strict=True))
        )
    return type(a) is type(b) and repr(a) == repr(b)

"""The device the code already carries where a fix writes one: before a new global ``device``.

A program that picks its device (``self.device`` set from ``--gpu_ids``, a
``device`` parameter passed down, a ``device = torch.device(args.device)``)
and still has a ``.cuda()`` somewhere mixes devices: the maintainers' fix is
``.to(self.device)``, not a second, global choice. :func:`carried_device`
finds, in this order:

* a name ``device`` (or ``dev``) that the read sees bound on every path to
  it: a parameter of the enclosing function, or an assignment that reaches
  it (not to a value known to be the CPU, ``"cpu"`` or ``torch.device("cpu")``);
* ``self.device`` in a method whose class assigns ``self.device`` somewhere
  (``self`` being the method's first parameter, never rebound).

A fix that uses it is unsafe: the carried device may be another than the
current accelerator (the CPU of a ``--gpu_ids -1`` run), and the data now
follows it (:data:`FOLLOWS`).
"""

from __future__ import annotations

import ast
import weakref

from torchport.check.semantic._binding import BindingKind, ScopeKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context
    from torchport.check._edit import Edit

__all__ = ["FOLLOWS", "carried_device", "device_for_fix"]

_NAMES = ("device", "dev")
FOLLOWS = (
    "uses the device the code already carries ({name}) instead of the current accelerator: "
    "where that is another device (the CPU of a run asked for it), the data now follows it"
)


def _cpu(value: ast.expr | None, ctx: Context) -> bool:
    if isinstance(value, ast.Constant):
        return not isinstance(value.value, str) or value.value == "cpu"
    return (
        isinstance(value, ast.Call)
        and ctx.qualname(value.func) == "torch.device"
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Constant)
        and value.args[0].value == "cpu"
    )


def carried_device(node: ast.AST, ctx: Context) -> str | None:
    """The expression of the device the code carries at ``node`` (``"self.device"``), or None."""
    scopes = ctx.scopes
    own = scopes.scope_of(node)
    for name in _NAMES:
        found = scopes.bindings(name, node)
        where = scopes.resolve(name, node)
        if not found or where.kind is ScopeKind.CLASS:
            continue
        if len(found) == 1 and found[0].kind is BindingKind.PARAMETER:
            return name  # the function's own parameter, or an enclosing one's, never rebound
        if where is not own or not scopes.definitely_bound(name, node):
            continue  # a module's name read in a function may be rebound before it runs
        reached = scopes.reaching(name, node)
        if (
            reached is not None
            and reached.kind is BindingKind.ASSIGN
            and not _cpu(reached.value, ctx)
            and all(b.kind is BindingKind.ASSIGN for b in found)
        ):
            return name
    return _self_device(node, ctx)


def _self_device(node: ast.AST, ctx: Context) -> str | None:
    scopes = ctx.scopes
    scope = scopes.scope_of(node)
    while scope.kind in (ScopeKind.LAMBDA, ScopeKind.COMPREHENSION) and scope.parent is not None:
        scope = scope.parent
    method = scope.node
    if scope.kind is not ScopeKind.FUNCTION or scope.parent is None:
        return None
    if scope.parent.kind is not ScopeKind.CLASS:
        return None
    assert isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
    params = [*method.args.posonlyargs, *method.args.args]
    if not params or params[0].arg != "self" or len(scope.bindings.get("self", ())) != 1:
        return None
    if scopes.resolve("self", node) is not scope:
        return None
    cls = scope.parent.node
    assert isinstance(cls, ast.ClassDef)
    return "self.device" if _assigns_self_device(cls) else None


_ASSIGNS: weakref.WeakKeyDictionary[ast.ClassDef, bool] = weakref.WeakKeyDictionary()


def _assigns_self_device(cls: ast.ClassDef) -> bool:
    found = _ASSIGNS.get(cls)
    if found is None:
        found = False
        for stmt in cls.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(stmt):
                targets: list[ast.expr] = []
                if isinstance(sub, ast.Assign):
                    targets = sub.targets
                elif isinstance(sub, ast.AnnAssign) and sub.value is not None:
                    targets = [sub.target]
                if any(
                    isinstance(t, ast.Attribute)
                    and t.attr == "device"
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    for t in targets
                ):
                    found = True
                    break
            if found:
                break
        _ASSIGNS[cls] = found
    return found


def device_for_fix(node: ast.AST, ctx: Context) -> tuple[str, tuple[Edit, ...], str] | None:
    """(name, edits, what changes) of the device a fix at ``node`` writes, or None (no fix).

    The file's own accelerator choice bound at ``node`` first (no edits, no
    change); then the device the code carries (:func:`carried_device`:
    unsafe, it says :data:`FOLLOWS`); then a new definition
    (:meth:`~torchport.check._context.Context.device_at`).
    """
    found = ctx.device_at(node)
    if found is not None and not found[1]:
        return found[0], (), ""
    carried = carried_device(node, ctx)
    if carried is not None:
        return carried, (), FOLLOWS.format(name=f"`{carried}`")
    return None if found is None else (found[0], found[1], "")

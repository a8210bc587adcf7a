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


# Values that are no device at all: `.to(...)` of them raises (a list) or, worse,
# converts the dtype (`.to(True)` makes a bool tensor) or does nothing (`.to(None)`).
_NOT_DEVICES = (
    ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp,
    ast.GeneratorExp, ast.BoolOp, ast.Compare, ast.UnaryOp, ast.Lambda,
)  # fmt: skip
# Annotations of a parameter that is no device (`device: bool`, `device: list[int]`).
_NOT_DEVICE_TYPES = frozenset(
    {"bool", "int", "float", "list", "tuple", "dict", "set", "List", "Tuple", "Dict",
     "Sequence", "Iterable", "Optional"}
)  # fmt: skip


def _cpu(value: ast.expr | None, ctx: Context) -> bool:
    """Whether ``value`` is the CPU or no device at all: never the device a fix may reuse."""
    if isinstance(value, ast.Constant):
        return not isinstance(value.value, str) or value.value == "cpu"
    if isinstance(value, _NOT_DEVICES):
        return True
    return (
        isinstance(value, ast.Call)
        and ctx.qualname(value.func) == "torch.device"
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Constant)
        and value.args[0].value == "cpu"
    )


def carried_device(node: ast.AST, ctx: Context, *, to_reuse: bool = False) -> str | None:
    """The expression of the device the code carries at ``node`` (``"self.device"``), or None.

    With ``to_reuse``, only one a fix may write where CUDA was: not a parameter whose
    default, annotation or uses say it is no device (``device=None``, ``device: bool``,
    ``device[0]``), nor ``self.device`` of a class that also sets it to ``None``.
    """
    scopes = ctx.scopes
    own = scopes.scope_of(node)
    for name in _NAMES:
        found = scopes.bindings(name, node)
        where = scopes.resolve(name, node)
        if not found or where.kind is ScopeKind.CLASS:
            continue
        if len(found) == 1 and found[0].kind is BindingKind.PARAMETER:
            if not to_reuse or _a_device_parameter(found[0].node, found[0].scope.node, ctx):
                return name  # the function's own parameter, or an enclosing one's, never rebound
            continue
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
    return _self_device(node, ctx, to_reuse)


def _a_device_parameter(arg: ast.AST, func: ast.AST, ctx: Context) -> bool:
    """Whether the parameter ``arg`` of ``func`` may be a device: its default, annotation
    and uses say nothing else (``device=None``, ``device: bool``, ``device[0]``, ``if device:``)."""
    if not isinstance(arg, ast.arg) or not isinstance(
        func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    ):
        return False
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    pairs = [
        *zip(positional, [*defaults, *args.defaults], strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]
    default = next((d for a, d in pairs if a is arg), None)
    if (
        default is not None
        and _cpu(default, ctx)
        and not (isinstance(default, ast.Constant) and default.value == "cpu")
    ):
        return False  # `device=None`, `device=True`, `device=[0]`: not a device to move to
    annotation = arg.annotation
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    if isinstance(annotation, (ast.Name, ast.Attribute)):
        word = annotation.id if isinstance(annotation, ast.Name) else annotation.attr
        if word in _NOT_DEVICE_TYPES:
            return False
    return not _used_as_no_device(arg.arg, func)


_NO_DEVICE_USE: weakref.WeakKeyDictionary[ast.AST, frozenset[str]] = weakref.WeakKeyDictionary()


def _used_as_no_device(name: str, func: ast.AST) -> bool:
    """Whether ``func`` uses ``name`` as something a device is not: indexed, iterated,
    counted, computed with or tested for truth (worked out once per function)."""
    found = _NO_DEVICE_USE.get(func)
    if found is None:
        names: set[str] = set()
        for sub in ast.walk(func):
            used: list[ast.expr] = []
            if isinstance(sub, ast.Subscript):
                used = [sub.value]
            elif isinstance(sub, ast.BinOp):
                used = [sub.left, sub.right]
            elif isinstance(sub, (ast.If, ast.While, ast.IfExp)):
                used = [sub.test]
            elif isinstance(sub, ast.BoolOp):
                used = list(sub.values)
            elif isinstance(sub, ast.UnaryOp):
                used = [sub.operand]
            elif isinstance(sub, (ast.For, ast.AsyncFor, ast.comprehension)):
                used = [sub.iter]
            elif isinstance(sub, ast.Call) and getattr(sub.func, "id", None) == "len":
                used = list(sub.args)
            names.update(u.id for u in used if isinstance(u, ast.Name))
        found = _NO_DEVICE_USE[func] = frozenset(names)
    return name in found


def _self_device(node: ast.AST, ctx: Context, to_reuse: bool) -> str | None:
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
    return "self.device" if _assigns_self_device(cls, to_reuse) else None


_ASSIGNS: weakref.WeakKeyDictionary[ast.ClassDef, tuple[bool, bool]] = weakref.WeakKeyDictionary()


def _assigns_self_device(cls: ast.ClassDef, to_reuse: bool) -> bool:
    """Whether a method of ``cls`` assigns ``self.device`` (with ``to_reuse``: never ``None``,
    a flag or a list, so that ``.to(self.device)`` always moves to a device)."""
    found = _ASSIGNS.get(cls)
    if found is None:
        assigns = no_device = False
        for stmt in cls.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(stmt):
                targets: list[ast.expr] = []
                value: ast.expr | None = None
                if isinstance(sub, ast.Assign):
                    targets, value = sub.targets, sub.value
                elif isinstance(sub, ast.AnnAssign) and sub.value is not None:
                    targets, value = [sub.target], sub.value
                if any(
                    isinstance(t, ast.Attribute)
                    and t.attr == "device"
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    for t in targets
                ):
                    assigns = True
                    no_device |= (
                        isinstance(value, ast.Constant) and not isinstance(value.value, str)
                    ) or isinstance(value, _NOT_DEVICES)
        found = _ASSIGNS[cls] = (assigns, assigns and not no_device)
    return found[1] if to_reuse else found[0]


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
    carried = carried_device(node, ctx, to_reuse=True)
    if carried is not None:
        return carried, (), FOLLOWS.format(name=f"`{carried}`")
    return None if found is None else (found[0], found[1], "")

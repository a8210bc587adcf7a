"""Project callables that move a model they are handed to the device they are handed.

``cls(model, vocab, device=device)`` in ``SentimentClassifier.load`` of
aamirmalik-dr/text-sentiment-lstm, whose ``__init__`` begins
``self.model = model.to(device).eval()``: the model built in ``load`` is placed there, by
the class, on the device the caller hands it. TP501's ``Net().to(device)`` would be undone
by that move (the class puts the model where its ``device`` says), so it is noise.

A **moved parameter** of a function is one a statement of the function's own body (not
inside an ``if``, a loop, a ``try`` or a nested function) moves with ``p.to(d)`` or
``p.to(device=d)`` (alone, or first in a chain of model methods: ``.to(d).eval()``), where
``d`` is another parameter of the function, or ``self.a`` bound from one earlier in that
body; no earlier statement rebinds ``p`` or ``d``, nor holds a ``return``, ``raise`` or
``yield`` (the move always runs). The callee is a module-level function or class
(its ``__init__``, defined in its own body, with no decorator and no ``__new__``) of the file
or of a project module imported at the top level, or ``cls`` in a ``classmethod`` of a
class of the file that no class of the file derives from (its last definition).
:func:`placing_call` answers whether a call hands an argument to a moved parameter and passes
its device parameter something that does not name the CPU where the call is (a parameter's
CPU default does, unless every caller in the file hands a device: ``_given_devices``): there
the callee places the model (no TP501). Where the device is left to its default, or names the
CPU, the callee would undo a ``.to(device)``: TP501 reports it, with no fix.

A **kept parameter** of a class's ``__init__`` is one stored as it is (``self.model =
model``) beside a device parameter stored too (``self.device = device``), in a class whose
other methods move what they are given to that attribute (``x.to(self.device)``): the class
keeps the model where it was handed and brings its inputs to its own device. Handed the
program's device, the model must be moved by its caller (TP501's fix stands); left to its
default, or given the CPU, the class's inputs stay on the CPU and a moved model would meet
them there: TP501 reports it, with no fix (a program the port left running on the CPU, not
one it broke). The class's other shapes (a ``@dataclass``, the device stored by a base
class's ``__init__``, set to the CPU there, or set by a method such as ``to(device)``) are
read the same way (:mod:`~torchport.check.port._kept_models`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check._context import Context
from torchport.check._nodes import sole_target
from torchport.check.port._kept_models import (
    base_call,
    base_of,
    class_cpu,
    cpu_constant,
    dataclass_fields,
    inputs_moved_to,
    kwargs_key,
    may_be_cpu,
    own_init,
    parameter_or_cpu,
    set_later,
    setters_of,
    through_properties,
)
from torchport.check.port._module_callables import ModuleCallables
from torchport.check.port._module_files import module_facts
from torchport.check.port._script_path import module_function_called, script_lookups
from torchport.check.semantic._binding import BindingKind

__all__ = [
    "argument",
    "device_left",
    "handed_to_placing_callee",
    "moved_of_call",
    "moved_parameters_of",
    "placing_call",
]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_CHAIN = frozenset({"eval", "train", "float", "double", "half", "bfloat16", "requires_grad_"})
_BINDS = (ast.Expr, ast.Assign, ast.AnnAssign)
_EXITS = (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom, ast.Await)
# ((moved position, moved name), (device position, device name), kept); position -1:
# keyword-only, -2: no parameter (an attribute set to the CPU), -3: the instance itself
# (`_SELF`); kept: stored as it is, the class moving its inputs to the device instead (a
# tuple: the methods that set that device)
Kept = bool | tuple[str, ...]
Moved = tuple[tuple[tuple[int, str], tuple[int, str], Kept], ...]
_CACHE: dict[str, tuple[tuple[int, int], ModuleCallables | None]] = {}
_SELF = "(self)"
CpuTest = Callable[[ast.expr], bool]  # whether a device expression names the CPU there


def moved_parameters_of(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    *,
    shift: int = 0,
    kept_to: frozenset[str] | None = None,
    chain: tuple[ast.ClassDef, ...] = (),
) -> Moved:
    """``func``'s moved parameters and the parameters they are moved to (module text);
    ``shift``: positions counted without the first ``shift`` parameters (``self``);
    ``kept_to``: the attributes the class's other methods move their values to (an
    ``__init__``'s kept parameters, each with every device parameter stored to one, or
    every attribute it sets to the CPU); ``chain``: the class of that ``__init__`` and its
    bases of the file (``super().__init__(device)`` stores what the base's stores)."""
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]

    def where(name: str) -> tuple[int, str]:
        return (positional.index(name) - shift if name in positional else -1, name)

    found, stored, constants = _read_init(func, shift, chain)
    if kept_to is not None:
        kept_to = through_properties([*chain], kept_to)  # `self.device` a property of `_device`
        own = (positional or [""])[0] if shift else ""  # a class attribute `device = "cpu"`:
        constants |= {a for a in kept_to if class_cpu([*chain], a) and not _sets(func, own, a)}
        devices = {at: d for at, d in stored.items() if at in kept_to}
        moved_names = {p for (_, p), _, _ in found}
        # `_SELF`: the instance itself keeps its inputs there (an `nn.Module` moving its input)
        for p in [_SELF, *sorted(set(stored.values()) - set(devices.values()) - moved_names)]:
            at_p = (-3, p) if p == _SELF else where(p)
            for at, d in sorted(devices.items()):
                found.append((at_p, where(d), setters_of([*chain], at, func) or True))
            for at in sorted(constants & kept_to):  # `self.device = "cpu"`: the CPU, or a setter's
                found.append((at_p, (-2, f"self.{at}"), setters_of([*chain], at, func)))
    return tuple(found)


Found = list[tuple[tuple[int, str], tuple[int, str], bool | tuple[str, ...]]]


def _read_init(
    func: ast.FunctionDef | ast.AsyncFunctionDef, shift: int, chain: tuple[ast.ClassDef, ...]
) -> tuple[Found, dict[str, str], set[str]]:
    """``func``'s moves (as :func:`moved_parameters_of`'s, not yet kept), the attributes it
    stores a parameter to as it is (attribute -> parameter), and those it sets to the CPU."""
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    params = {*positional, *(p.arg for p in a.kwonlyargs)}

    def where(name: str) -> tuple[int, str]:
        return (positional.index(name) - shift if name in positional else -1, name)

    own = (positional or [""])[0] if shift else ""
    kwargs = a.kwarg.arg if a.kwarg else None  # `kwargs.get("device", "cpu")`: a parameter
    rebound: set[str] = set()
    attributes: dict[str, str] = {}  # `self.device = device`: `self.device` is `device`
    stored: dict[str, str] = {}  # `self.model = model`, never rebound after
    constants: set[str] = set()  # `self.device = "cpu"`, never rebound after
    found: Found = []
    for stmt in func.body:
        moved = _moved_by(stmt, own, attributes)
        if moved is not None:
            p, d = moved
            if p in params and d in params and not {p, d} & rebound:
                found.append((where(p), where(d), False))
        nodes = list(_own_nodes(stmt))
        if any(isinstance(n, _EXITS) for n in nodes):
            break  # what follows may not run
        for n in nodes:
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                rebound.add(n.id)
            elif isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load):
                attributes.pop(n.attr, None)
                stored.pop(n.attr, None)
                constants.discard(n.attr)
            elif isinstance(n, ast.Call) and _attribute_of(n.func, own):
                attributes.clear()  # `self.reset()` may set any attribute
                stored.clear()
                constants.clear()
        given = _parameter_stored(stmt, own)
        key = kwargs_key(getattr(stmt, "value", None), kwargs) if given is None else None
        if key is not None and _cpu_stored(stmt, own) and kwargs not in rebound:
            params.add(key)
            given = stmt.targets[0].attr, key  # type: ignore[attr-defined]
        if given is not None and given[1] in params and given[1] not in rebound:
            attributes[given[0]] = stored[given[0]] = given[1]
        elif given is None and _cpu_stored(stmt, own):
            constants.add(stmt.targets[0].attr)  # type: ignore[attr-defined]
        inherited = _inherited(stmt, own, chain[1:]) if len(chain) > 1 else None
        if inherited is not None:  # `super().__init__(device)`: what the base stores
            for at, name in inherited[0].items():
                if name in params and name not in rebound:
                    attributes[at] = stored[at] = name
                else:
                    attributes.pop(at, None)
                    stored.pop(at, None)
            constants |= inherited[1]
    return found, stored, constants


def _inherited(
    stmt: ast.stmt, own: str, chain: tuple[ast.ClassDef, ...]
) -> tuple[dict[str, str], set[str]] | None:
    """What ``super().__init__(...)`` (``stmt``) stores: attribute -> the name handed to
    the base's parameter stored there ("" where it is handed something else), and the
    attributes it sets to the CPU; None: no such call of ``chain[0]``'s own ``__init__``."""
    base = chain[0]
    found = base_call(stmt, own, base)
    if found is None:
        return None
    call, skip = found
    init = next((m for m in base.body if isinstance(m, _FUNCTIONS) and m.name == "__init__"), None)
    args = call.args[skip:]
    if init is None or init.decorator_list or any(isinstance(x, ast.Starred) for x in args):
        return {}, set()  # (the attributes it may set: cleared by the caller's own walk)
    if any(k.arg is None for k in call.keywords):
        return {}, set()
    _, stored, constants = _read_init(init, 1, chain)
    b = init.args
    positional = [p.arg for p in (*b.posonlyargs, *b.args)][1:]
    defaults = dict(zip(positional[len(positional) - len(b.defaults) :], b.defaults, strict=True))
    defaults.update({p.arg: d for p, d in zip(b.kwonlyargs, b.kw_defaults, strict=True) if d})
    handed: dict[str, ast.expr] = dict(zip(positional, args, strict=False))
    handed.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    out: dict[str, str] = {}
    for at, param in stored.items():
        value = handed.get(param, defaults.get(param))
        out[at] = value.id if isinstance(value, ast.Name) else ""
        if cpu_constant(value):
            constants.add(at)
    return out, constants


def _cpu_stored(stmt: ast.stmt, own: str) -> bool:
    """``self.a = "cpu"`` (or ``torch.device("cpu")``, or a value naming the CPU alone:
    ``getattr(config, "device", "cpu")``)."""
    return (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and _attribute_of(stmt.targets[0], own)
        and (cpu_constant(stmt.value) or may_be_cpu(stmt.value))
    )


def _moved_by(stmt: ast.stmt, own: str, attributes: dict[str, str]) -> tuple[str, str] | None:
    """(moved name, device name) of ``p.to(d)`` heading ``stmt``'s value, if it is one."""
    value = getattr(stmt, "value", None) if isinstance(stmt, _BINDS) else None
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _CHAIN
    ):
        value = value.func.value
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "to"
        and isinstance(value.func.value, ast.Name)
    ):
        return None
    targets = [*value.args[:1], *(k.value for k in value.keywords if k.arg == "device")]
    if len(targets) != 1 or len(value.args) > 1:
        return None  # `.to(d, dtype)`, `.to(other_tensor)`-like forms: not read
    target = targets[0]
    if isinstance(target, ast.Name):
        return value.func.value.id, target.id
    if _attribute_of(target, own) and target.attr in attributes:  # type: ignore[attr-defined]
        return value.func.value.id, attributes[target.attr]  # type: ignore[attr-defined]
    return None


def _parameter_stored(stmt: ast.stmt, own: str) -> tuple[str, str] | None:
    """(attribute, parameter) of ``self.a = p``, or of the forms that keep ``p``'s device:
    ``self.a = torch.device(p)``, ``self.a = p or "cpu"``, ``p if p is not None else "cpu"``."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and _attribute_of(stmt.targets[0], own)
    ):
        return None
    value = stmt.value
    if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
        func = value.func
        if getattr(func, "attr", getattr(func, "id", None)) == "device":
            value = value.args[0]  # `torch.device(device)`
    value = parameter_or_cpu(value)  # `device or "cpu"`: the parameter, or the CPU where None
    if not isinstance(value, ast.Name):
        return None
    return stmt.targets[0].attr, value.id  # type: ignore[attr-defined]


def _sets(func: ast.AST, own: str, attr: str) -> bool:
    return any(_attribute_of(n, own) and n.attr == attr for n in ast.walk(func))  # type: ignore[attr-defined]


def _attribute_of(node: ast.AST, own: str) -> bool:
    return (
        bool(own)
        and isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == own
    )


def _own_nodes(stmt: ast.AST) -> list[ast.AST]:
    found, todo = [], [stmt]
    while todo:
        node = todo.pop()
        found.append(node)
        todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))
    return found


def _init_of(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> Moved:
    """The moved parameters of ``cls``'s ``__init__`` (its own, a base's of the file, or a
    dataclass's); () where it is not plain."""
    if cls.decorator_list:  # a dataclass writes its own `__init__` (`_kept_models`)
        return _dataclass_init(cls) if not cls.bases else ()
    if cls.keywords:
        return ()  # a metaclass may call another `__init__`
    chain = [cls]
    while (base := base_of(chain[-1], classes)) is not None and base not in chain:
        chain.append(base)
    kept_to = frozenset().union(*(inputs_moved_to(c, own_init(c)) for c in chain))
    for at, c in enumerate(chain):
        if any(isinstance(s, _FUNCTIONS) and s.name == "__new__" for s in c.body):
            return ()
        if c.decorator_list or c.keywords:
            return ()
        if any(isinstance(s, _FUNCTIONS) and s.name == "__init__" for s in c.body):
            init = own_init(c)
            if init is None or init.decorator_list:
                return ()
            return moved_parameters_of(init, shift=1, kept_to=kept_to, chain=tuple(chain[at:]))
    return ()


def _dataclass_init(cls: ast.ClassDef) -> Moved:
    """A dataclass's kept fields: each stored as it is, beside a device field its methods
    move their inputs to."""
    fields = dataclass_fields(cls)
    if fields is None:
        return ()
    kept_to = inputs_moved_to(cls, None)
    devices = [f for f in fields if f[1] in kept_to]
    return tuple(
        (f, d, setters_of([cls], d[1], None) or True)
        for f in fields
        if f not in devices
        for d in devices
    )


def _callables_of(tree: ast.Module) -> ModuleCallables:
    return ModuleCallables(tree, _answer)  # (each name worked out when asked)


def _answer(stmt: ast.stmt, classes: dict[str, ast.ClassDef]) -> Moved:
    if isinstance(stmt, ast.ClassDef):
        return _init_of(stmt, classes)
    assert isinstance(stmt, _FUNCTIONS)
    return () if stmt.decorator_list else moved_parameters_of(stmt)


def moved_of_call(call: ast.Call, ctx: Context) -> Moved:
    """The moved parameters of what ``call`` calls (module text); () when not known."""
    func = call.func
    if isinstance(func, ast.Name):
        binding = ctx.scopes.binding_at(func)
        if binding is None:
            return ()
        if binding.kind is BindingKind.PARAMETER:
            return _cls_of_classmethod(func, binding.node, ctx)
        if binding.scope is ctx.scopes.module and binding.kind in (
            BindingKind.CLASS,
            BindingKind.DEF,
        ):
            key = "placing_callees.own"
            own = ctx.memo.get(key)
            if own is None:
                own = ctx.memo[key] = _callables_of(ctx.tree)
            return own.get(func.id, ())  # type: ignore[attr-defined,no-any-return]
    callee = module_function_called(call, ctx)
    if callee is None or callee[1] is None:
        return ()
    name, path = callee[0], callee[1]
    found = module_facts(path, script_lookups(ctx), _CACHE, _callables_of, None)
    return () if found is None else found.get(name, ())


def _cls_of_classmethod(func: ast.Name, param: ast.AST, ctx: Context) -> Moved:
    """``cls(...)`` where ``cls`` is the first parameter of a ``classmethod`` of a
    module-level class of the file: that class's ``__init__``."""
    for cls in ctx.tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for method in cls.body:
            if not isinstance(method, _FUNCTIONS):
                continue
            first = [*method.args.posonlyargs, *method.args.args][:1]
            if first and first[0] is param:
                names = {getattr(d, "id", None) for d in method.decorator_list}
                if names != {"classmethod"} or first[0].arg != func.id:
                    return ()
                subclassed = any(  # `Sub.load()` runs `Sub`'s `__init__`: not read
                    isinstance(other, ast.ClassDef)
                    and any(isinstance(b, ast.Name) and b.id == cls.name for b in other.bases)
                    for other in ast.walk(ctx.tree)
                )
                last = [c for c in ctx.tree.body if getattr(c, "name", None) == cls.name]
                classes = {c.name: c for c in ctx.tree.body if isinstance(c, ast.ClassDef)}
                return () if subclassed or last[-1:] != [cls] else _init_of(cls, classes)
    return ()


def argument(call: ast.Call, position: int, name: str) -> ast.expr | None:
    """What ``call`` hands to the parameter (``position``, ``name``); None: nothing, or
    not known (a ``*args`` before it)."""
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if position < 0:
        return None
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if i == position:
            return arg
    return None


def placing_call(call: ast.Call, arg: ast.expr, ctx: Context, cpu: CpuTest) -> str | None:
    """Whether ``call`` hands ``arg`` to a moved parameter of a project callable: ``""``
    where it passes the device that parameter is moved to, something ``cpu`` does not take
    for the CPU (module text; a constant other than a device string is taken for it); else
    the device parameter's name (the callee moves it where its default, or the CPU, says: a
    ``.to(device)`` before would be undone); None: no such call."""
    for (p_at, p), (d_at, d), kept in moved_of_call(call, ctx):
        if p_at != -3 and argument(call, p_at, p) is arg:
            left = device_left(call, (d_at, d), kept, ctx, cpu)
            if left is not None:
                return left
    return None  # (a kept model handed the program's device: its caller moves it)


def device_left(
    call: ast.Call, device: tuple[int, str], kept: Kept, ctx: Context, cpu: CpuTest
) -> str | None:
    """The device parameter's name where ``call`` leaves it to the CPU; "" where it hands
    it the program's device and the callee moves the model; None: its caller moves it."""
    if isinstance(kept, tuple) and kept:  # `clf.to(device)` sets where its inputs go
        later = set_later(call, kept, ctx)
        if later is None or (later and cpu(later[-1])):
            return device[1]
        if later:
            return None  # the program's device, set before any use: its caller moves it
    given = argument(call, *device)
    if given is None or (isinstance(given, ast.Constant) and given.value is None) or cpu(given):
        return device[1]
    return None if kept else ""


def handed_to_placing_callee(
    expr: ast.expr, ctx: Context, not_forward: frozenset[str], cpu: CpuTest
) -> str | None:
    """:func:`placing_call`'s answer where the model ``expr`` builds is handed to a call
    (written in it, or bound to a name whose first use past attribute reads and
    ``not_forward`` methods, ``model.load_state_dict(...)``, is that hand-over); else None."""
    holder = ctx.scopes.parent(expr)
    if isinstance(holder, ast.Call) and expr in holder.args:
        return placing_call(holder, expr, ctx, cpu)
    if isinstance(holder, ast.keyword):
        call = ctx.scopes.parent(holder)
        return placing_call(call, expr, ctx, cpu) if isinstance(call, ast.Call) else None
    target = sole_target(holder)
    if target is None or not isinstance(holder, ast.stmt):
        return None
    binding = ctx.scopes.resolve(target.id, target)
    reads = sorted(
        (
            r
            for r in ctx.scopes.loads_of(target.id)
            if ctx.scopes.resolve(target.id, r) is binding
            and (r.lineno, r.col_offset) > (holder.end_lineno or 0, holder.end_col_offset or 0)
        ),
        key=lambda r: (r.lineno, r.col_offset),
    )
    for read in reads:
        up = ctx.scopes.parent(read)
        if isinstance(up, ast.keyword):
            up = ctx.scopes.parent(up)
        if isinstance(up, ast.Call) and up.func is not read:
            return placing_call(up, read, ctx, cpu)
        if not (isinstance(up, ast.Attribute) and up.value is read):
            return None  # called, stored, returned: it may run before it is handed over
        call = ctx.scopes.parent(up)
        if isinstance(call, ast.Call) and call.func is up and up.attr not in not_forward:
            return None  # `model.generate(x)`: run on the CPU first
    return None

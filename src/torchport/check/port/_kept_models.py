"""The other shapes of a class that keeps a model and moves its inputs to its own device.

``_placing_callees`` reads a plain class whose ``__init__`` stores ``self.model = model``
and ``self.device = device``. The same class is also written:

* as a ``@dataclass`` (fields ``model: nn.Module``, ``device: str = "cpu"``): its
  ``__init__`` stores every field as it is given, in the order of the fields
  (:func:`dataclass_fields`);
* with the device stored by a base class of the file (``super().__init__(device)``,
  ``Base.__init__(self, device)``): what the base's ``__init__`` stores, each parameter
  mapped to what the call hands it (:func:`base_call`, :func:`base_of`);
* with the device set by a method (``def to(self, d): self.device = d``, ``set_device``):
  the device is where the last such call on the object says (:func:`setters_of`);
* with the device from elsewhere than a parameter of its own: a key of ``**kwargs``
  defaulting to the CPU (``kwargs.get("device", "cpu")``: read as a keyword-only
  parameter, :func:`kwargs_key`), a property returning another attribute
  (``self._device``: :func:`through_properties`), a class attribute, or any value naming
  the CPU and no other device (``getattr(config, "device", "cpu")``): the CPU where the
  call hands nothing else (:func:`may_be_cpu`, :func:`class_cpu`).

The same holds where the class is the model itself (an ``nn.Module`` moving its input, or
making its state, on ``self.device``): the instance is what keeps its inputs there.

Syntax only; a shape not read here is no kept class (the caller's answer stands).
"""

from __future__ import annotations

import ast

from torchport._device_types import CPU, DEVICE_TYPES
from torchport.check._context import Context
from torchport.check._nodes import sole_target

__all__ = [
    "base_call",
    "base_of",
    "class_cpu",
    "cpu_constant",
    "dataclass_fields",
    "inputs_moved_to",
    "kwargs_key",
    "may_be_cpu",
    "own_init",
    "parameter_or_cpu",
    "plain_reads",
    "set_later",
    "setters_of",
    "through_properties",
]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_FIELD_WORDS = frozenset({"default", "default_factory", "repr", "compare", "hash", "metadata"})
_OTHER_DEVICES = DEVICE_TYPES - {CPU}
_DECORATOR_WORDS = frozenset({"eq", "order", "frozen", "repr", "unsafe_hash", "slots"})


def dataclass_fields(cls: ast.ClassDef) -> list[tuple[int, str]] | None:
    """``(position, name)`` of each parameter a plain ``@dataclass``'s ``__init__`` takes
    (-1: keyword-only), in order; None where ``cls`` is not one this reads: another
    decorator, a base class, ``init=False``, an ``__init__``/``__post_init__``/``__new__``
    of its own, ``InitVar`` or ``field(init=False, ...)``."""
    if len(cls.decorator_list) != 1 or cls.bases or cls.keywords:
        return None
    decorator = cls.decorator_list[0]
    keyword_only = False
    if isinstance(decorator, ast.Call):
        words = {k.arg: k.value for k in decorator.keywords}
        if decorator.args or not set(words) <= _DECORATOR_WORDS | {"kw_only"}:
            return None
        only = words.get("kw_only")
        if only is not None and not isinstance(only, ast.Constant):
            return None
        keyword_only = bool(only is not None and only.value)
        decorator = decorator.func
    name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
    if name != "dataclass":
        return None
    fields: list[tuple[int, str]] = []
    for stmt in cls.body:
        if isinstance(stmt, _FUNCTIONS) and stmt.name in ("__init__", "__post_init__", "__new__"):
            return None
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        note = ast.unparse(stmt.annotation)
        if "ClassVar" in note:
            continue
        if "KW_ONLY" in note:
            keyword_only = True
            continue
        if "InitVar" in note or not _plain_default(stmt.value):
            return None
        fields.append((-1 if keyword_only else len(fields), stmt.target.id))
    return fields


def _plain_default(value: ast.expr | None) -> bool:
    """A default that makes a parameter of ``__init__`` (not ``field(init=False)``)."""
    if not isinstance(value, ast.Call):
        return True
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    words = all(k.arg in _FIELD_WORDS for k in value.keywords)
    return name != "field" or (not value.args and words)


def base_of(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> ast.ClassDef | None:
    """The base class of ``cls`` (it has a single one), where it is a module-level class of
    the file."""
    if len(cls.bases) != 1 or not isinstance(cls.bases[0], ast.Name):
        return None
    base = classes.get(cls.bases[0].id)
    return base if base is not None and base is not cls else None


def base_call(stmt: ast.stmt, own: str, base: ast.ClassDef) -> tuple[ast.Call, int] | None:
    """``super().__init__(...)`` or ``Base.__init__(self, ...)`` as a statement: the call,
    and how many of its positional arguments come before the base's own (``self``: 1)."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    if call.func.attr != "__init__":
        return None
    head = call.func.value
    if isinstance(head, ast.Call) and getattr(head.func, "id", None) == "super" and not head.args:
        return call, 0
    first = call.args[:1]
    if (
        isinstance(head, ast.Name)
        and head.id == base.name
        and first
        and isinstance(first[0], ast.Name)
        and first[0].id == own
    ):
        return call, 1
    return None


def inputs_moved_to(cls: ast.ClassDef, init: ast.AST | None) -> frozenset[str]:
    """Attributes ``a`` that a method of ``cls`` other than ``init`` moves a value to, or
    makes one on (``x.to(self.a)``, ``torch.as_tensor(x, device=self.a)``; ``self`` its
    first parameter)."""
    found: set[str] = set()
    for method in cls.body:
        if not isinstance(method, _FUNCTIONS) or method is init:
            continue
        params = [*method.args.posonlyargs, *method.args.args]
        if not params:
            continue  # a static method with no parameter: no `self`
        own = params[0]
        for node in ast.walk(method):
            if not isinstance(node, ast.Call):
                continue
            first = node.args[:1] if getattr(node.func, "attr", None) == "to" else []
            for target in (*first, *(k.value for k in node.keywords if k.arg == "device")):
                if (
                    isinstance(target, ast.Attribute)
                    and getattr(target.value, "id", None) == own.arg
                ):
                    found.add(target.attr)
    return frozenset(found)


def own_init(cls: ast.ClassDef) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """``cls``'s own ``__init__`` (its last definition; None: rebound by an assignment)."""
    init = None
    for stmt in cls.body:
        if isinstance(stmt, _FUNCTIONS) and stmt.name == "__init__":
            init = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == "__init__" for t in targets):
                init = None
    return init


def setters_of(classes: list[ast.ClassDef], attr: str, init: ast.AST | None) -> tuple[str, ...]:
    """The methods of ``classes`` (a class and its bases) other than ``init`` that set
    ``self.<attr>`` (``def to(self, d): self.device = d``), sorted."""
    found: set[str] = set()
    for cls in classes:
        for method in cls.body:
            if not isinstance(method, _FUNCTIONS) or method is init or method.name == "__init__":
                continue
            params = [*method.args.posonlyargs, *method.args.args]
            if not params:
                continue
            own = params[0].arg
            for node in ast.walk(method):
                if (
                    isinstance(node, ast.Attribute)
                    and not isinstance(node.ctx, ast.Load)
                    and node.attr == attr
                    and isinstance(node.value, ast.Name)
                    and node.value.id == own
                ):
                    found.add(method.name)
    return tuple(sorted(found))


def cpu_constant(value: ast.expr | None) -> bool:
    """``"cpu"`` or ``torch.device("cpu")`` (module text)."""
    value = _inside_device(value)
    return isinstance(value, ast.Constant) and value.value == "cpu"


def _inside_device(value: ast.expr | None) -> ast.expr | None:
    """``x`` of ``torch.device(x)`` (module text); else ``value``."""
    if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
        func = value.func
        if getattr(func, "attr", getattr(func, "id", None)) == "device":
            return value.args[0]
    return value


def may_be_cpu(value: ast.expr | None) -> bool:
    """A value that names the CPU and no other device: ``"cpu"`` anywhere in it
    (``getattr(config, "device", "cpu")``, ``torch.device(opts.get("device", "cpu"))``), and
    no other device string nor an availability test (a CUDA-or-CPU choice is TP109's)."""
    if value is None:
        return False
    cpu = False
    for node in ast.walk(value):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            word = node.value.split(":")[0]
            if word == CPU:
                cpu = True
            elif word in _OTHER_DEVICES:
                return False
        elif isinstance(node, ast.Attribute) and node.attr in ("is_available", "device_count"):
            return False
    return cpu


def parameter_or_cpu(value: ast.expr) -> ast.expr:
    """The parameter of ``p or "cpu"``, ``p if p is not None else "cpu"`` (``p if p``,
    ``"cpu" if p is None else p``, ``"cpu" if not p else p``): the CPU only where ``p`` is
    None (or false), so the device given is kept; else ``value`` itself."""
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        return value.values[0]
    if not isinstance(value, ast.IfExp):
        return value
    test, yes, no = value.test, value.body, value.orelse
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and _none(test.comparators[0]):
        negated, test = isinstance(test.ops[0], ast.Is), test.left
    elif negated:
        test = test.operand  # type: ignore[attr-defined]
    kept, fallback = (no, yes) if negated else (yes, no)
    same = isinstance(test, ast.Name) and isinstance(kept, ast.Name) and test.id == kept.id
    return kept if same and cpu_constant(fallback) else value


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def kwargs_key(value: ast.expr | None, kwargs: str | None) -> str | None:
    """``k`` of ``kwargs.get("k", "cpu")`` (``kwargs``: the ``**`` parameter's name), or of
    ``torch.device(kwargs.get(...))``: a keyword-only parameter defaulting to the CPU."""
    if kwargs is None:
        return None
    value = _inside_device(value)  # `torch.device(kwargs.get(...))`
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("get", "pop")
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == kwargs
        and len(value.args) == 2
        and not value.keywords
        and isinstance(value.args[0], ast.Constant)
        and isinstance(value.args[0].value, str)
        and cpu_constant(value.args[1])
    ):
        return None
    return value.args[0].value


def class_cpu(classes: list[ast.ClassDef], attr: str) -> bool:
    """Whether the first of ``classes`` (a class and its bases) whose body binds ``attr``
    binds it to a value :func:`may_be_cpu` takes for the CPU (``device = "cpu"``), or as a
    property returning one (``return torch.device("cpu")``)."""
    for cls in classes:
        for stmt in cls.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
                    return may_be_cpu(stmt.value)
            elif isinstance(stmt, _FUNCTIONS) and stmt.name == attr:  # a property's one return
                body = [b for b in stmt.body if not _docstring(b)]
                ret = body[0] if len(body) == 1 and stmt.decorator_list else None
                return isinstance(ret, ast.Return) and may_be_cpu(ret.value)
    return False


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def through_properties(classes: list[ast.ClassDef], attrs: frozenset[str]) -> frozenset[str]:
    """``attrs`` and the attributes read by the properties among them: a ``@property``
    ``device`` of one of ``classes`` whose body is ``return self._device`` (or
    ``torch.device(self._device)``) adds ``_device``."""
    found = set(attrs)
    for cls in classes:
        for stmt in cls.body:
            if not (isinstance(stmt, _FUNCTIONS) and stmt.name in attrs):
                continue
            decorators = [getattr(d, "id", None) for d in stmt.decorator_list]
            params = [*stmt.args.posonlyargs, *stmt.args.args]
            if decorators != ["property"] or len(params) != 1 or len(stmt.body) != 1:
                continue
            value = stmt.body[0].value if isinstance(stmt.body[0], ast.Return) else None
            value = _inside_device(value)
            if (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id == params[0].arg
            ):
                found.add(value.attr)
    return frozenset(found)


def plain_reads(cls: ast.ClassDef, init: ast.AST | None) -> bool:
    """Whether every read of the attributes ``cls``'s methods move values to
    (:func:`inputs_moved_to`, through its properties) is such a move, ``device=``, or a
    property's return: a ``torch.device`` there in place of ``"cpu"`` changes nothing else
    (no ``self.device == "cpu"``, no ``str(self.device)``)."""
    attrs = through_properties([cls], inputs_moved_to(cls, init))
    for method in cls.body:
        if not isinstance(method, _FUNCTIONS) or method is init:
            continue
        params = [*method.args.posonlyargs, *method.args.args]
        if not params:
            continue
        own = params[0].arg
        uses: set[int] = set()
        for node in ast.walk(method):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "to":
                uses.update(id(a) for a in node.args[:1])
            if isinstance(node, ast.Call):
                uses.update(id(k.value) for k in node.keywords if k.arg == "device")
            elif isinstance(node, ast.Return) and node.value is not None:
                uses.add(id(node.value))
        for node in ast.walk(method):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and node.attr in attrs
                and isinstance(node.value, ast.Name)
                and node.value.id == own
                and id(node) not in uses
            ):
                return False
    return True


def set_later(call: ast.Call, setters: tuple[str, ...], ctx: Context) -> list[ast.expr] | None:
    """The devices handed to ``setters`` on the object ``call`` makes, in order: each a
    statement ``obj.set_device(d)`` in the block of ``obj = call``, after it and before any
    other use of ``obj`` (or ``call.to(d)`` chained); [] where none is called; None where
    the object goes where a setter may be called unseen (handed on, set in a branch)."""
    holder = ctx.scopes.parent(call)
    if isinstance(holder, ast.Attribute) and holder.value is call:
        up = ctx.scopes.parent(holder)
        if holder.attr not in setters:
            return []  # `Clf(model).run(x)`: used at once
        return [up.args[0]] if isinstance(up, ast.Call) and len(up.args) == 1 else None
    target = sole_target(holder)
    if target is None or not isinstance(holder, ast.stmt):
        return None
    block = _block_of(holder, ctx)
    scope = ctx.scopes.resolve(target.id, target)
    reads = sorted(
        (r for r in ctx.scopes.loads_of(target.id) if ctx.scopes.resolve(target.id, r) is scope),
        key=lambda r: (r.lineno, r.col_offset),
    )
    found: list[ast.expr] = []
    used = False
    for read in reads:
        up = ctx.scopes.parent(read)
        if not isinstance(up, ast.Attribute) or up.value is not read:
            return None  # handed on, stored, returned: set where this does not look
        if up.attr not in setters:
            used = True
            continue
        set_call = ctx.scopes.parent(up)
        stmt = ctx.scopes.parent(set_call) if set_call is not None else None
        if (
            used
            or not isinstance(set_call, ast.Call)
            or set_call.func is not up
            or len(set_call.args) != 1
            or not isinstance(stmt, ast.Expr)
            or block is None
            or not any(s is stmt for s in block)
            or (stmt.lineno, stmt.col_offset) < (holder.lineno, holder.col_offset)
        ):
            return None
        found.append(set_call.args[0])
    return found


def _block_of(stmt: ast.stmt, ctx: Context) -> list[ast.stmt] | None:
    """The statement list ``stmt`` stands in."""
    parent = ctx.scopes.parent(stmt)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None

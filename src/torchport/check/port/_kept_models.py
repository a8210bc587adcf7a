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
  the device is where the last such call on the object says (:func:`setters_of`).

Syntax only; a shape not read here is no kept class (the caller's answer stands).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._nodes import sole_target

__all__ = [
    "base_call",
    "base_of",
    "cpu_constant",
    "dataclass_fields",
    "inputs_moved_to",
    "own_init",
    "set_later",
    "setters_of",
]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_FIELD_WORDS = frozenset({"default", "default_factory", "repr", "compare", "hash", "metadata"})
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
    if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
        func = value.func
        if getattr(func, "attr", getattr(func, "id", None)) == "device":
            value = value.args[0]
    return isinstance(value, ast.Constant) and value.value == "cpu"


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

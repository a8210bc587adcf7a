"""What the attributes of the file's own classes hold, as far as the port can tell.

``self.x`` in a method of a class of the file, and ``Cfg.x`` read through the
class: OTHER when every value the file stores there is a number or string, DEVICE
when every one is a tensor made on the device or moved there, NUMPY when every one
is a numpy array (for ``self.x``),
the join of the class body's values for a class attribute, UNKNOWN whenever the
file stores that attribute anywhere else. Asked by :class:`ValueKinds`, which
it asks back for the kind of each stored value. Syntax only; imports no torch.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check._context import Context
from torchport.check.port._instances import made_by
from torchport.check.port._reaching import Reaching
from torchport.check.port._structure import attribute_table
from torchport.check.port._value_kind import Kind, join
from torchport.check.semantic import BindingKind

__all__ = ["ClassAttributes"]


class ClassAttributes:
    """The attributes of one file's classes; every walk of a class is made once and kept."""

    def __init__(self, ctx: Context, kind_of: Callable[[ast.expr], Kind]) -> None:
        self._ctx = ctx
        self._kind_of = kind_of  # ValueKinds.of, through a weak reference
        self._own_attrs: dict[tuple[int, str], Kind] = {}  # `self.x` of a class, by (class, x)
        self._class_stores: dict[int, dict[str, list[ast.expr | None]]] = {}
        self._own_store_ids: dict[int, set[int]] = {}
        self._attr_stores: dict[str, list[ast.Attribute]] | None = None
        self._stored_attrs: set[str] | None = None  # attributes the file assigns (`obj.x = ...`)
        self._body_binders: dict[str, list[ast.ClassDef]] | None = None  # by the names bound

    def file_class(self, name: ast.expr) -> ast.ClassDef | None:
        """The class of the file ``name`` is bound to (its one binding), if it is one."""
        if not isinstance(name, ast.Name):
            return None
        found = self._ctx.scopes.bindings(name.id, name)
        node = found[0].node if len(found) == 1 else None
        return node if isinstance(node, ast.ClassDef) else None

    def own_attribute(self, cls: ast.ClassDef, attr: str) -> Kind:
        """What ``self.<attr>`` holds in a method of ``cls``: OTHER when every store of it in
        the class's methods is a number or string (``self.total_it = 0``, ``+= 1``,
        ``self.discount = discount`` with ``discount=0.99``), DEVICE when every store is a
        tensor made on the device or moved there, NUMPY when every one is a numpy array
        (``self.rew_buf = np.zeros(size)``), else UNKNOWN.

        Unknown as well when the file stores that attribute on anything but ``self``
        (``agent.total_it = ...``) other than a number or string literal (``agent.I = 1``),
        or the class body binds it too. Stored nowhere but the class body (``clip_param =
        0.1``), it is what the body binds when that is a number or string, no other class
        of the file binds it, and nothing stores it as an attribute.
        """
        key = (id(cls), attr)
        found = self._own_attrs.get(key)
        if found is not None:
            return found
        self._own_attrs[key] = Kind.UNKNOWN  # asked again while worked out: a cycle
        kind = self._own_attribute(cls, attr)
        self._own_attrs[key] = kind
        return kind

    def _own_attribute(self, cls: ast.ClassDef, attr: str) -> Kind:
        values = self._self_stores(cls).get(attr)
        if not values and not self._bound_by_another_class(cls, attr):
            # `clip_param = 0.1` in the class body, read as `self.clip_param`: stored
            # nowhere else in the file (class_attribute asks), no other class binds it
            kind = self.class_attribute(cls, attr)
            return Kind.OTHER if kind is Kind.OTHER else Kind.UNKNOWN
        if not values or any(v is None for v in values) or self._stored_elsewhere(cls, attr):
            return Kind.UNKNOWN  # unpacked into, or annotated only: not told
        kind = join(self._kind_of(v) for v in values if v is not None)
        # DEVICE: every store made on the device or moved there (`self.support =
        # torch.linspace(...).to(device)`, `torch.tensor(v, device=self.device)`);
        # NUMPY: every one a numpy array (`self.rew_buf = np.zeros(size)`)
        return kind if kind in (Kind.OTHER, Kind.DEVICE, Kind.NUMPY) else Kind.UNKNOWN

    def holds_settings_only(self, cls: ast.ClassDef) -> bool:
        """Whether an object of ``cls`` is a record of settings: no base but ``object``,
        no method but ``__init__`` (nothing to call on it that could give a tensor), and
        every attribute ``__init__`` stores on ``self`` a number or string
        (:meth:`own_attribute` OTHER: ``class Params: def __init__(self): self.gamma =
        0.99``). Nothing to move, handed anywhere."""
        if cls.keywords or any(getattr(b, "id", None) != "object" for b in cls.bases):
            return False
        for stmt in cls.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if stmt.name != "__init__" or stmt.decorator_list:
                    return False
            elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                return False  # a class attribute, a nested class: not told here
        stores = self._self_stores(cls)
        return bool(stores) and all(self.own_attribute(cls, a) is Kind.OTHER for a in stores)

    def instance_class(self, value: ast.expr, reaching: Reaching) -> ast.ClassDef | None:
        """The class of the file whose instance ``value`` is, when every binding of the
        name that may reach it is ``Cls(...)`` of that one class (or ``Cls(...).to(...)``,
        as the port writes it)."""
        if not isinstance(value, ast.Name):
            return None
        classes: set[ast.ClassDef] = set()
        for b in reaching.may_reach(value):
            bound = made_by(getattr(b, "value", None))
            if b.kind is not BindingKind.ASSIGN or not isinstance(bound, ast.Call):
                return None
            cls = self.file_class(bound.func)
            if cls is None:
                return None
            classes.add(cls)
        return classes.pop() if len(classes) == 1 else None

    def stored(self, cls: ast.ClassDef, attr: str) -> list[ast.expr]:
        """The values the class's code stores as ``self.<attr>`` (those it can tell)."""
        return [v for v in self._self_stores(cls).get(attr, []) if v is not None]

    def _self_stores(self, cls: ast.ClassDef) -> dict[str, list[ast.expr | None]]:
        """Per attribute, the values the class's code stores as ``self.<attr>`` (None: one
        it cannot tell, as ``self.a, self.b = f()``); one walk of the class, kept."""
        found = self._class_stores.get(id(cls))
        if found is not None:
            return found
        found = {}
        for node in ast.walk(cls):
            targets: list[ast.expr]
            value: ast.expr | None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets, value = [node.target], node.value
            else:
                continue
            for target in targets:
                if _is_self_attribute(target):
                    assert isinstance(target, ast.Attribute)
                    found.setdefault(target.attr, []).append(value)
                elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
                    for n in ast.walk(target):
                        if isinstance(n, ast.Attribute):
                            found.setdefault(n.attr, []).append(None)
        self._class_stores[id(cls)] = found
        return found

    def _stored_elsewhere(self, cls: ast.ClassDef, attr: str) -> bool:
        """Whether the file stores ``attr`` other than as ``self.<attr>`` in ``cls``, or the
        class body binds it too (``total_it = 0`` as a class attribute)."""
        if self._attr_stores is None:
            self._attr_stores = {}
            for nodes in attribute_table(self._ctx).values():  # (asked with any: no order)
                for n in nodes:
                    if not isinstance(n.ctx, ast.Load):
                        self._attr_stores.setdefault(n.attr, []).append(n)
        own = self._own_store_ids.get(id(cls))
        if own is None:
            own = self._own_store_ids[id(cls)] = {
                id(n) for n in ast.walk(cls) if _is_self_attribute(n)
            }
        if any(
            id(n) not in own and not self._literal_store(n) for n in self._attr_stores.get(attr, ())
        ):
            return True
        return any(
            isinstance(t, ast.Name) and t.id == attr
            for stmt in cls.body
            if isinstance(stmt, (ast.Assign, ast.AnnAssign))
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
        )

    def _literal_store(self, target: ast.Attribute) -> bool:
        """``agent.I = 1`` (or ``+= 1``): a number, string or bool stored from outside,
        no tensor (what the class's own stores hold still decides the kind)."""
        holder = self._ctx.scopes.parent(target)
        if not isinstance(holder, (ast.Assign, ast.AugAssign)):
            return False
        targets = holder.targets if isinstance(holder, ast.Assign) else [holder.target]
        if len(targets) != 1 or targets[0] is not target:
            return False
        value = holder.value
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
            value = value.operand
        return isinstance(value, ast.Constant) and isinstance(value.value, (int, float, str))

    def _bound_by_another_class(self, cls: ast.ClassDef, attr: str) -> bool:
        """Whether a class of the file other than ``cls`` binds ``attr`` in its body (a
        subclass's ``clip_param = torch.ones(1)`` would be what ``self`` reads there)."""
        if self._body_binders is None:  # every class's body names, in one walk of the file
            self._body_binders = {}
            for other in ast.walk(self._ctx.tree):
                if isinstance(other, ast.ClassDef):
                    for stmt in other.body:
                        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                            targets = (
                                stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                            )
                            for t in targets:
                                if isinstance(t, ast.Name):
                                    self._body_binders.setdefault(t.id, []).append(other)
        return any(other is not cls for other in self._body_binders.get(attr, ()))

    def class_attribute(self, cls: ast.ClassDef, attr: str) -> Kind:
        """What a class attribute read through the class holds (``Cfg.x``).

        The values its body assigns; unknown when the file assigns it anywhere
        else (``Cfg.x = ...``), or the body does not assign it (a method).
        """
        values: list[ast.expr] = []
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign):
                targets, value = stmt.targets, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
            else:
                continue
            if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
                values.append(value)
        if self._stored_attrs is None:
            self._stored_attrs = {
                n.attr
                for n in ast.walk(self._ctx.tree)
                if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)
            }
        if not values or attr in self._stored_attrs:
            return Kind.UNKNOWN
        return join(self._kind_of(v) for v in values)


def _is_self_attribute(node: ast.AST) -> bool:
    """``self.<anything>``."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )

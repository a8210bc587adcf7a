"""Whether every construction of a file's own class passes an ``__init__`` parameter.

``rules/_passed_defaults.py`` leaves a private or nested class's ``__init__(..., device="cuda")``
alone when the default never runs. A construction of class ``C`` is more than a call
``C(...)``: a subclass's ``super().__init__(...)`` runs ``C.__init__``, a subclass without its
own ``__init__`` is built with ``C.__init__``, and a dict of classes (``_MODELS = {"a": C}``)
builds ``C`` where it is read and called (``_MODELS[name](...)``, ``_MODELS.get(name)(...)``,
``cls = _MODELS[name]`` then ``cls(...)``). Held-out sample AC, class F3
(omni-medical-suite's ``active_learning_pipeline.py``: ``class _Diversity(_Base)``, a dict
``SAMPLERS`` read by ``SAMPLERS.get(kind)(model, device)``).

The invariant: **the default is left alone only if every way the file builds the class, or
runs its ``__init__``, passes the parameter, and neither the class nor anything that reaches
it escapes** (reaches code that may build it without the argument). Any doubt keeps the
finding. Each class involved (the class, its subclasses in the file, to any depth) and each
dict holding one is *followed*: its name is private to the module (a leading underscore,
not a dunder), or the scope is a function, or it is a public name of a module that no other
file of its repository names and no package ships (``rules/_named_elsewhere.py``: held-out
sample AC's F3 file is a script of that kind, its classes and ``SAMPLERS`` public); it is
bound once in the scope (a ``class`` or, for a dict, ``_R = {...}``, at module level or
in a class body), and every mention of it is one of:

* the callee of a call (``C(...)``: it must pass the parameter where the class's
  ``__init__`` runs, below);
* the single base of a class of the scope, itself followed (``class D(C)``; a second base, a
  keyword or a metaclass may reorder what ``super()`` reaches, and keeps the finding);
* a value of a dict literal bound to a followed name whose every mention is ``_R[k](...)``,
  ``_R.get(k)(...)`` (or ``_R.get(k, d)``), or ``x = _R[k]`` / ``x = _R.get(k)`` bound
  once in a function whose every other mention of ``x`` is the callee of a call, or
  ``k in _R``/``_R.keys()``; a dict bound in a class body is read only as ``self._R`` in
  that class's methods or ``Owner._R`` (the attribute name spelled nowhere else);
* the default of such a read, ``_R.get(k, C)`` (built where ``k`` is not held);
* an annotation, or the class in ``isinstance``/``issubclass`` (none builds it).

Anything else escapes and keeps the finding: the class as a value (``return C``, ``f(C)``,
``[C]``), ``C.__init__(self, ...)`` by hand, ``C.create()``, a dict also iterated, copied,
updated, stored into or handed on, a public dict or subclass (another module may import it:
``rules/_project_calls.py`` decides public names, where a subclass or a registry escapes),
``cls(...)``/``type(self)(...)``/``self.__class__(...)`` anywhere in the hierarchy, ``super``
but as ``super().attr`` or ``super(Own, self).attr`` (``super(C, self).__init__()`` in a
grandchild skips its parent's ``__init__``), a decorator on a class, and a scope calling
``eval``/``exec``/``locals``/``globals``/``vars`` or naming ``__subclasses__``.

Which ``__init__`` a construction runs: a class that defines ``__init__`` runs its own; one
that does not runs its base's with the same arguments. So ``C``'s default never runs when
every call of ``C``, and every call of each subclass that inherits ``C.__init__`` (through
subclasses without their own, to any depth), passes the parameter, and each
``super().__init__(...)`` in a direct subclass with its own ``__init__`` (no other call of
``C.__init__`` is made from there) passes it. A subclass with its own ``__init__`` ends
what must pass (its constructions run its own), but its hierarchy must still be followed. The
parameter is passed by keyword, or at its position with no ``*args`` at or before it
(``**kwargs`` may not hold it), as for a function. The classes above ``C`` in the file are
followed too (bound once, one base each, ending in ``object``, ``abc.ABC`` or
``torch.nn.Module``; none builds ``cls(...)``) but their own calls need not pass.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check._context import Context

__all__ = ["every_construction_passes"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_INTROSPECTION = frozenset({"eval", "exec", "locals", "globals", "vars"})
# (`abc.ABC`: ABCMeta builds as `type` does, refusing a class with abstract methods left)
_BASES = frozenset({"object", "torch.nn.Module", "torch.nn.modules.module.Module", "abc.ABC"})
_CHECKS = frozenset({"isinstance", "issubclass"})

Passes = Callable[[ast.Call], bool]


def every_construction_passes(
    cls: ast.ClassDef, scope: ast.AST, ctx: Context, passes: Passes
) -> bool:
    """Whether every construction of ``cls`` (defined in ``scope``, a module or a function)
    and every run of its ``__init__`` passes the parameter, ``passes(call)`` telling whether
    one call (of the class, or ``super().__init__``) passes it (the module docstring)."""
    key = f"class_constructions.scope:{id(scope)}"  # Context.memo's: one read per scope
    view = ctx.memo.get(key)
    if not isinstance(view, _Scope) or view.scope is not scope:
        view = ctx.memo[key] = _Scope(scope, ctx)
    view.built = 0
    if not view.readable or not view.followed(cls.name):
        return False
    if view.classes.get(cls.name) is not cls:
        return False
    base: ast.ClassDef | None = cls
    seen: set[str] = set()
    while base is not None:  # the classes above: followed, none builds itself
        if base.name in seen or view.defined.get(base.name) != 1 or not view.plain(base):
            return False
        if not view.only_read(base.name):
            return False
        seen.add(base.name)
        above = view.base_class(base)
        if above is None and not view.top_base(base):
            return False
        base = above
    # no construction of it or a subclass at all: nothing shows the default unused (as for
    # a function with no call)
    return view.constructions_pass(cls, passes, must=True, seen=set()) and view.built > 0


class _Scope:
    """The mentions of names in one scope, read once."""

    def __init__(self, scope: ast.AST, ctx: Context) -> None:
        self.scope, self.ctx = scope, ctx
        self.parents: dict[int, ast.AST] = {}
        self.names: dict[str, list[ast.Name]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.defined: dict[str, int] = {}
        self.readable = True
        self.built = 0  # constructions seen by `constructions_pass`
        self.spelled: frozenset[str] | None = None  # what `_unnamed` asks, read on first use
        self.attrs: frozenset[str] = frozenset()
        for node in ast.walk(scope):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
                self.defined[node.name] = self.defined.get(node.name, 0) + 1
            elif isinstance(node, _FUNCTIONS):
                self.defined[node.name] = self.defined.get(node.name, 0) + 1
            elif isinstance(node, ast.Name):
                self.names.setdefault(node.id, []).append(node)
                if node.id in _INTROSPECTION:
                    self.readable = False
            elif isinstance(node, ast.Attribute) and node.attr == "__subclasses__":
                self.readable = False

    def followed(self, name: str) -> bool:
        """A name no other module reaches, bound once by a ``class`` or a ``def``."""
        return self.defined.get(name) == 1 and self._unnamed(name) and self._local(name)

    def _local(self, name: str) -> bool:
        """Private to the module (or the scope a function), or a public name of a module of
        its repository that no other file names and no package ships."""
        if isinstance(self.scope, _FUNCTIONS) or (name.startswith("_") and not name.endswith("__")):
            return True
        from torchport.check.rules._named_elsewhere import named_only_here

        return isinstance(self.scope, ast.Module) and named_only_here(self.ctx.path, name)

    def only_read(self, name: str) -> bool:
        """No name ``name`` is bound or deleted but by its ``class``, and nothing spells it
        otherwise."""
        loads = all(isinstance(n.ctx, ast.Load) for n in self.names.get(name, []))
        return loads and self._unnamed(name)

    def _unnamed(self, name: str, *, attributes: bool = True) -> bool:
        """No ``global``, import, attribute (where ``attributes``), string or parameter
        spells ``name`` (the scope's spellings read in one walk, on first use)."""
        if self.spelled is None:
            spelled: set[str] = set()
            attrs: set[str] = set()
            for node in ast.walk(self.scope):
                if isinstance(node, (ast.Global, ast.Nonlocal)):
                    spelled.update(node.names)
                elif isinstance(node, ast.alias):
                    spelled.update((node.name, node.asname or node.name))
                elif isinstance(node, ast.Attribute):
                    attrs.add(node.attr)
                elif isinstance(node, ast.Constant) and type(node.value) is str:
                    spelled.add(node.value)
                elif isinstance(node, ast.arg):
                    spelled.add(node.arg)
            self.spelled, self.attrs = frozenset(spelled), frozenset(attrs)
        return name not in self.spelled and not (attributes and name in self.attrs)

    def plain(self, cls: ast.ClassDef) -> bool:
        """No decorator, keyword or metaclass, at most one base, at most one ``__init__``
        (none bound by assignment), nothing building ``cls(...)``, ``super`` only as
        ``super().attr`` or ``super(Own, self).attr``."""
        if cls.decorator_list or cls.keywords or len(cls.bases) > 1:
            return False
        inits = [s for s in cls.body if isinstance(s, _FUNCTIONS) and s.name == "__init__"]
        if len(inits) > 1:
            return False
        for node in ast.walk(cls):
            if isinstance(node, ast.Name) and node.id in ("cls", "type"):
                return False
            if isinstance(node, ast.Name) and node.id == "__init__":
                return False  # `__init__ = ...` in the body
            attr = getattr(node, "attr", None)
            if attr in ("__class__", "__init__") and not _super_call(node.value, cls.name):  # type: ignore[attr-defined]
                return False
            if isinstance(node, ast.Name) and node.id == "super":
                call = self.parents.get(id(node))
                if not (isinstance(call, ast.Call) and call.func is node):
                    return False
                holder = self.parents.get(id(call))
                if not (isinstance(holder, ast.Attribute) and holder.value is call):
                    return False
                if not _super_call(call, cls.name):
                    return False
        return True

    def base_class(self, cls: ast.ClassDef) -> ast.ClassDef | None:
        """The file's class ``cls`` derives from (its one base), if it is one of the scope."""
        if len(cls.bases) != 1 or not isinstance(cls.bases[0], ast.Name):
            return None
        return self.classes.get(cls.bases[0].id)

    def top_base(self, cls: ast.ClassDef) -> bool:
        """``cls`` derives from nothing, ``object`` or ``torch.nn.Module``."""
        return all((self.ctx.qualname(b) or getattr(b, "id", "")) in _BASES for b in cls.bases)

    def constructions_pass(
        self, cls: ast.ClassDef, passes: Passes, *, must: bool, seen: set[str]
    ) -> bool:
        """Every mention of ``cls`` is followed, and where its constructions run the
        ``__init__`` asked about (``must``), each passes the parameter."""
        if cls.name in seen or not self.followed(cls.name) or not self.plain(cls):
            return False
        seen.add(cls.name)
        for name in self.names.get(cls.name, []):
            parent = self.parents.get(id(name))
            if not isinstance(name.ctx, ast.Load):
                return False
            if isinstance(parent, ast.Call) and parent.func is name:
                self.built += 1
                if must and not passes(parent):
                    return False
            elif isinstance(parent, ast.ClassDef) and parent.bases[:1] == [name]:
                # any `super().__init__(...)` in it runs this `__init__` (not only its own's)
                if must and not all(passes(c) for c in _super_inits(parent)):
                    return False
                own = any(isinstance(s, _FUNCTIONS) and s.name == "__init__" for s in parent.body)
                if not self.constructions_pass(parent, passes, must=must and not own, seen=seen):
                    return False
            elif isinstance(parent, ast.Dict) and any(v is name for v in parent.values):
                calls = self._registry_calls(parent)
                if calls is None or (must and not all(passes(c) for c in calls)):
                    return False
                self.built += len(calls)
            elif (table := self._default_of_get(name, parent)) is not None:
                calls = self._registry_calls(table)  # `_R.get(k, C)`: C where `k` is not held
                if calls is None or (must and not all(passes(c) for c in calls)):
                    return False
                self.built += len(calls)
            elif not self._builds_nothing(name, parent):
                return False
        return True

    def _default_of_get(self, name: ast.Name, parent: ast.AST | None) -> ast.Dict | None:
        """The registry ``table`` where ``name`` is the default of ``table.get(k, name)``."""
        if not (isinstance(parent, ast.Call) and len(parent.args) == 2 and parent.args[1] is name):
            return None
        func = parent.func
        if parent.keywords or not (isinstance(func, ast.Attribute) and func.attr == "get"):
            return None
        return self._table_of(func.value)

    def _builds_nothing(self, name: ast.Name, parent: ast.AST | None) -> bool:
        """An annotation, the class checked by ``isinstance``/``issubclass``, or
        ``super(Own, self)`` within ``Own`` (which :meth:`plain` reads)."""
        if isinstance(parent, ast.Call) and getattr(parent.func, "id", None) == "super":
            return parent.args[:1] == [name] and self._within(name, name.id)
        if isinstance(parent, ast.arg) and parent.annotation is name:
            return True
        if isinstance(parent, _FUNCTIONS) and parent.returns is name:
            return True
        if isinstance(parent, ast.AnnAssign) and parent.annotation is name:
            return True
        if isinstance(parent, ast.Tuple):
            parent = self.parents.get(id(parent))
        return (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id in _CHECKS
            and len(parent.args) == 2
            and name in ast.walk(parent.args[1])
        )

    def _within(self, node: ast.AST, cls: str) -> bool:
        """``node`` is inside the class named ``cls``."""
        parent = self.parents.get(id(node))
        while parent is not None and not (isinstance(parent, ast.ClassDef) and parent.name == cls):
            parent = self.parents.get(id(parent))
        return parent is not None

    def _registry_calls(self, table: ast.Dict) -> list[ast.Call] | None:
        """The calls building what the dict ``table`` holds; None where it may escape."""
        bound = self.parents.get(id(table))
        if isinstance(bound, ast.Assign) and len(bound.targets) == 1 and bound.value is table:
            target = bound.targets[0]
        elif isinstance(bound, ast.AnnAssign) and bound.value is table:
            target = bound.target
        else:
            return None
        if not isinstance(target, ast.Name) or not self._bound_once(target.id):
            return None
        owner = self.parents.get(id(bound))
        if isinstance(owner, ast.ClassDef):  # a class attribute, read as `self._R`, `Owner._R`
            reads = self._attribute_reads(target.id, owner)
        else:
            reads = [m for m in self.names.get(target.id, []) if m is not target]
        calls: list[ast.Call] = []
        for mention in reads or ():
            if self._asks_keys(mention):
                continue  # `k in _R`, `_R.keys()`: no class is read
            read = self._read(mention)
            if read is None:
                return None
            found = self._called(read)
            if found is None:
                return None
            calls.extend(found)
        return None if reads is None else calls

    def _attribute_reads(self, name: str, owner: ast.ClassDef) -> list[ast.expr] | None:
        """Every mention of the class attribute ``name`` of ``owner``: ``self.name`` in its
        methods or ``Owner.name`` (None: the name read bare or of any other object)."""
        if len(self.names.get(name, [])) != 1 or not self.only_read(owner.name):
            return None
        reads: list[ast.expr] = []
        for node in ast.walk(self.scope):
            if not (isinstance(node, ast.Attribute) and node.attr == name):
                continue
            value = node.value
            if not isinstance(node.ctx, ast.Load) or not isinstance(value, ast.Name):
                return None
            own = value.id == "self" and self._within(node, owner.name)
            if value.id != owner.name and not own:
                return None
            reads.append(node)
        return reads

    def _table_of(self, receiver: ast.expr) -> ast.Dict | None:
        """The dict literal a registry read's receiver (``_R``, ``self._R``) is bound to."""
        name = receiver.id if isinstance(receiver, ast.Name) else getattr(receiver, "attr", None)
        stores = [n for n in self.names.get(name or "", []) if isinstance(n.ctx, ast.Store)]
        bound = self.parents.get(id(stores[0])) if len(stores) == 1 else None
        value = getattr(bound, "value", None)
        return value if isinstance(value, ast.Dict) else None

    def _bound_once(self, name: str) -> bool:
        """Followed, and stored exactly once (no ``class``/``def`` of the name); a class
        attribute's reads (``self._R``) are asked by :meth:`_attribute_reads`."""
        stores = [n for n in self.names.get(name, []) if not isinstance(n.ctx, ast.Load)]
        return (
            len(stores) == 1
            and isinstance(stores[0].ctx, ast.Store)
            and name not in self.defined
            and self._unnamed(name, attributes=False)
            and self._local(name)
        )

    def _asks_keys(self, mention: ast.expr) -> bool:
        """``k in _R``, ``k not in _R`` or ``_R.keys()``."""
        parent = self.parents.get(id(mention))
        if isinstance(parent, ast.Compare):
            pairs = zip(parent.ops, parent.comparators, strict=True)
            return any(c is mention and isinstance(op, (ast.In, ast.NotIn)) for op, c in pairs)
        if isinstance(parent, ast.Attribute) and parent.attr == "keys":
            call = self.parents.get(id(parent))
            return isinstance(call, ast.Call) and call.func is parent and not call.args
        return False

    def _read(self, mention: ast.expr) -> ast.expr | None:
        """``_R[k]`` or ``_R.get(k)``/``_R.get(k, d)`` around ``mention``; None otherwise."""
        parent = self.parents.get(id(mention))
        if isinstance(parent, ast.Subscript) and parent.value is mention:
            return parent if isinstance(parent.ctx, ast.Load) else None
        if isinstance(parent, ast.Attribute) and parent.attr == "get":
            call = self.parents.get(id(parent))
            if isinstance(call, ast.Call) and call.func is parent and not call.keywords:
                return call if 1 <= len(call.args) <= 2 else None
        return None

    def _called(self, read: ast.expr) -> list[ast.Call] | None:
        """The calls of what ``read`` gives: called where read, or bound to a local read
        only as a callee."""
        parent = self.parents.get(id(read))
        if isinstance(parent, ast.Call) and parent.func is read:
            return [parent]
        if not (
            isinstance(parent, ast.Assign)
            and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Name)
        ):
            return None
        local = parent.targets[0].id
        function = self._function_of(parent)
        if function is None:
            return None
        mentions = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == local]
        spelled = any(
            (isinstance(n, (ast.Global, ast.Nonlocal)) and local in n.names)
            or (isinstance(n, ast.arg) and n.arg == local)
            for n in ast.walk(function)
        )
        if spelled or sum(not isinstance(n.ctx, ast.Load) for n in mentions) != 1:
            return None
        calls = []
        for mention in mentions:
            if mention is parent.targets[0]:
                continue
            call = self.parents.get(id(mention))
            if not (isinstance(call, ast.Call) and call.func is mention):
                return None
            calls.append(call)
        return calls

    def _function_of(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        parent = self.parents.get(id(node))
        while parent is not None and not isinstance(parent, _FUNCTIONS):
            if isinstance(parent, ast.ClassDef):
                return None
            parent = self.parents.get(id(parent))
        return parent


def _super_call(value: ast.expr, own: str) -> bool:
    """``super()`` or ``super(Own, self)`` (not ``super(Base, self)``, which skips ``Own``'s
    next class)."""
    if not (isinstance(value, ast.Call) and getattr(value.func, "id", None) == "super"):
        return False
    if not value.args and not value.keywords:
        return True
    first = value.args[0] if len(value.args) == 2 and not value.keywords else None
    return isinstance(first, ast.Name) and first.id == own


def _super_inits(cls: ast.ClassDef) -> list[ast.Call]:
    """The calls ``super().__init__(...)`` in ``cls`` (each runs its base's ``__init__``)."""
    return [
        node
        for node in ast.walk(cls)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "__init__"
        and _super_call(node.func.value, cls.name)
    ]

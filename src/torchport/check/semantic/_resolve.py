"""What a name means where it is read: the one resolver every rule asks (``tests/test_claims.py``).

Ruff's rules ask one ``semantic().resolve_qualified_name``; here every rule asks
:meth:`Resolver.qualname` (through ``Context.qualname``) and
:meth:`Resolver.value_of` (through ``Context.value_of``). Both follow Python's
scopes and, where a name has several meanings in one scope, the flow of the
code (which binding reaches the read):

* ``from numba import cuda`` at module level and ``from torch import cuda``
  inside one function: ``cuda.synchronize()`` elsewhere is numba's;
* ``def step(torch, x): torch.cuda.synchronize()``: a parameter, not torch;
* ``from torch.cuda import amp`` then ``amp = MyAmp()``: after the
  assignment, ``amp.autocast`` is no import of anything;
* ``try: import torch`` / ``except ImportError: torch = None``: the fallback
  ``None`` never has attributes, so ``torch.load`` is still torch's;
* a read in a function of a module-level name bound to different things
  (an import and an assignment, two imports): unknown, since the function
  may run after either.

"Unknown" is None, and a rule that gets None stays silent (or reports without
a fix). A name no import binds is never torch's, however it is spelled.

:meth:`Resolver.callee` goes one step further for rules that must see through
indirection (loading security): what a call really calls when the callee is a
name bound to a function (``ld = torch.load; ld(f)``), a
``functools.partial`` of one (with the arguments it fixes), or
``getattr(torch, "load")``. :meth:`Resolver.called` is its sound part: it follows only a
name bound once in the scope it resolves to (``pack = nn.utils.rnn.pack_padded_sequence``,
``R = nn.utils.rnn`` then ``R.pack_padded_sequence``, a ``functools.partial`` of one), so a
call it names calls that function wherever it runs.
"""

from __future__ import annotations

import ast

from torchport.check._records import record
from torchport.check.semantic._binding import Binding, BindingKind, Scope, ScopeKind
from torchport.check.semantic._flow import FlowAnalysis, ScopeQuestions

__all__ = ["Callee", "Resolver"]

_HOPS = 6


@record(frozen=True)
class Callee:
    """What a call calls, seen through aliases and ``functools.partial``.

    ``name`` is the dotted name (``"torch.load"``); ``args`` and ``keywords``
    are those a ``functools.partial`` fixed, before the call's own.
    """

    name: str
    args: tuple[ast.expr, ...] = ()
    keywords: tuple[ast.keyword, ...] = ()


def _placeholder(binding: Binding) -> bool:
    """A binding that stands for "the import failed" or "gone": ``x = None``, ``del x``.

    Such a value has no attributes, so an attribute read of the name can only
    mean the import beside it.
    """
    if binding.kind is BindingKind.DELETE:
        return True
    value = binding.value
    return isinstance(value, ast.Constant) and value.value is None


class Resolver:
    """Name questions over one module: what a name, a dotted name and a call mean where read.

    ``scopes`` answers where names resolve and what binds them there (the
    module's :class:`~torchport.check.semantic._scope.ScopeMap`, which builds
    this object); ``flow`` answers which binding reaches a read.
    """

    def __init__(
        self,
        scopes: ScopeQuestions,
        flow: FlowAnalysis,
        through: dict[str, dict[str, str]] | None = None,
    ) -> None:
        self._scopes = scopes
        self._flow = flow
        # project module -> its names bound to torch's (`c.L` after `import compat as c`:
        # `torch.load`; semantic/_star_names.project_target)
        self._through = through or {}
        self._kept: dict[str, list[tuple[ast.AST | None, ast.expr | None]]] | None = None

    # ------------------------------------------------------------ imports

    def imported(self, name: ast.Name, *, attribute: bool = False) -> str | None:
        """The dotted target of the import that ``name`` means where it is read, or None.

        None: the name is bound by no import there (a parameter, a local, a
        builtin), by a relative import, or by different things that the flow
        does not tell apart. With ``attribute`` (the read is ``name.attr``), a
        ``name = None`` or ``del name`` beside the import does not count: an
        attribute of either can only be the import's.
        """
        scope = self._scopes.resolve(name.id, name)
        found = self._scopes.bindings(name.id, name)
        if not found:
            wildcard = self._scopes.wildcard
            if wildcard is None or scope.kind is not ScopeKind.MODULE:
                return None
            from torchport.check.semantic._star_names import wildcard_target

            return wildcard_target(wildcard, name.id)  # only `from torch import *` binds it
        if scope.kind is ScopeKind.CLASS and not self._flow.definitely_bound(name.id, name):
            return None  # a class body reads the global where its own name is not bound yet
        targets: set[str | None] = set()
        other = False
        for b in found:
            if b.kind is BindingKind.IMPORT:
                targets.add(b.qualified)
            elif not (attribute and _placeholder(b)):
                other = True
        if not targets:
            return None
        if len(targets) == 1 and not other:
            return targets.pop()
        # Several meanings in one scope: the binding every path to this read passes
        # last decides. A free name (read in a nested function) has none: the
        # function may run after any of them.
        if any(b.scope is not scope for b in found):
            return None  # bound by `global` in a function, which may run at any time
        reached = self._flow.reaching(name.id, name)
        if reached is not None and reached.kind is BindingKind.IMPORT:
            return reached.qualified
        return None

    def qualname(self, expr: ast.expr) -> str | None:
        """The dotted name ``expr`` means through the import its root name resolves to.

        ``th.cuda.is_available`` after ``import torch as th`` is
        ``"torch.cuda.is_available"``. None when the root is no import there
        (see :meth:`imported`) or ``expr`` is no dotted name (``f().x``).
        """
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        base = self.imported(expr, attribute=bool(parts))
        if base is None:
            return None
        parts.append(base)
        name = ".".join(reversed(parts))
        if self._through:
            from torchport.check.semantic._star_names import project_target

            return project_target(name, self._through)
        return name

    def is_torch_call(self, call: ast.Call) -> bool:
        """Whether ``call`` calls something of the torch package (``torch.*``), by its imports."""
        name = self.qualname(call.func)
        return name is not None and (name == "torch" or name.startswith("torch."))

    # ------------------------------------------------------------ values

    def binding_at(self, name: ast.Name) -> Binding | None:
        """The binding a read of ``name`` sees, when one is known.

        In the name's own scope: the binding every path to the read passes
        last (:meth:`reaching`), else the only binding there is (one made in a
        loop body or a branch: "if bound, this"). For a free name (a
        module-level ``net`` read in a function): the binding that reaches the
        statement creating the function, else the only one. None when
        different bindings may be seen.
        """
        scope = self._scopes.resolve(name.id, name)
        own = self._scopes.scope_of(name)
        found = self._scopes.bindings(name.id, name)
        if scope is own:
            reached = self._flow.reaching(name.id, name)
        else:
            inner: Scope | None = own
            while inner is not None and inner.parent is not scope:
                inner = inner.parent
            reached = None
            if inner is not None and inner.node is not scope.node:
                reached = self._flow.reaching(name.id, inner.node)
        if reached is not None:
            return reached
        return found[0] if len(found) == 1 else None

    def value_of(self, name: ast.Name) -> ast.expr | None:
        """The expression ``name`` holds where it is read (``x = value``), when one is known.

        None for parameters, loop targets, imports and names that may hold
        different values there (see :meth:`binding_at`).
        """
        found = self.binding_at(name)
        return found.value if found is not None else None

    # ------------------------------------------------------------ callees

    def callee(self, call: ast.Call) -> Callee | None:
        """What ``call`` calls: through imports, names bound to functions, partials, getattr.

        ``ld(f)`` after ``ld = torch.load``, ``functools.partial(torch.load,
        weights_only=False)(f)`` and ``getattr(torch, "load")(f)`` all call
        ``torch.load``. None when that cannot be told (a parameter, a name
        bound to different things, ``getattr`` with a computed name).
        """
        return self.function(call.func)

    def function(self, expr: ast.expr) -> Callee | None:
        """The function ``expr`` evaluates to (see :meth:`callee`), or None."""
        args: list[ast.expr] = []
        keywords: list[ast.keyword] = []
        for _ in range(_HOPS):
            name = self.qualname(expr)
            if name is not None:
                return Callee(name, tuple(args), tuple(keywords))
            if isinstance(expr, ast.Name):
                value = self.value_of(expr)
                if value is None:
                    return None
                expr = value
                continue
            if not isinstance(expr, ast.Call):
                return None
            inner = self.qualname(expr.func)
            if inner == "functools.partial" and expr.args:
                if any(isinstance(a, ast.Starred) for a in expr.args):
                    return None
                args[:0] = expr.args[1:]  # a partial's own arguments come first
                keywords[:0] = expr.keywords
                expr = expr.args[0]
                continue
            if self._builtin(expr.func, "getattr") and len(expr.args) == 2:
                attr = expr.args[1]
                if isinstance(attr, ast.Name):  # `key = "load"; getattr(torch, key)`
                    attr = self.value_of(attr) or attr
                if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                    return None
                owner = self.qualname(expr.args[0])
                return (
                    None
                    if owner is None
                    else Callee(f"{owner}.{attr.value}", tuple(args), tuple(keywords))
                )
            return None
        return None

    def called(self, call: ast.Call) -> Callee | None:
        """What ``call`` calls where the answer holds on every path: through imports, and names
        bound once to a dotted name or a ``functools.partial`` of one, or None.

        ``pack(x, n)`` after ``pack = nn.utils.rnn.pack_padded_sequence`` (module level or
        in the function) or ``pack = functools.partial(pps, batch_first=True)`` calls
        ``torch.nn.utils.rnn.pack_padded_sequence`` (with the partial's arguments first);
        so does ``R.pack_padded_sequence(x, n)`` after ``R = nn.utils.rnn``. A name bound
        twice (two assignments, a ``global`` one elsewhere, a loop target) is unknown:
        :meth:`callee` may follow the binding that reaches a read, this does not.
        """
        args: list[ast.expr] = []
        keywords: list[ast.keyword] = []
        expr: ast.expr = call.func
        for _ in range(_HOPS):
            name = self._aliased(expr, _HOPS)
            if name is not None:
                return Callee(name, tuple(args), tuple(keywords))
            value = self._bound_once(expr) if isinstance(expr, ast.Name) else None
            if isinstance(expr, ast.Attribute):
                value = self._kept_once(expr)  # `self.pack(...)`, `self.pack = pps` in `__init__`
                if isinstance(value, ast.Name | ast.Attribute):
                    expr = value
                    continue
            if not (
                isinstance(value, ast.Call)
                and value.args
                and self._aliased(value.func, _HOPS) == "functools.partial"
                and not any(isinstance(a, ast.Starred) for a in value.args)
                and all(k.arg is not None for k in value.keywords)
            ):
                return None
            args[:0] = value.args[1:]  # a partial's own arguments come first
            keywords[:0] = value.keywords
            expr = value.args[0]
        return None

    def _aliased(self, expr: ast.expr, hops: int) -> str | None:
        """The dotted name ``expr`` means through imports and names bound once to a dotted
        name (``R.pack_padded_sequence`` after ``R = nn.utils.rnn``), or None."""
        name = self.qualname(expr)
        if name is not None or hops <= 0:
            return name
        parts: list[str] = []
        root = expr
        while isinstance(root, ast.Attribute):
            parts.append(root.attr)
            root = root.value
        value = self._bound_once(root) if isinstance(root, ast.Name) else None
        if not isinstance(value, ast.Name | ast.Attribute):
            return None
        base = self._aliased(value, hops - 1)  # read where it is bound
        return None if base is None else ".".join([base, *reversed(parts)])

    def _kept_once(self, expr: ast.Attribute) -> ast.expr | None:
        """The value of ``self.X`` read in a method (``self`` its first parameter, never
        rebound) where the file binds an attribute ``X`` once in all, in that method's class:
        ``self.X = value`` in one of its methods, or ``X = staticmethod(value)`` (or a
        ``functools.partial``, which binds no ``self``) in its body; else None. Any other
        binding of an ``X`` anywhere (another object's, a ``def X``, ``setattr``) is unknown."""
        me = expr.value
        scope = self._scopes.scope_of(expr)
        method, outer = scope.node, scope.parent
        if not (
            isinstance(me, ast.Name)
            and scope.kind is ScopeKind.FUNCTION
            and isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef)
            and outer is not None
            and isinstance(outer.node, ast.ClassDef)
            and [*method.args.posonlyargs, *method.args.args][:1]
            and [*method.args.posonlyargs, *method.args.args][0].arg == me.id
            and len(scope.bindings.get(me.id, ())) == 1
        ):
            return None
        if self._kept is None:
            module = scope
            while module.parent is not None:
                module = module.parent
            self._kept = _attribute_bindings(module.node)
        found = self._kept.get(expr.attr, ())
        if len(found) != 1 or found[0][0] is not outer.node:
            return None
        return found[0][1]

    def _bound_once(self, name: ast.Name) -> ast.expr | None:
        """The value ``name`` holds where a plain ``name = value`` binds it once in the scope
        it resolves to (no other binding there, none by ``global`` elsewhere), else None."""
        found = self._scopes.bindings(name.id, name)
        if len(found) != 1 or found[0].kind is not BindingKind.ASSIGN:
            return None
        if found[0].scope.kind is ScopeKind.CLASS:
            return None  # a class body's name, read in its body before or after: not followed
        return found[0].value

    def _builtin(self, func: ast.expr, name: str) -> bool:
        """Whether ``func`` is the builtin ``name`` (no binding in the module shadows it)."""
        return (
            isinstance(func, ast.Name) and func.id == name and not self._scopes.bindings(name, func)
        )


def _attribute_bindings(tree: ast.AST) -> dict[str, list[tuple[ast.AST | None, ast.expr | None]]]:
    """Every binding of an attribute name in ``tree``: (the class it binds for, the value
    followed), by name. The class: ``X = value`` in its body (a ``staticmethod`` of it, or a
    partial; else no value), ``self.X = value`` in its method (``self`` the first
    parameter); None (unknown) for any other: ``other.X = v``, ``def X``, ``X += v``,
    ``setattr(o, "X", v)``, a store of ``X`` nested in a function of a method."""
    found: dict[str, list[tuple[ast.AST | None, ast.expr | None]]] = {}

    def add(name: str, owner: ast.AST | None, value: ast.expr | None) -> None:
        found.setdefault(name, []).append((owner, value))

    def visit(node: ast.AST, cls: ast.ClassDef | None, me: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, child, None)
                continue
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                if cls is not None and node is cls:
                    add(child.name, None, None)  # a method named so: not followed
                    params = [*child.args.posonlyargs, *child.args.args]
                    visit(child, cls, params[0].arg if params else None)
                else:
                    visit(child, None, None)
                continue
            if isinstance(child, ast.Assign) and node is cls and cls is not None:
                for target in child.targets:
                    if isinstance(target, ast.Name):
                        add(target.id, cls, _class_value(child.value))
            elif isinstance(child, ast.AnnAssign | ast.AugAssign) and node is cls:
                if isinstance(child.target, ast.Name):
                    add(child.target.id, None, None)
            elif isinstance(child, ast.Attribute) and not isinstance(child.ctx, ast.Load):
                up = _assigned_value(node, child)
                mine = isinstance(child.value, ast.Name) and child.value.id == me
                add(child.attr, cls if mine and up is not None else None, up)
            elif (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Name)
                and child.func.id == "setattr"
            ):
                name = child.args[1] if len(child.args) > 1 else None
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    add(name.value, None, None)
                else:
                    found.setdefault("", []).append((None, None))
            visit(child, cls, me)

    visit(tree, None, None)
    if "" in found:  # `setattr(o, name, v)`: any attribute may be bound so
        return {}
    return found


def _assigned_value(parent: ast.AST, target: ast.Attribute) -> ast.expr | None:
    """The value of ``parent`` (a plain ``a.X = value``, one target) where ``target`` is its
    target; else None."""
    if isinstance(parent, ast.Assign) and parent.targets == [target]:
        return parent.value
    return None


def _class_value(value: ast.expr) -> ast.expr | None:
    """What ``self.X`` reads of a class body's ``X = value``: ``f`` of ``staticmethod(f)``,
    a ``functools.partial`` (no descriptor: no ``self`` bound); None for the rest (a plain
    function would be bound to ``self``)."""
    if not isinstance(value, ast.Call):
        return None
    name = getattr(value.func, "id", getattr(value.func, "attr", None))
    if name == "staticmethod" and len(value.args) == 1 and not value.keywords:
        return value.args[0]
    return value if name == "partial" else None

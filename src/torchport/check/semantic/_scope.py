"""Python's scopes and name bindings for one module, built in one pass per file.

The checker's walk knows where it is; this module knows what a name *means*
there, the way the compiler does (and libcst's scope provider does for
TorchFix), so that fixes never guess:

* which scope a node runs in: module, class, function, lambda or
  comprehension. Decorators, default values, annotations and class bases run
  in the *enclosing* scope; the first iterable of a comprehension too; a class
  body's names are invisible to the functions and comprehensions inside it;
* every binding of every name in every scope (imports with their dotted
  target, assignments, parameters, ``def``/``class``, ``for``/``with``/
  ``except``/``match`` targets, walrus targets, which bind in the enclosing
  function, ``del``), and ``global``/``nonlocal`` declarations;
* where a name read at a node resolves, whether it is *definitely* bound on
  every path before that node runs, and which single binding reaches it;
* through the :class:`~torchport.check.semantic._resolve.Resolver` it
  holds: the dotted name an expression refers to through imports
  (``th.cuda.is_available`` -> ``"torch.cuda.is_available"``), and the value a
  name holds where it is read;
* how the module imports torch: unconditionally at module level, only
  optionally (``try``/``if``/``TYPE_CHECKING``/inside functions), or not at all.

Answers err towards "unknown": a star import binds every name it might, a
conditional binding is not a definite one, a loop body never binds anything
after the loop. Rules that get "unknown" report without a fix.

The pass records a parent for every node and the bindings per scope. Every
name question of every rule is answered here, so the engine builds it once per
file before its walk (``Context.scopes``).
"""

from __future__ import annotations

import ast
import weakref

from torchport.check.semantic._binding import (
    Binding,
    BindingKind,
    Scope,
    ScopeKind,
    TorchImport,
)
from torchport.check.semantic._flow import FlowAnalysis
from torchport.check.semantic._resolve import Callee, Resolver
from torchport.check.semantic._scope_pass import COMPREHENSIONS, FUNCTIONS, ScopePass

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.semantic._star_names import Exports

__all__ = [
    "Binding",
    "BindingKind",
    "Scope",
    "ScopeKind",
    "ScopeMap",
    "TorchImport",
]


def _index_of(tree: ast.AST) -> dict[type[ast.AST], list[ast.AST]]:
    """Every node of ``tree`` by class, each class's in ``ast.walk`` order.

    ``ast.walk``'s order (breadth first, children as ``ast.iter_child_nodes`` gives
    them: field by field, list items in order) without its generators: one list read
    from its start while it grows.
    """
    index: dict[type[ast.AST], list[ast.AST]] = {}
    fields_of: dict[type[ast.AST], tuple[str, ...]] = {}
    node_class = ast.AST
    order: list[ast.AST] = [tree]
    append = order.append
    for node in order:  # (the list grows while it is read: breadth first)
        cls = node.__class__
        found = index.get(cls)
        if found is None:
            index[cls] = [node]
        else:
            found.append(node)
        fields = fields_of.get(cls)
        if fields is None:
            fields = fields_of[cls] = cls._fields
        for field_name in fields:
            value = getattr(node, field_name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, node_class):
                        append(item)
            elif isinstance(value, node_class):
                append(value)
    return index


class ScopeMap:
    """Scopes, bindings and parents of one parsed module, and every question asked of them.

    Built by one pass over the tree (:class:`~torchport.check.semantic._scope_pass.ScopePass`).
    It answers the scope questions itself and holds the two parts that ask them:
    ``flow`` (:class:`~torchport.check.semantic._flow.FlowAnalysis`: which binding
    reaches a node) and ``resolver`` (:class:`~torchport.check.semantic._resolve.Resolver`:
    what a name means where it is read); the methods below under "flow" and
    "names through imports" hand their questions on.
    """

    def __init__(
        self,
        tree: ast.Module,
        stars: dict[int, Exports | None] | None = None,
        named: dict[int, dict[str, str]] | None = None,
        through: dict[str, dict[str, str]] | None = None,
    ) -> None:
        built = ScopePass(tree, stars, named)
        self.tree = tree
        # What a name nothing binds may mean: torch's, where one star import of torch's
        # names is the module's only star import that is not read from its module.
        self.wildcard: str | None = None
        if stars and all(found is not None for found in stars.values()):
            wild = {w for found in stars.values() if found is not None for w in found[1]}
            self.wildcard = wild.pop() if len(wild) == 1 else None
        self.module = built.module
        self.scopes: dict[int, Scope] = built.scopes
        self._parent: dict[int, ast.AST] = built.parent
        # The scope of every name read: the question every rule asks, answered by the pass.
        self._read_in: dict[int, Scope] = built.read_in
        # The parts ask this map through a weak proxy: a strong reference back made
        # every file's model a reference cycle that only the cyclic collector frees,
        # and its passes over those trees cost a check about 8% of its time.
        asked = weakref.proxy(self)
        self.flow = FlowAnalysis(asked, built.parent, built.positions)
        self.resolver = Resolver(asked, self.flow, through)
        # Answers worked out on first use (see nodes_of, loads_of, reads_of,
        # _global_bindings, module_reads and _torch_names).
        self._index: dict[type[ast.AST], list[ast.AST]] | None = None
        self._loads: dict[str, list[ast.Name]] | None = None
        self._reads_by: dict[str, dict[int, list[ast.Name]]] = {}
        self._globals: dict[str, list[Binding]] | None = None
        self._module_reads: dict[str, bool] = {}
        self._torch_aliases: list[str] | None = None

    # ------------------------------------------------------------ the node index

    def nodes_of(self, kind: type[ast.AST]) -> list[ast.AST]:
        """Every node of class ``kind`` in the module, in ``ast.walk`` order.

        One walk of the tree the first time any rule asks, then a lookup: a rule
        that searched the module for every match was quadratic in its matches.
        """
        index = self._index
        if index is None:
            index = self._index = _index_of(self.tree)
        return index.get(kind, [])

    def loads_of(self, name: str) -> list[ast.Name]:
        """Every read (``Load``) of the name ``name`` in the module, in ``ast.walk`` order."""
        loads = self._loads
        if loads is None:
            loads = {}
            for node in self.nodes_of(ast.Name):
                assert isinstance(node, ast.Name)
                if node.ctx.__class__ is ast.Load:
                    loads.setdefault(node.id, []).append(node)
            self._loads = loads
        return loads.get(name, [])

    def reads_of(self, name: str, scope: Scope) -> list[ast.Name]:
        """Every read of ``name`` that resolves to ``scope``'s binding, in ``ast.walk`` order.

        Grouped once per name: asked per binding, a filter of all the name's
        reads each time was quadratic in the functions that bind the same name.
        """
        grouped = self._reads_by
        by_scope = grouped.get(name)
        if by_scope is None:
            by_scope = grouped[name] = {}
            for node in self.loads_of(name):
                by_scope.setdefault(id(self.resolve(name, node)), []).append(node)
        return by_scope.get(id(scope), [])

    # ------------------------------------------------------------ structure

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node directly enclosing ``node`` (None for the module)."""
        return self._parent.get(id(node))

    def top_statement(self, node: ast.AST) -> ast.stmt | None:
        """The module-level statement holding ``node``."""
        cur: ast.AST | None = node
        tree = self.tree
        while cur is not None:
            up = self._parent.get(id(cur))
            if up is tree:
                return cur if isinstance(cur, ast.stmt) else None
            cur = up
        return None

    def scope_of(self, node: ast.AST) -> Scope:
        """The scope whose code evaluates ``node`` (a scope-opening node: its enclosing one)."""
        known = self._read_in.get(id(node))
        if known is not None:
            return known
        child = node
        cur = self._parent.get(id(node))
        grand: ast.AST | None = None
        while cur is not None:
            inner = self.scopes.get(id(cur))
            if inner is not None and self._runs_inside(cur, child, grand):
                return inner
            grand, child = child, cur
            cur = self._parent.get(id(cur))
        return self.module

    @staticmethod
    def _runs_inside(owner: ast.AST, child: ast.AST, grand: ast.AST | None) -> bool:
        """Whether ``child`` of the scope-opening ``owner`` runs in ``owner``'s own scope."""
        if isinstance(owner, (*FUNCTIONS, ast.ClassDef)):
            if isinstance(child, ast.arguments):
                return isinstance(grand, ast.arg)  # parameters bind inside; defaults outside
            # Statements are the body's; decorators, bases, keywords and annotations are
            # expressions evaluated outside (a scan of the body would cost O(body) a query).
            return isinstance(child, ast.stmt)
        if isinstance(owner, ast.Lambda):
            return child is owner.body or (
                isinstance(child, ast.arguments) and isinstance(grand, ast.arg)
            )
        if isinstance(owner, COMPREHENSIONS):
            first = owner.generators[0]
            return not (child is first and grand is first.iter)
        return True

    # ------------------------------------------------------------ names

    def resolve(self, name: str, node: ast.AST) -> Scope:
        """The scope whose binding of ``name`` a read at ``node`` sees (the module if none)."""
        return self._resolve_from(name, self.scope_of(node))

    def _resolve_from(self, name: str, scope: Scope) -> Scope:
        s: Scope | None = scope
        first = True
        while s is not None:
            if s.kind is ScopeKind.CLASS and not first:
                s = s.parent  # a class body's names are invisible to nested scopes
                continue
            if name in s.declared_global:
                return self.module
            if name in s.bindings and name not in s.declared_nonlocal:
                return s
            first = False
            s = s.parent
        return self.module

    def bindings(self, name: str, node: ast.AST) -> list[Binding]:
        """Every binding of ``name`` in the scope a read at ``node`` resolves to.

        Module bindings include those made by ``global name`` in functions.
        """
        scope = self.resolve(name, node)
        found = list(scope.bindings.get(name, ()))
        if scope is self.module:
            found += self._global_bindings(name)
        return found

    def _global_bindings(self, name: str) -> list[Binding]:
        # Asked for every lookup of a module name: the `global` declarations are
        # gathered once per module, not searched for in every scope each time.
        found = self._globals
        if found is None:
            found = {}
            for s in self.scopes.values():
                if s is not self.module:
                    for declared in s.declared_global:
                        found.setdefault(declared, []).extend(s.bindings.get(declared, ()))
            self._globals = found
        return list(found.get(name, ()))

    def module_reads(self, name: str) -> bool:
        """Whether any read of ``name`` anywhere resolves to the module scope (or builtins)."""
        known = self._module_reads
        found = known.get(name)
        if found is None:  # asked per finding: once per name
            found = known[name] = any(
                name in s.reads and self._resolve_from(name, s) is self.module
                for s in self.scopes.values()
            )
        return found

    # ------------------------------------------------------------ flow (FlowAnalysis)

    def statement(self, node: ast.AST) -> ast.stmt | None:
        """The innermost statement holding ``node`` (:meth:`FlowAnalysis.statement`)."""
        return self.flow.statement(node)

    def statement_position(self, stmt: ast.stmt) -> tuple[list[ast.stmt], int] | None:
        """``stmt``'s block and index there (:meth:`FlowAnalysis.statement_position`)."""
        return self.flow.statement_position(stmt)

    def definitely_bound(self, name: str, node: ast.AST) -> bool:
        """Whether ``name`` is bound on every path to ``node`` (``FlowAnalysis``)."""
        return self.flow.definitely_bound(name, node)

    def reaching(self, name: str, node: ast.AST) -> Binding | None:
        """The binding of ``name`` every path to ``node`` passes last (``FlowAnalysis``)."""
        return self.flow.reaching(name, node)

    # ------------------------------------------------------------ names through imports (Resolver)

    def qualname(self, expr: ast.expr) -> str | None:
        """The dotted name ``expr`` means through its imports (:meth:`Resolver.qualname`)."""
        return self.resolver.qualname(expr)

    def is_torch_call(self, call: ast.Call) -> bool:
        """Whether ``call`` calls something of torch (:meth:`Resolver.is_torch_call`)."""
        return self.resolver.is_torch_call(call)

    def binding_at(self, name: ast.Name) -> Binding | None:
        """The binding a read of ``name`` sees, when one is known (:meth:`Resolver.binding_at`)."""
        return self.resolver.binding_at(name)

    def value_of(self, name: ast.Name) -> ast.expr | None:
        """The expression ``name`` holds where it is read, if known (:meth:`Resolver.value_of`)."""
        return self.resolver.value_of(name)

    def callee(self, call: ast.Call) -> Callee | None:
        """What ``call`` calls through aliases and partials (:meth:`Resolver.callee`)."""
        return self.resolver.callee(call)

    def function(self, expr: ast.expr) -> Callee | None:
        """The function ``expr`` evaluates to (:meth:`Resolver.function`)."""
        return self.resolver.function(expr)

    def called(self, call: ast.Call) -> Callee | None:
        """What ``call`` calls through names bound once (:meth:`Resolver.called`)."""
        return self.resolver.called(call)

    # ------------------------------------------------------------ torch imports

    def torch_import(self) -> tuple[TorchImport, ast.stmt | None]:
        """How the module imports torch, and the first module-level statement that always does.

        UNCONDITIONAL: a statement directly in the module body imports torch or
        something from it (so torch is installed whenever the module runs);
        OPTIONAL: torch is imported only under ``try``/``if`` (including
        ``TYPE_CHECKING``) or inside functions and classes; NONE: nowhere.
        """
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) and _imports_torch(stmt):
                return TorchImport.UNCONDITIONAL, stmt
        for scope in self.scopes.values():
            for found in scope.bindings.values():
                for b in found:
                    node = b.node
                    if isinstance(node, ast.stmt) and _imports_torch(node):
                        return TorchImport.OPTIONAL, None
        for scope in self.scopes.values():
            if any(_imports_torch(s) for s in scope.star_imports):
                return TorchImport.OPTIONAL, None
        return TorchImport.NONE, None

    def torch_alias(self, node: ast.AST) -> str | None:
        """A name bound to the torch module, and only to it, on every path to ``node``."""
        for candidate in ("torch", *self._torch_names()):
            found = self.bindings(candidate, node)
            if (
                found
                and all(b.kind is BindingKind.IMPORT and b.qualified == "torch" for b in found)
                and self.flow.definitely_bound(candidate, node)
            ):
                return candidate
        return None

    def _torch_names(self) -> list[str]:
        # Asked for every fix that writes torch's name: collected once per module.
        found = self._torch_aliases
        if found is None:
            found = self._torch_aliases = sorted(
                {
                    b.name
                    for s in self.scopes.values()
                    for bound in s.bindings.values()
                    for b in bound
                    if b.kind is BindingKind.IMPORT and b.qualified == "torch" and b.name != "torch"
                }
            )
        return found


def _imports_torch(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import):
        return any(a.name == "torch" or a.name.startswith("torch.") for a in stmt.names)
    if isinstance(stmt, ast.ImportFrom):
        module = stmt.module or ""
        return not stmt.level and (module == "torch" or module.startswith("torch."))
    return False

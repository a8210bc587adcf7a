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
* through :class:`~torchport.check.semantic._resolve.Resolver`, which it
  extends: the dotted name an expression refers to through imports
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

from torchport.check.semantic._binding import (
    Binding,
    BindingKind,
    Scope,
    ScopeKind,
    TorchImport,
)
from torchport.check.semantic._resolve import Resolver
from torchport.check.semantic._scope_pass import COMPREHENSIONS, FUNCTIONS, ScopePass

__all__ = [
    "Binding",
    "BindingKind",
    "Scope",
    "ScopeKind",
    "ScopeMap",
    "TorchImport",
]


class ScopeMap(Resolver):
    """Scopes, bindings and parents of one parsed module, and every question asked of them.

    Built by one pass over the tree (:class:`~torchport.check.semantic._scope_pass.ScopePass`).
    """

    # Answers worked out on first use (see _global_bindings, module_reads, nodes_of).
    _globals: dict[str, list[Binding]]
    _module_reads: dict[str, bool]
    _index: dict[type[ast.AST], list[ast.AST]]
    _loads: dict[str, list[ast.Name]]
    _reads_by: dict[str, dict[int, list[ast.Name]]]

    def __init__(self, tree: ast.Module) -> None:
        built = ScopePass(tree)
        self.tree = tree
        self.module = built.module
        self.scopes: dict[int, Scope] = built.scopes
        self._parent: dict[int, ast.AST] = built.parent
        # The scope of every name read: the question every rule asks, answered by the pass.
        self._read_in: dict[int, Scope] = built.read_in
        self._stmt_positions = built.positions  # for the flow analysis

    # ------------------------------------------------------------ the node index

    def nodes_of(self, kind: type[ast.AST]) -> list[ast.AST]:
        """Every node of class ``kind`` in the module, in ``ast.walk`` order.

        One walk of the tree the first time any rule asks, then a lookup: a rule
        that searched the module for every match was quadratic in its matches.
        """
        index: dict[type[ast.AST], list[ast.AST]] | None = getattr(self, "_index", None)
        if index is None:
            index = {}
            for node in ast.walk(self.tree):
                index.setdefault(node.__class__, []).append(node)
            self._index = index
        return index.get(kind, [])

    def loads_of(self, name: str) -> list[ast.Name]:
        """Every read (``Load``) of the name ``name`` in the module, in ``ast.walk`` order."""
        loads: dict[str, list[ast.Name]] | None = getattr(self, "_loads", None)
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
        grouped: dict[str, dict[int, list[ast.Name]]] | None = getattr(self, "_reads_by", None)
        if grouped is None:
            grouped = self._reads_by = {}
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
        found: dict[str, list[Binding]] | None = getattr(self, "_globals", None)
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
        known: dict[str, bool] | None = getattr(self, "_module_reads", None)
        if known is None:
            known = self._module_reads = {}
        found = known.get(name)
        if found is None:  # asked per finding: once per name
            found = known[name] = any(
                name in s.reads and self._resolve_from(name, s) is self.module
                for s in self.scopes.values()
            )
        return found

    # ------------------------------------------------------------ flow

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
                and self.definitely_bound(candidate, node)
            ):
                return candidate
        return None

    def _torch_names(self) -> list[str]:
        # Asked for every fix that writes torch's name: collected once per module.
        found: list[str] | None = getattr(self, "_torch_aliases", None)
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

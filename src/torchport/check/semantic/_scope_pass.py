"""The one pass that builds a module's scopes: parents, bindings, reads, statement positions.

One iterative, depth-first walk of the tree records, for every node, the node
enclosing it; for every scope (module, class, function, lambda, comprehension)
its bindings in source order, the names it reads and its ``global``/``nonlocal``
declarations; for every name read, the scope it is read in; and for every
statement, its block and index there (what the flow analysis asks). Each node
is visited in the scope its code runs in: decorators, defaults, annotations,
class bases and a comprehension's first iterable in the enclosing one.
:class:`~torchport.check.semantic._scope.ScopeMap` answers the questions asked
of what it builds.
"""

from __future__ import annotations

import ast

from torchport.check._nodes import child_fields
from torchport.check.semantic._binding import (
    Binding,
    BindingKind,
    Scope,
    ScopeKind,
    import_bindings,
)

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.semantic._star_names import Exports

__all__ = ["COMPREHENSIONS", "FUNCTIONS", "ScopePass"]

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody"})
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Node types the pass handles apart from plain recursion.
_SPECIAL = frozenset(
    {
        *FUNCTIONS,
        ast.Lambda,
        ast.ClassDef,
        *COMPREHENSIONS,
        ast.Import,
        ast.ImportFrom,
        ast.Global,
        ast.Nonlocal,
        ast.ExceptHandler,
        ast.MatchAs,
        ast.MatchStar,
        ast.MatchMapping,
    }
)


# node class -> ((field, whether it is a statement block), ...), and whether every one of
# those fields holds a node, None, or a list of nodes and None (see _fields_of)
_FIELDS: dict[type[ast.AST], tuple[tuple[tuple[str, bool], ...], bool]] = {}


def _fields_of(cls: type[ast.AST]) -> tuple[tuple[tuple[str, bool], ...], bool]:
    """The fields of ``cls`` the pass looks into (not contexts, operators, or names and
    other values that are never nodes: ``check._nodes``'s table), each with whether it is
    a block of statements, and whether they are known to hold nodes only.
    """
    fields, exact = child_fields(cls, unpositioned=False)
    return tuple((name, name in _BLOCK_FIELDS) for name in fields), exact


class ScopePass:
    """What one walk of ``tree`` records (read the attributes; the walk runs on creation)."""

    def __init__(
        self,
        tree: ast.Module,
        stars: dict[int, Exports | None] | None = None,
        named: dict[int, dict[str, str]] | None = None,
    ) -> None:
        self.tree = tree
        # id(star import) -> the names it binds and their targets (None: not known): a
        # resolved one binds each name as an import of its target (semantic/_star_names.py)
        self.stars = stars or {}
        # id(`from m import a`) -> the names it binds to torch's objects through the
        # project's module m, with their targets (Context._read_named)
        self.named = named or {}
        self.module = Scope(ScopeKind.MODULE, tree, None)
        self.scopes: dict[int, Scope] = {id(tree): self.module}
        self.parent: dict[int, ast.AST] = {}
        self.read_in: dict[int, Scope] = {}  # id(name read) -> the scope reading it
        # id(statement) -> (its block, its index there, the field): the flow analysis asks
        # it for every candidate finding; recorded here, it costs no second walk of the tree.
        self.positions: dict[int, tuple[list[ast.stmt], int, str]] = {}
        self._run()

    def _run(self) -> None:
        # Iterative, depth first: (node, scope its code runs in). A node's children are
        # pushed in reverse, so that statements come off the stack in source order and
        # each scope's bindings are recorded in that order. Names and constants (half
        # of all nodes) are handled where they are found instead of pushed.
        # Scope-opening nodes push their children with the scope each runs in
        # (defaults and decorators: the enclosing one).
        parent = self.parent
        read_in = self.read_in
        bind = self._bind_name
        positions = self.positions
        stmt_cls = ast.stmt
        fields_of = _FIELDS
        special = _SPECIAL
        stack: list[tuple[ast.AST, Scope]] = [(self.tree, self.module)]
        pop, push = stack.pop, stack.append
        name_cls, load_cls, constant_cls, node_cls = ast.Name, ast.Load, ast.Constant, ast.AST
        while stack:
            node, scope = pop()
            cls = node.__class__
            if cls is name_cls:  # a name pushed by a scope-opening node
                if node.ctx.__class__ is load_cls:  # type: ignore[attr-defined]
                    scope.reads.add(node.id)  # type: ignore[attr-defined]
                    read_in[id(node)] = scope
                else:
                    bind(node, scope)  # type: ignore[arg-type]
                continue
            found = fields_of.get(cls)
            if found is None:
                found = fields_of[cls] = _fields_of(cls)
            fields, exact = found
            if cls in special:
                for field_name, block in fields:
                    value = getattr(node, field_name, None)
                    if value.__class__ is list:
                        for item in value:
                            if isinstance(item, node_cls):
                                parent[id(item)] = node
                        if block:
                            for i, item in enumerate(value):
                                positions[id(item)] = (value, i, field_name)
                    elif isinstance(value, node_cls):
                        parent[id(value)] = node
                self._visit_special(node, scope, stack)
                continue
            start = len(stack)
            for field_name, block in fields:
                value = getattr(node, field_name, None)
                if value.__class__ is list:
                    if block:
                        for i, item in enumerate(value):
                            if isinstance(item, stmt_cls):
                                positions[id(item)] = (value, i, field_name)
                    for item in value:
                        kind = item.__class__
                        if kind is name_cls:
                            parent[id(item)] = node
                            if item.ctx.__class__ is load_cls:
                                scope.reads.add(item.id)
                                read_in[id(item)] = scope
                            else:
                                bind(item, scope)
                        elif kind is constant_cls:
                            parent[id(item)] = node
                        elif (exact and item is not None) or isinstance(item, node_cls):
                            parent[id(item)] = node
                            push((item, scope))
                    continue
                if value is None:
                    continue
                kind = value.__class__
                if kind is name_cls:
                    parent[id(value)] = node
                    if value.ctx.__class__ is load_cls:
                        scope.reads.add(value.id)
                        read_in[id(value)] = scope
                    else:
                        bind(value, scope)
                elif kind is constant_cls:
                    parent[id(value)] = node
                elif exact or isinstance(value, node_cls):
                    parent[id(value)] = node
                    push((value, scope))
            if len(stack) - start > 1:
                stack[start:] = stack[start:][::-1]

    def _visit_special(
        self, node: ast.AST, scope: Scope, stack: list[tuple[ast.AST, Scope]]
    ) -> None:
        """Nodes that open a scope, bind without a Name node, or declare names."""
        kind = type(node)
        if kind in FUNCTIONS or kind is ast.Lambda:
            self._open_function(node, scope, stack)
            return
        if kind is ast.ClassDef:
            assert isinstance(node, ast.ClassDef)
            inner = self._open(ScopeKind.CLASS, node, scope)
            scope.add(Binding(node.name, BindingKind.CLASS, node, scope))
            stack.extend((s, inner) for s in reversed(node.body))
            outer = [*node.decorator_list, *node.bases, *node.keywords]
            stack.extend((e, scope) for e in reversed(outer))
            return
        if kind in COMPREHENSIONS:
            assert isinstance(node, (*COMPREHENSIONS,))
            inner = self._open(ScopeKind.COMPREHENSION, node, scope)
            elts = (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)
            stack.extend((e, inner) for e in reversed(elts))
            parent = self.parent
            for i in range(len(node.generators) - 1, -1, -1):
                gen = node.generators[i]
                later = () if i == 0 else (gen.iter,)
                for child in reversed((gen.target, *gen.ifs, *later)):
                    parent[id(child)] = gen
                    stack.append((child, inner))
            first = node.generators[0]
            parent[id(first.iter)] = first
            stack.append((first.iter, scope))  # the first iterable runs outside
            return
        if kind is ast.Import or kind is ast.ImportFrom:
            assert isinstance(node, (ast.Import, ast.ImportFrom))
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                scope.star_imports.append(node)
                given = self.stars.get(id(node))
                for local, target in given[0].items() if given is not None else ():
                    scope.add(Binding(local, BindingKind.IMPORT, node, scope, None, target))
                return
            named = self.named.get(id(node))
            for local, target in import_bindings(node):
                if named is not None:
                    target = named.get(local, target)
                scope.add(Binding(local, BindingKind.IMPORT, node, scope, None, target))
            return
        if kind is ast.Global or kind is ast.Nonlocal:
            assert isinstance(node, (ast.Global, ast.Nonlocal))
            names = scope.declared_global if kind is ast.Global else scope.declared_nonlocal
            names.update(node.names)
            return
        if kind is ast.ExceptHandler:
            assert isinstance(node, ast.ExceptHandler)
            if node.name:
                scope.add(Binding(node.name, BindingKind.EXCEPT, node, scope))
        else:
            captured = getattr(node, "name", None) or getattr(node, "rest", None)
            if isinstance(captured, str):
                scope.add(Binding(captured, BindingKind.MATCH, node, scope))
        children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr_context)]
        stack.extend((c, scope) for c in reversed(children))

    def _open(self, kind: ScopeKind, node: ast.AST, scope: Scope) -> Scope:
        inner = Scope(kind, node, scope)
        self.scopes[id(node)] = inner
        return inner

    def _open_function(
        self, node: ast.AST, scope: Scope, stack: list[tuple[ast.AST, Scope]]
    ) -> None:
        assert isinstance(node, (*FUNCTIONS, ast.Lambda))
        is_lambda = isinstance(node, ast.Lambda)
        inner = self._open(ScopeKind.LAMBDA if is_lambda else ScopeKind.FUNCTION, node, scope)
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
        parent = self.parent
        for p in params:
            if p is not None:
                parent[id(p)] = a
                inner.add(Binding(p.arg, BindingKind.PARAMETER, p, inner))
                if p.annotation is not None:
                    parent[id(p.annotation)] = p
                    stack.append((p.annotation, scope))
        outer: list[ast.expr] = [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
        for d in outer:
            parent[id(d)] = a
        if isinstance(node, ast.Lambda):
            stack.append((node.body, inner))
        else:
            scope.add(Binding(node.name, BindingKind.DEF, node, scope))
            stack.extend((s, inner) for s in reversed(node.body))
            outer += node.decorator_list
            if node.returns is not None:
                outer.append(node.returns)
        stack.extend((e, scope) for e in reversed(outer))

    def _bind_name(self, node: ast.Name, scope: Scope) -> None:
        holder = self.parent.get(id(node))
        kind, value = BindingKind.ASSIGN, None
        if isinstance(node.ctx, ast.Del):
            kind = BindingKind.DELETE
        elif isinstance(holder, ast.Assign):
            value = holder.value if any(t is node for t in holder.targets) else None
        elif isinstance(holder, ast.AnnAssign):
            if holder.value is None:
                return  # `x: int` declares, binds nothing
            value = holder.value
        elif isinstance(holder, ast.AugAssign):
            kind = BindingKind.AUGMENTED
        elif isinstance(holder, ast.NamedExpr):
            kind, value = BindingKind.WALRUS, holder.value
            while scope.kind is ScopeKind.COMPREHENSION and scope.parent is not None:
                scope = scope.parent  # PEP 572: binds in the enclosing function or module
        elif isinstance(holder, (ast.For, ast.AsyncFor, ast.comprehension)):
            kind = BindingKind.LOOP
        elif isinstance(holder, ast.withitem):
            kind = BindingKind.WITH
        else:
            kind = self._unpacked_kind(node)
        scope.add(Binding(node.id, kind, node, scope, value))

    def _unpacked_kind(self, node: ast.AST) -> BindingKind:
        """The kind of a name inside a tuple/list/starred target."""
        holder = self.parent.get(id(node))
        while isinstance(holder, (ast.Tuple, ast.List, ast.Starred)):
            holder = self.parent.get(id(holder))
        if isinstance(holder, (ast.For, ast.AsyncFor, ast.comprehension)):
            return BindingKind.LOOP
        if isinstance(holder, ast.withitem):
            return BindingKind.WITH
        return BindingKind.ASSIGN

"""The state of one walk over one file, as the rules see it.

The engine creates one :class:`Context` per file, and for every node it runs the
rules registered for the node's type first, then calls :meth:`Context.enter`,
walks the children, and calls :meth:`Context.leave`. So while a rule looks at a
node, ``ctx.ancestors`` holds the nodes that enclose it (innermost last), not
the node itself.

What the context knows, and when:

* import aliases (``import torch as th``, ``from torch import nn``): the
  top-level ones from a pre-scan of the module's statements at construction
  (cheap: statements only, no walk), nested ones as the walk enters them;
* bindings (``x = torch.zeros(3)``) per scope, recorded when the walk *leaves*
  the binding statement, so a rule sees the value bound before this point;
* on demand, the module's scopes and bindings (:attr:`Context.scopes`, one
  extra pass built the first time a rule asks, usually only to build a fix),
  and from them where a ``device`` definition or ``import torch`` may go
  (:meth:`Context.device_at`, :meth:`Context.torch_at`).

``enter``/``leave`` do one dictionary lookup by node type; most node types do
nothing else, which keeps the walk fast.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check._rule import NO_FIX, Edit, Finding, Fix, Rule
from torchport.check._source import SourceText
from torchport.check.semantic._placement import (
    _Plan,
    device_at,
    device_expr,
    is_import_block,
    torch_at,
)
from torchport.check.semantic._scope import ScopeMap

__all__ = ["ENTER_HOOKS", "LEAVE_HOOKS", "Context"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPES = (*_FUNCTIONS, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _import_aliases(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
    """(local name, qualified name) pairs bound by one import statement."""
    out: list[tuple[str, str]] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                out.append((alias.asname, alias.name))
            else:
                head = alias.name.partition(".")[0]
                out.append((head, head))
    elif node.module and not node.level:
        for alias in node.names:
            if alias.name != "*":
                out.append((alias.asname or alias.name, f"{node.module}.{alias.name}"))
    return out


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for elt in target.elts for name in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


class Context(SourceText):
    """Where the walk is in one file, and how to report and fix things there.

    Positions and text edits come from :class:`~torchport.check._source.SourceText`.
    """

    def __init__(self, source: str, path: str, tree: ast.Module) -> None:
        super().__init__(source)
        self.path = path
        self.tree = tree
        self.ancestors: list[ast.AST] = []
        self._aliases: dict[str, str] = {}
        # Scopes innermost last: (is_class, name -> bound value or None when unknown).
        self._scopes: list[tuple[bool, dict[str, ast.expr | None]]] = [(False, {})]
        self._top: dict[str, ast.stmt] = {}
        self._torch_stmt: ast.stmt | None = None
        self._scope_map: ScopeMap | None = None
        self._placement: _Plan | None = None
        self._last_expr: ast.expr | None = None
        self._last_name: str | None = None
        self._prescan(tree)

    # ------------------------------------------------------------ pre-scan

    def _prescan(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Try, ast.If)):
                self._scan_imports(stmt)
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for name in _target_names(target):
                        self._top.setdefault(name, stmt)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._top.setdefault(stmt.name, stmt)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for local, _ in _import_aliases(stmt):
                    self._top.setdefault(local, stmt)

    def _scan_imports(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for local, qualified in _import_aliases(stmt):
                self._aliases[local] = qualified
                if qualified == "torch" and self._torch_stmt is None:
                    self._torch_stmt = stmt
        elif is_import_block(stmt):
            for inner in ast.iter_child_nodes(stmt):
                if isinstance(inner, ast.stmt):
                    self._scan_imports(inner)
                elif isinstance(inner, ast.ExceptHandler):
                    for s in inner.body:
                        self._scan_imports(s)

    # ------------------------------------------------------------ the walk

    def enter(self, node: ast.AST) -> None:
        """Called by the engine after the rules ran on ``node``, before its children."""
        self.ancestors.append(node)
        handler = _ENTER.get(type(node))
        if handler is not None:
            handler(self, node)

    def leave(self, node: ast.AST) -> None:
        """Called by the engine after ``node``'s children."""
        self.ancestors.pop()
        handler = _LEAVE.get(type(node))
        if handler is not None:
            handler(self, node)

    def _enter_function(self, node: ast.AST) -> None:
        assert isinstance(node, _FUNCTIONS)
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
        self._scopes.append((False, {p.arg: None for p in params if p is not None}))

    def _enter_class(self, node: ast.AST) -> None:
        self._scopes.append((True, {}))

    def _leave_scope(self, node: ast.AST) -> None:
        self._scopes.pop()
        name = getattr(node, "name", None)
        if name is not None:
            self._scopes[-1][1][name] = None

    def _enter_import(self, node: ast.AST) -> None:
        assert isinstance(node, (ast.Import, ast.ImportFrom))
        for local, qualified in _import_aliases(node):
            self._aliases[local] = qualified
            self._scopes[-1][1][local] = None

    def _enter_for(self, node: ast.AST) -> None:
        assert isinstance(node, (ast.For, ast.AsyncFor))
        scope = self._scopes[-1][1]
        for name in _target_names(node.target):
            scope[name] = None

    def _enter_with(self, node: ast.AST) -> None:
        assert isinstance(node, (ast.With, ast.AsyncWith))
        scope = self._scopes[-1][1]
        for item in node.items:
            if item.optional_vars is not None:
                for name in _target_names(item.optional_vars):
                    single = isinstance(item.optional_vars, ast.Name)
                    scope[name] = item.context_expr if single else None

    def _leave_assign(self, node: ast.AST) -> None:
        scope = self._scopes[-1][1]
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    scope[target.id] = node.value
                else:
                    for name in _target_names(target):
                        scope[name] = None
        elif isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name) and node.value is not None:
                scope[node.target.id] = node.value
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            scope[node.target.id] = node.value

    # ------------------------------------------------------------ where we are

    @property
    def import_aliases(self) -> dict[str, str]:
        """Local name -> what it imports, as known at this point of the walk (live, not a copy)."""
        return self._aliases

    @property
    def parent(self) -> ast.AST | None:
        """The node that directly encloses the one being checked."""
        return self.ancestors[-1] if self.ancestors else None

    def loop_of(self, node: ast.AST) -> ast.AST | None:
        """The innermost loop whose repeated part holds ``node``, within the current function.

        The repeated part of a ``for`` is its body (not its iterable, target or
        ``else``); of a ``while`` its test and body; of a comprehension
        everything but the first iterable. A ``def``, ``lambda`` or ``class``
        between the node and the loop ends the search.
        """
        chain = self.ancestors
        child = node
        for i in range(len(chain) - 1, -1, -1):
            outer = chain[i]
            if isinstance(outer, _SCOPES):
                return None
            if isinstance(outer, (ast.For, ast.AsyncFor)):
                if (
                    child is not outer.iter
                    and child is not outer.target
                    and not (outer.orelse and any(s is child for s in outer.orelse))
                ):
                    return outer
            elif isinstance(outer, ast.While):
                if not (outer.orelse and any(s is child for s in outer.orelse)):
                    return outer
            elif isinstance(outer, _COMPREHENSIONS):
                first = outer.generators[0]
                inner = chain[i + 2] if i + 2 < len(chain) else node
                if not (child is first and inner is first.iter):
                    return outer
            child = outer
        return None

    def in_loop(self, node: ast.AST) -> bool:
        """Whether ``node`` runs once per iteration of a loop (see :meth:`loop_of`)."""
        return self.loop_of(node) is not None

    def in_function(self) -> bool:
        """Whether the walk is inside a ``def`` or ``lambda``."""
        return any(isinstance(a, _FUNCTIONS) for a in self.ancestors)

    # ------------------------------------------------------------ names

    def qualname(self, expr: ast.expr) -> str | None:
        """The dotted name ``expr`` refers to through imports, or None.

        ``th.cuda.synchronize`` after ``import torch as th`` is
        ``"torch.cuda.synchronize"``; a name no import binds gives None.
        """
        if expr is self._last_expr:
            return self._last_name  # several rules ask about the same call's function
        self._last_expr = expr
        self._last_name = None
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        base = self._aliases.get(expr.id)
        if base is None:
            return None
        parts.append(base)
        self._last_name = name = ".".join(reversed(parts))
        return name

    def binding(self, name: str) -> ast.expr | None:
        """The value last bound to ``name`` before this point, None when unknown or a parameter."""
        scopes = self._scopes
        for i in range(len(scopes) - 1, -1, -1):
            is_class, names = scopes[i]
            if is_class and i != len(scopes) - 1:
                continue  # methods do not see class-level names
            if name in names:
                return names[name]
        return None

    def torch_name(self) -> str:
        """The name the module imported torch as at top level (``"torch"`` when it did not).

        For messages. A fix that writes torch's name asks :meth:`torch_at`.
        """
        for local, qualified in self._aliases.items():
            if qualified == "torch" and self._top.get(local) is not None:
                return local
        return "torch"

    # ------------------------------------------------------------ scopes and the device

    @property
    def scopes(self) -> ScopeMap:
        """Scopes and bindings of the whole module (built on first use, then cached)."""
        if self._scope_map is None:
            self._scope_map = ScopeMap(self.tree)
        return self._scope_map

    @property
    def placement(self) -> _Plan:
        """Where a ``device`` definition and a missing ``import torch`` go (cached)."""
        if self._placement is None:
            self._placement = _Plan(self)
        return self._placement

    def torch_at(self, node: ast.AST) -> tuple[str, tuple[Edit, ...]] | None:
        """A name for torch usable at ``node`` and the edits adding ``import torch`` if needed.

        None: torch is imported only optionally, or cannot be bound before
        ``node`` runs; the rule reports without a fix.
        """
        return torch_at(self, node)

    def device_at(self, node: ast.AST) -> tuple[str, tuple[Edit, ...]] | None:
        """A name bound to the accelerator choice at ``node`` and the edits that define it.

        None: no name is safe there (see :mod:`torchport.check.semantic._placement`);
        the rule reports without a fix.
        """
        return device_at(self, node)

    def device_expr(self, torch: str | None = None) -> str:
        """The expression a fresh device definition binds, with ``torch`` (default: the alias)."""
        return device_expr(torch or self.torch_name())

    def device_definition(self) -> tuple[str, tuple[Edit, ...]]:
        """Deprecated: use :meth:`device_at` with the node the fix rewrites.

        Answers for the node's parent; when no name is safe, the edits hold
        :data:`~torchport.check._rule.NO_FIX`, which makes the fixer drop the fix.
        """
        found = self.device_at(self.ancestors[-1]) if self.ancestors else None
        return found if found is not None else ("device", (NO_FIX,))

    def torch_edits(self) -> tuple[Edit, ...]:
        """Deprecated: use :meth:`torch_at` with the node (see :meth:`device_definition`)."""
        found = self.torch_at(self.ancestors[-1]) if self.ancestors else None
        if found is None or found[0] != self.torch_name():
            return (NO_FIX,)
        return found[1]

    def finding(
        self, rule: Rule, node: ast.AST, *, message: str | None = None, fix: Fix | None = None
    ) -> Finding:
        """A finding of ``rule`` spanning ``node`` (1-based character columns).

        A fix holding :data:`~torchport.check._rule.NO_FIX` is dropped: the
        finding is reported without a fix.
        """
        if fix is not None and NO_FIX in fix.edits:
            fix = None
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        if end_col is None:
            end_col = col
        if not self._ascii:
            starts = self._line_starts()
            col = self.offset(line, col) - starts[line]
            end_col = self.offset(end_line, end_col) - starts[end_line]
        return Finding(
            path=self.path,
            line=line,
            col=col + 1,
            end_line=end_line,
            end_col=end_col + 1,
            code=rule.code,
            name=rule.name,
            message=message or rule.message,
            fix=fix,
        )


_Handler = Callable[[Context, ast.AST], None]
_ENTER: dict[type[ast.AST], _Handler] = {
    ast.FunctionDef: Context._enter_function,
    ast.AsyncFunctionDef: Context._enter_function,
    ast.Lambda: Context._enter_function,
    ast.ClassDef: Context._enter_class,
    ast.Import: Context._enter_import,
    ast.ImportFrom: Context._enter_import,
    ast.For: Context._enter_for,
    ast.AsyncFor: Context._enter_for,
    ast.With: Context._enter_with,
    ast.AsyncWith: Context._enter_with,
}
_LEAVE: dict[type[ast.AST], _Handler] = {
    ast.FunctionDef: Context._leave_scope,
    ast.AsyncFunctionDef: Context._leave_scope,
    ast.Lambda: Context._leave_scope,
    ast.ClassDef: Context._leave_scope,
    ast.Assign: Context._leave_assign,
    ast.AnnAssign: Context._leave_assign,
    ast.NamedExpr: Context._leave_assign,
}
# What the engine calls when its walk enters and leaves a node of these types (it
# inlines Context.enter/leave, which do the same).
ENTER_HOOKS, LEAVE_HOOKS = _ENTER, _LEAVE

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
* where a module-level ``device`` definition goes and what it is called.

``enter``/``leave`` do one dictionary lookup by node type; most node types do
nothing else, which keeps the walk fast.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check._rule import Edit, Finding, Fix, Rule
from torchport.check._source import SourceText

__all__ = ["Context"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPES = (*_FUNCTIONS, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Names tried, in order, for the module-level device; the first one free or already
# bound to a device-like value wins.
_DEVICE_NAMES = ("device", "_device", "torch_device")
_NOT_A_DEVICE = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Lambda, ast.ListComp, ast.DictComp)


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


def _is_import_block(stmt: ast.stmt) -> bool:
    """An import, or a ``try``/``if`` that only imports (optional dependencies)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(stmt, (ast.Try, ast.If)):
        parts = [*stmt.body, *stmt.orelse]
        if isinstance(stmt, ast.Try):
            parts += [s for handler in stmt.handlers for s in handler.body]
        return all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in parts)
    return False


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return min([stmt.lineno, *(d.lineno for d in decorators)]) if decorators else stmt.lineno


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
        self._stores_cache: dict[int, frozenset[str]] = {}
        self._last_expr: ast.expr | None = None
        self._last_name: str | None = None
        self._prescan(tree)

    # ------------------------------------------------------------ pre-scan

    def _prescan(self, tree: ast.Module) -> None:
        body = tree.body
        last: ast.stmt | None = None
        leading = True
        for i, stmt in enumerate(body):
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Try, ast.If)):
                self._scan_imports(stmt)
            if leading:
                if (i == 0 and _is_docstring(stmt)) or _is_import_block(stmt):
                    last = stmt
                else:
                    leading = False
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
        torch_stmt = self._torch_stmt
        if torch_stmt is not None and (last is None or torch_stmt.lineno > last.lineno):
            last = torch_stmt  # `import torch` after a sys.path tweak: define the device after it
        self._after_imports = last
        first_import = next(
            (
                s
                for s in body
                if isinstance(s, (ast.Import, ast.ImportFrom))
                and not (isinstance(s, ast.ImportFrom) and s.module == "__future__")
            ),
            None,
        )
        self._first_import = first_import
        self._first_stmt = body[0] if body else None

    def _scan_imports(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for local, qualified in _import_aliases(stmt):
                self._aliases[local] = qualified
                if qualified == "torch" and self._torch_stmt is None:
                    self._torch_stmt = stmt
        elif _is_import_block(stmt):
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
        """The name the module imported torch as (``"torch"`` when it did not: see torch_edits)."""
        for local, qualified in self._aliases.items():
            if qualified == "torch" and self._top.get(local) is not None:
                return local
        return "torch"

    def torch_edits(self) -> tuple[Edit, ...]:
        """The edit adding ``import torch`` when the module does not import torch at top level."""
        if self._torch_stmt is not None:
            return ()
        if self._torch_before_block():
            assert self._first_import is not None
            at = self.offset(_first_line(self._first_import), 0)
            return (Edit(at, at, "import torch" + self.newline),)
        return (self._header_edit(None),)

    def _torch_before_block(self) -> bool:
        """Whether a missing ``import torch`` goes before the first import of the leading block."""
        anchor, last = self._first_import, self._after_imports
        return anchor is not None and last is not None and anchor.lineno <= last.lineno

    # ------------------------------------------------------------ the device

    def device_expr(self) -> str:
        """The expression a fresh device definition binds."""
        t = self.torch_name()
        return (
            f"{t}.accelerator.current_accelerator() if {t}.accelerator.is_available() "
            f'else {t}.device("cpu")'
        )

    def device_definition(self) -> tuple[str, tuple[Edit, ...]]:
        """The name to use for the device here and the edits (maybe none) that define it.

        An existing module-level binding of ``device`` to a device-like value is
        reused when it is visible here; otherwise the first free name among
        ``device``, ``_device``, ``torch_device`` is defined once, right after
        the module's leading imports (adding ``import torch`` if needed).
        """
        here = self.ancestors[1] if len(self.ancestors) > 1 else None
        func = next((a for a in reversed(self.ancestors) if isinstance(a, _FUNCTIONS)), None)
        stores = self._stores(func) if func is not None else frozenset()
        local = self._scopes[-1][1]
        for name in _DEVICE_NAMES:
            if func is not None and name in local:
                return name, ()  # a parameter or a local bound before this point
            if name in stores:
                continue  # bound later in this function: using it here would fail
            stmt = self._top.get(name)
            if stmt is None:
                return name, self._definition_edits(name)
            value = getattr(stmt, "value", None)
            device_like = value is not None and not (
                isinstance(value, _NOT_A_DEVICE)
                or (isinstance(value, ast.Constant) and not isinstance(value.value, str))
            )
            visible = func is not None or (isinstance(here, ast.stmt) and stmt.lineno < here.lineno)
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and device_like and visible:
                return name, ()
        return "_torchport_device", self._definition_edits("_torchport_device")

    def _stores(self, func: ast.AST) -> frozenset[str]:
        """Names a function assigns (cached: walked once, and only when a fix needs a device)."""
        found = self._stores_cache.get(id(func))
        if found is None:
            found = frozenset(
                n.id
                for n in ast.walk(func)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
            self._stores_cache[id(func)] = found
        return found

    def _definition_edits(self, name: str) -> tuple[Edit, ...]:
        line = f"{name} = {self.device_expr()}"
        header = self._header_edit(line)
        imports = self.torch_edits()
        if imports and imports[0].start == header.start:
            return (header,)  # _header_edit already wrote `import torch` there
        return (*imports, header)

    def _header_edit(self, definition: str | None) -> Edit:
        """One insertion after the leading imports: ``import torch`` if missing, then the line."""
        nl = self.newline
        last = self._after_imports
        torch_here = self._torch_stmt is None and not self._torch_before_block()
        lines = (["import torch"] if torch_here else []) + ([definition] if definition else [])
        if last is not None:
            end = last.end_lineno or last.lineno
            starts = self._line_starts()
            if end + 1 < len(starts):
                at = starts[end + 1]
                return Edit(at, at, nl + nl.join(lines) + nl)
            at = len(self.source)
            return Edit(at, at, nl + nl + nl.join(lines) + nl)
        first = self._first_stmt
        at = self.offset(_first_line(first), 0) if first is not None else len(self.source)
        return Edit(at, at, nl.join(lines) + nl + nl)

    def finding(
        self, rule: Rule, node: ast.AST, *, message: str | None = None, fix: Fix | None = None
    ) -> Finding:
        """A finding of ``rule`` spanning ``node`` (1-based character columns)."""
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

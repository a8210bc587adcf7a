"""Which binding of a name reaches a node: definite assignment over the statements of a scope.

The questions a fix must answer before it uses a name: is the name bound on
every path to this node, and by which one binding. The answer walks back from
the node's statement over the statements before it and the blocks that hold
it, the way a compiler's definite-assignment check does, without building a
control-flow graph: ``if``/``try``/``with`` blocks bind a name when every path
that goes on binds it (a path that returns, raises, breaks or continues does
not go on), a loop never binds anything for the code after it, and a loop that
rebinds a name makes the binding at the top of its body "one of several".
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator

from torchport.check.semantic._binding import Binding, BindingKind, Scope, ScopeKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # ScopeQuestions is only an annotation: nothing tests it at run time

__all__ = ["FlowAnalysis", "ScopeQuestions"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_BLOCKS = ("body", "orelse", "finalbody")
_TRY = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_SIMPLE = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Import,
    ast.ImportFrom,
    ast.ClassDef,
    *_FUNCTIONS,
)
_UNBINDS = (BindingKind.DELETE, BindingKind.EXCEPT)  # `except E as x:` unbinds x at its end
_MAYBE = object()  # "may rebind": a binding that is one of several


class ScopeQuestions(Protocol):
    """The scope lookups the flow analysis and the resolver ask (a ScopeMap answers them)."""

    # the module's one star import of torch's names that nothing else may have bound
    # names of (``"torch"``, ``"torch.nn"``), else None (semantic/_star_names.py)
    wildcard: str | None

    def scope_of(self, node: ast.AST, /) -> Scope:
        """The scope whose code evaluates ``node``."""

    def resolve(self, name: str, node: ast.AST, /) -> Scope:
        """The scope whose binding of ``name`` a read at ``node`` sees."""

    def bindings(self, name: str, node: ast.AST, /) -> list[Binding]:
        """Every binding of ``name`` in the scope a read at ``node`` resolves to."""


class FlowAnalysis:
    """Definite-binding questions over one module whose scopes, parents and blocks are known.

    ``scopes`` answers where names resolve (the module's
    :class:`~torchport.check.semantic._scope.ScopeMap`, which builds this
    object); ``parents`` maps ``id(node)`` to the node directly enclosing it and
    ``positions`` maps ``id(statement)`` to (its block, its index there, the
    block's field), both built by the scope pass.
    """

    def __init__(
        self,
        scopes: ScopeQuestions,
        parents: dict[int, ast.AST],
        positions: dict[int, tuple[list[ast.stmt], int, str]],
    ) -> None:
        self._scopes = scopes
        self._parent = parents
        # A definite-binding question is asked for every candidate finding; searching
        # the block for each made a check quadratic in the findings of a long module.
        self._positions = positions
        # Built on first use, per block and per (scope, name): see _starts and _spans.
        self._block_starts: dict[int, tuple[list[ast.stmt], list[tuple[int, int]]]] = {}
        self._binding_spans: dict[
            tuple[int, str], tuple[list[Binding], list[tuple[int, int, int]]]
        ] = {}

    def statement(self, node: ast.AST) -> ast.stmt | None:
        """The innermost statement holding ``node`` (``node`` itself if it is one)."""
        cur: ast.AST | None = node
        while cur is not None and not isinstance(cur, ast.stmt):
            cur = self._parent.get(id(cur))
        return cur

    def definitely_bound(self, name: str, node: ast.AST) -> bool:
        """Whether ``name`` is bound on every path by the time ``node`` runs.

        For a read inside a function of a name from an enclosing scope, "by the
        time" means before the statement that creates the function runs there
        (the function cannot be called earlier). Star imports never count.
        """
        scope = self._scopes.resolve(name, node)
        own = self._scopes.scope_of(node)
        at: ast.AST = node
        if scope is not own:
            # Free name: find the statement of `scope` that creates the nested scope.
            s: Scope | None = own
            while s is not None and s.parent is not scope:
                s = s.parent
            if s is None:
                return False
            at = s.node
            if any(b.kind is BindingKind.DELETE for b in self._scopes.bindings(name, at)):
                return False
        if scope.kind in (ScopeKind.COMPREHENSION, ScopeKind.LAMBDA):
            return name in scope.bindings  # targets/parameters bind before the body runs
        return self._reach(name, at, scope)[0]

    def reaching(self, name: str, node: ast.AST) -> Binding | None:
        """The one binding of ``name`` that every path to ``node`` passes last, if there is one.

        Walks back from ``node``'s statement through the statements before it
        and the blocks that hold it, in the scope where the name resolves.
        None when the name may be unbound, when different bindings may reach
        ``node`` (a conditional rebinding, a loop that rebinds it), or when the
        name is free in ``node``'s scope (bound in another frame, at another time).
        """
        scope = self._scopes.resolve(name, node)
        if scope is not self._scopes.scope_of(node):
            return None
        bound, binding = self._reach(name, node, scope)
        return binding if bound else None

    def _reach(self, name: str, node: ast.AST, scope: Scope) -> tuple[bool, Binding | None]:
        """(definitely bound, the unique binding reaching ``node`` or None)."""
        if name not in scope.bindings:
            return False, None  # nothing in this scope binds it (globals: see definitely_bound)
        stmt = self.statement(node)
        unique = True
        while stmt is not None:
            holder = self._parent.get(id(stmt))
            if holder is None:
                return False, None
            block, index = self._block_of(holder, stmt)
            for before in self._binders_before(block, index, name, scope):
                inside = self._bound_in(before, name, scope)
                if not inside:
                    continue
                sure = self._sure_binding(before, name, scope)
                if sure is not None:
                    # A block that binds the name on several paths (`if: x = a` /
                    # `else: x = b`) is bound after it, but by no one binding.
                    one = isinstance(before, _SIMPLE) or len(inside) == 1
                    return True, sure if unique and one else None
                if any(b.kind in _UNBINDS for b in inside):
                    return False, None
                unique = False  # may rebind: an earlier binding may still be the one
            entry = self._entry_binding(holder, stmt, name, scope)
            if entry is _MAYBE:
                unique = False
            elif isinstance(entry, Binding):
                return True, entry if unique else None
            if holder is scope.node:
                if isinstance(holder, (*_FUNCTIONS, ast.Lambda)):
                    params = scope.bindings.get(name, ())
                    param = next((b for b in params if b.kind is BindingKind.PARAMETER), None)
                    return param is not None, param if unique else None
                return False, None
            if isinstance(holder, (ast.ExceptHandler, ast.match_case)):
                holder = self._parent.get(id(holder))
            stmt = holder if isinstance(holder, ast.stmt) else None
        return False, None

    def _entry_binding(
        self, holder: ast.AST, stmt: ast.stmt, name: str, scope: Scope
    ) -> Binding | object | None:
        """What entering ``holder``'s block that holds ``stmt`` binds (``_MAYBE``: may rebind)."""
        if name in self._header_names(holder):
            if isinstance(holder, (ast.For, ast.AsyncFor)) and any(s is stmt for s in holder.body):
                return self._binding_in(holder.target, name, scope) or _MAYBE
            if isinstance(holder, (ast.If, ast.While)):
                return self._sure_walrus(holder.test, name, scope) or _MAYBE
            if isinstance(holder, (ast.With, ast.AsyncWith)):
                for item in holder.items:
                    if item.optional_vars is not None:
                        found = self._binding_in(item.optional_vars, name, scope)
                        if found is not None:
                            return found
            return _MAYBE
        if isinstance(holder, (ast.For, ast.AsyncFor, ast.While)):
            if any(self._bound_in(s, name, scope) for s in (*holder.body, *holder.orelse)):
                return _MAYBE  # rebound inside the loop: the next iteration differs
            return None
        if isinstance(holder, ast.ExceptHandler):
            if holder.name == name:
                return next((b for b in scope.bindings.get(name, ()) if b.node is holder), None)
            return None
        if isinstance(holder, _TRY) and any(s is stmt for s in holder.orelse):
            for before in reversed(holder.body):
                if self._bound_in(before, name, scope):
                    return self._sure_binding(before, name, scope) or _MAYBE
            return None
        if isinstance(holder, ast.match_case):
            return _MAYBE if name in self._pattern_names(holder.pattern) else None
        return None

    def _sure_walrus(self, test: ast.expr, name: str, scope: Scope) -> Binding | None:
        """The walrus binding of ``name`` that evaluating ``test`` always runs, if any."""
        for b in scope.bindings.get(name, ()):
            if b.kind is not BindingKind.WALRUS:
                continue
            cur = self._parent.get(id(b.node))  # the NamedExpr
            while cur is not None and cur is not test:
                up = self._parent.get(id(cur))
                if isinstance(up, (ast.BoolOp, ast.IfExp, ast.Lambda, *_COMPREHENSIONS)):
                    first = isinstance(up, ast.BoolOp) and up.values[0] is cur
                    if not (first or (isinstance(up, ast.IfExp) and up.test is cur)):
                        break  # evaluated only on some paths
                cur = up
            if cur is test:
                return b
        return None

    def _header_names(self, holder: ast.AST) -> set[str]:
        """Names bound by a compound statement's header (targets, walrus in tests)."""
        parts: list[ast.AST] = []
        if isinstance(holder, (ast.If, ast.While)):
            parts = [holder.test]
        elif isinstance(holder, (ast.For, ast.AsyncFor)):
            parts = [holder.target, holder.iter]
        elif isinstance(holder, (ast.With, ast.AsyncWith)):
            parts = list(holder.items)
        elif isinstance(holder, ast.Match):
            parts = [holder.subject]
        return {
            n.id
            for part in parts
            for n in ast.walk(part)
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }

    def _binding_in(self, target: ast.AST, name: str, scope: Scope) -> Binding | None:
        found = scope.bindings.get(name)
        if not found:
            return None
        # Only the bindings placed inside the target's span can be in it.
        spans = self._spans(name, scope)
        start = (target.lineno, target.col_offset, -1)  # type: ignore[attr-defined]
        end = (target.end_lineno, target.end_col_offset, len(found))  # type: ignore[attr-defined]
        lo, hi = bisect.bisect_left(spans, start), bisect.bisect_right(spans, end)
        for b in (found[i] for i in sorted(span[2] for span in spans[lo:hi])):
            cur: ast.AST | None = b.node
            while cur is not None and cur is not target:
                cur = self._parent.get(id(cur)) if isinstance(cur, ast.expr) else None
            if cur is target:
                return b
        return None

    @staticmethod
    def _pattern_names(pattern: ast.AST) -> set[str]:
        return {
            n
            for p in ast.walk(pattern)
            for n in (getattr(p, "name", None), getattr(p, "rest", None))
            if isinstance(n, str)
        }

    def _block_of(self, holder: ast.AST, stmt: ast.stmt) -> tuple[list[ast.stmt], int]:
        where = self._positions.get(id(stmt))
        if where is not None and getattr(holder, where[2], None) is where[0]:
            return where[0], where[1]
        return [stmt], 0

    def statement_position(self, stmt: ast.stmt) -> tuple[list[ast.stmt], int] | None:
        """The block holding ``stmt`` and its index there, or None when it is in none."""
        where = self._positions.get(id(stmt))
        return None if where is None else (where[0], where[1])

    def _binders_before(
        self, block: list[ast.stmt], index: int, name: str, scope: Scope
    ) -> Iterator[ast.stmt]:
        """The statements of ``block`` before ``index`` that hold a binding of ``name``, last first.

        The others cannot bind it: skipping them keeps a walk back proportional to
        the bindings it meets, not to the statements between them. Lazy, since the
        walk usually stops at the first.
        """
        spans = self._spans(name, scope)
        if not spans or index <= 0:
            return
        last = block[index - 1]
        first = (block[0].lineno, block[0].col_offset, -1)
        limit = (last.end_lineno or last.lineno, last.end_col_offset or 0, len(spans))
        lo = bisect.bisect_left(spans, first)
        hi = bisect.bisect_right(spans, limit)
        starts = self._starts(block)
        previous = index
        for j in range(hi - 1, lo - 1, -1):
            line, col, _ = spans[j]
            i = min(bisect.bisect_right(starts, (line, col)) - 1, index - 1)
            if 0 <= i < previous:
                previous = i
                yield block[i]

    def _starts(self, block: list[ast.stmt]) -> list[tuple[int, int]]:
        """Where each statement of ``block`` starts (cached per block)."""
        cache = self._block_starts
        known = cache.get(id(block))
        if known is None or known[0] is not block:
            known = cache[id(block)] = (block, [(s.lineno, s.col_offset) for s in block])
        return known[1]

    def _spans(self, name: str, scope: Scope) -> list[tuple[int, int, int]]:
        """(line, column, index in the scope's list) of each binding of ``name``, sorted.

        Cached per scope and name: the questions of one file reuse it.
        """
        cache = self._binding_spans
        found = scope.bindings.get(name)
        if not found:
            return []
        known = cache.get((id(scope), name))
        if known is None or known[0] is not found or len(known[1]) != len(found):
            spans = sorted(
                (b.node.lineno, b.node.col_offset, i)  # type: ignore[attr-defined]
                for i, b in enumerate(found)
            )
            known = cache[(id(scope), name)] = (found, spans)
        return known[1]

    def _bound_in(self, stmt: ast.stmt, name: str, scope: Scope) -> list[Binding]:
        """The bindings of ``name`` in ``scope`` that sit inside ``stmt`` (by source span)."""
        found = scope.bindings.get(name)
        if not found:
            return []
        start = (stmt.lineno, stmt.col_offset, -1)
        end = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0, len(found))
        spans = self._spans(name, scope)
        lo, hi = bisect.bisect_left(spans, start), bisect.bisect_right(spans, end)
        return [found[i] for i in sorted(span[2] for span in spans[lo:hi])]

    def _sure_binding(self, stmt: ast.stmt, name: str, scope: Scope) -> Binding | None:
        """The binding ``stmt`` surely leaves for ``name``, None if it may not bind it.

        Simple statements count, and ``if``/``try``/``with`` blocks whose every
        path that goes on binds the name (a path that returns, raises, breaks or
        continues does not go on); when the paths bind differently the result
        is the last binding if all are of one kind, else None.
        """
        if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
            star = self._bound_in(stmt, name, scope)  # a star import read from its module
            return star[-1] if star else None
        if isinstance(stmt, _SIMPLE):
            found = [
                b for b in self._bound_in(stmt, name, scope) if b.kind is not BindingKind.WALRUS
            ]
            if found and found[-1].kind is not BindingKind.DELETE:
                return found[-1]
            return None  # bound only by a walrus, which may sit in a short-circuit
        if isinstance(stmt, (ast.If, ast.While)):
            walrus = self._sure_walrus(stmt.test, name, scope)
            if walrus is not None and not any(
                self._bound_in(s, name, scope) for s in (*stmt.body, *stmt.orelse)
            ):
                return walrus
            if isinstance(stmt, ast.While):
                return None
            if self._block_binds(stmt.body, name, scope) and self._block_binds(
                stmt.orelse, name, scope
            ):
                return self._any_binding(stmt, name, scope)
            return None
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            if name in self._header_names(stmt) or self._block_binds(stmt.body, name, scope):
                return self._any_binding(stmt, name, scope)
            return None
        if isinstance(stmt, _TRY):
            assert isinstance(stmt, ast.Try)
            normal = self._block_binds([*stmt.body, *stmt.orelse], name, scope)
            handled = all(self._block_binds(h.body, name, scope) for h in stmt.handlers)
            if self._block_binds(stmt.finalbody, name, scope) or (normal and handled):
                return self._any_binding(stmt, name, scope)
        return None

    def _block_binds(self, block: list[ast.stmt], name: str, scope: Scope) -> bool:
        """Whether every path through ``block`` that reaches its end has bound ``name``."""
        bound = False
        for stmt in block:
            inside = self._bound_in(stmt, name, scope)
            if inside:
                if self._sure_binding(stmt, name, scope) is not None:
                    bound = True
                elif any(b.kind in _UNBINDS for b in inside):
                    bound = False
            if isinstance(stmt, _TERMINATORS):
                return True  # this path never reaches the end of the block
        return bound

    def _any_binding(self, stmt: ast.stmt, name: str, scope: Scope) -> Binding | None:
        found = self._bound_in(stmt, name, scope)
        if any(b.kind in _UNBINDS for b in found):
            return None
        if len(found) == 1:
            return found[0]
        # Several paths, several bindings: one stands in when they bind the same way.
        return found[-1] if found and all(b.kind is found[0].kind for b in found) else None

"""Which bindings of a name may reach a use: what the port joins when no single one does.

:meth:`ScopeMap.reaching <torchport.check.semantic.ScopeMap.reaching>` answers
with the one binding every path passes last, or nothing. Where it has nothing
(``labels`` rebound under an ``if``, or in a loop), the port needs the bindings
that may reach the use, not every binding of the scope: a notebook reuses
``labels`` for a string at the top and for batches below, and the string must
not make the batch look unknown.

The answer walks back from the use's statement over the statements before it,
block by block outwards, keeping the bindings inside each, and stops at a
simple statement that binds the name on every path (an assignment, an import,
a ``def``, a ``with`` whose body assigns it) or at the header of a loop or
``with`` that binds it; inside a loop, the bindings later in the loop's body
may reach too (the next iteration). A name free in the use's scope gets all
its bindings. The walk jumps from binding to binding (bisection over their
sorted positions), so its cost follows the bindings it meets, not the lines.
"""

from __future__ import annotations

import ast
import bisect

from torchport.check.semantic import Binding, BindingKind, ScopeMap

__all__ = ["Reaching"]

_BLOCKS = ("body", "orelse", "finalbody", "handlers")
_SURE = (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.FunctionDef,
         ast.AsyncFunctionDef, ast.ClassDef)  # fmt: skip
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)

_Key = tuple[int, int]


def _start(node: ast.AST) -> _Key:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _end(node: ast.AST) -> _Key:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


class Reaching:
    """May-reach questions for one file's scopes (see the module docstring)."""

    def __init__(self, scopes: ScopeMap) -> None:
        self.scopes = scopes
        # (id of the binding list, name) -> (the list, sorted positions, bindings in that order)
        self._sorted: dict[tuple[int, str], tuple[list[Binding], list[_Key], list[Binding]]] = {}
        self._starts: dict[int, tuple[list[ast.stmt], list[_Key]]] = {}
        self._nonlocals: dict[str, list[Binding]] | None = None

    def may_reach(self, name: ast.Name) -> list[Binding]:
        """The bindings of ``name`` that may be the one a read of it sees."""
        scopes = self.scopes
        scope = scopes.resolve(name.id, name)
        own = scope.bindings.get(name.id, [])
        # A function that declares the name `global` may rebind it between any two
        # statements (`setup()` making the tensor a module-level `x = None` stood for):
        # its bindings may reach every read of the module's name.
        # (`bindings` lists the scope's own first, then those of `global` declarations.)
        # A nested function's `nonlocal name` rebinds a function's name the same way.
        if scope is scopes.module:
            elsewhere = scopes.bindings(name.id, name)[len(own) :]
        else:
            elsewhere = [b for b in self._nonlocal(name.id) if b.scope is not scope and
                         scopes.resolve(name.id, b.scope.node) is scope]  # fmt: skip
        found = scopes.reaching(name.id, name)
        if found is not None:
            return [found, *elsewhere]
        if elsewhere or scope is not scopes.scope_of(name) or len(own) < 2:
            return [b for b in scopes.bindings(name.id, name) if b.kind is not BindingKind.DELETE]
        keys, ordered = self._positions(own, name.id)
        out: list[Binding] = []
        child: ast.AST | None = scopes.statement(name)
        while child is not None:
            holder = scopes.parent(child)
            if holder is None:
                break
            block = self._block(holder, child)
            if block is not None:
                stmts, index = block
                if self._back(stmts, index, keys, ordered, out):
                    return out
            entry = [
                ordered[i]
                for target in _header_targets(holder, child)
                for i in range(*self._range(keys, target))
            ]
            if entry:
                return out + entry  # `for x in ...:` binds `x` before each run of its body
            if isinstance(holder, _LOOPS):  # the next iteration
                lo, hi = self._range(keys, holder)
                out += [b for b in ordered[lo:hi] if b not in out]
            if isinstance(holder, _SCOPES):
                break
            child = holder
        kept = [b for b in out if b.kind is not BindingKind.DELETE]
        return kept or [b for b in own if b.kind is not BindingKind.DELETE]

    def reaching_parameters(self, name: ast.expr) -> list[Binding]:
        """The parameter bindings of ``name`` where it reads a parameter its function also
        rebinds, no other binding of it before the read's statement (the parameter's own
        binding reaches the read, on a loop's first run at least): ``def run(*xs): xs =
        [model(x) for x in xs]`` iterates what the caller handed, not only the list the
        statement makes (n31an). Empty where not such a read."""
        if not isinstance(name, ast.Name):
            return []
        own = self.scopes.resolve(name.id, name).bindings.get(name.id, [])
        params = [b for b in own if b.kind is BindingKind.PARAMETER]
        stmt = self.scopes.statement(name)
        if len(own) < 2 or not params or stmt is None:
            return []
        later = all(b in params or _start(b.node) >= _start(stmt) for b in own)
        return params if later else []

    def _nonlocal(self, name: str) -> list[Binding]:
        """Bindings made under ``nonlocal name`` declarations (gathered once per file)."""
        if self._nonlocals is None:
            found: dict[str, list[Binding]] = {}
            for s in self.scopes.scopes.values():
                for declared in s.declared_nonlocal:
                    found.setdefault(declared, []).extend(s.bindings.get(declared, ()))
            self._nonlocals = found
        return self._nonlocals.get(name, [])

    def _back(
        self,
        stmts: list[ast.stmt],
        index: int,
        keys: list[_Key],
        ordered: list[Binding],
        out: list[Binding],
    ) -> bool:
        """Collect the bindings in ``stmts[:index]``, last first; True at a sure one."""
        if index <= 0:
            return False
        lo = bisect.bisect_left(keys, _start(stmts[0]))
        j = bisect.bisect_right(keys, _end(stmts[index - 1])) - 1
        starts = self._block_starts(stmts)
        while j >= lo:
            i = bisect.bisect_right(starts, keys[j]) - 1
            if i < 0:
                break
            stmt = stmts[i]
            first = bisect.bisect_left(keys, _start(stmt))
            inside = ordered[first : j + 1]
            out += inside
            if _sure(stmt, inside):
                return True
            j = first - 1
        return False

    def _positions(self, own: list[Binding], name: str) -> tuple[list[_Key], list[Binding]]:
        key = (id(own), name)
        known = self._sorted.get(key)
        if known is None or known[0] is not own or len(known[2]) != len(own):
            ordered = sorted(own, key=lambda b: _start(b.node))
            known = self._sorted[key] = (own, [_start(b.node) for b in ordered], ordered)
        return known[1], known[2]

    def _block_starts(self, stmts: list[ast.stmt]) -> list[_Key]:
        known = self._starts.get(id(stmts))
        if known is None or known[0] is not stmts:
            known = self._starts[id(stmts)] = (stmts, [_start(s) for s in stmts])
        return known[1]

    @staticmethod
    def _range(keys: list[_Key], node: ast.AST) -> tuple[int, int]:
        return bisect.bisect_left(keys, _start(node)), bisect.bisect_right(keys, _end(node))

    def _block(self, holder: ast.AST, child: ast.AST) -> tuple[list[ast.stmt], int] | None:
        """The block of ``holder`` that holds ``child``, and where.

        A statement's block and index come from the scope pass (it records every
        ``body``/``orelse``/``finalbody`` position as it walks); an ``except``
        handler is looked for in ``holder``'s handlers (a few). No walk of its own.
        """
        if isinstance(child, ast.stmt):
            found = self.scopes.statement_position(child)
            if found is None:
                return None
            block = found[0]
            if any(getattr(holder, f, None) is block for f in _BLOCKS):
                return found
            return None
        handlers = getattr(holder, "handlers", None)
        if isinstance(handlers, list):
            for i, handler in enumerate(handlers):
                if handler is child:
                    return handlers, i
        return None


def _sure(stmt: ast.stmt, inside: list[Binding]) -> bool:
    """Whether running ``stmt`` always leaves one of ``inside`` (its bindings of the name)."""
    if isinstance(stmt, _SURE):
        return True
    if isinstance(stmt, (ast.With, ast.AsyncWith)):  # its body runs whenever it goes on
        return any(
            isinstance(s, _SURE) and any(_start(s) <= _start(b.node) <= _end(s) for b in inside)
            for s in stmt.body
        )
    return False


def _header_targets(holder: ast.AST, child: ast.AST) -> list[ast.expr]:
    """The targets a loop or ``with`` binds before running the block that holds ``child``."""
    if isinstance(holder, (ast.For, ast.AsyncFor)) and any(s is child for s in holder.body):
        return [holder.target]
    if isinstance(holder, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in holder.items if i.optional_vars is not None]
    return []

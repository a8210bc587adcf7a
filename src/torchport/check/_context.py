"""The state of one walk over one file, as the rules see it.

The engine creates one :class:`Context` per file, and for every node it runs the
rules registered for the node's type first, then pushes the node on
``ctx.ancestors``, walks the children, and pops it. So while a rule looks at a
node, ``ctx.ancestors`` holds the nodes that enclose it (innermost last), not
the node itself.

What a name means is never the walk's business: the module's scopes and
bindings (:attr:`Context.scopes`, one pass over the tree, built the first time
a rule asks about a name that some import binds) answer every rule's question,
so two rules cannot disagree about a name.
:meth:`Context.qualname` and :meth:`Context.value_of` are thin views over it;
from it also come where a ``device`` definition or ``import torch`` may go
(:meth:`Context.device_at`, :meth:`Context.torch_at`).
"""

from __future__ import annotations

import ast
import re

from torchport.check._patterns import lazy_pattern
from torchport.check._rule import NO_FIX, Edit, Finding, Fix, Rule
from torchport.check._source import SourceText
from torchport.check._syntax import adopt_scopes
from torchport.check.semantic._binding import StatementFacts, statement_facts
from torchport.check.semantic._module_imports import ModuleImports
from torchport.check.semantic._placement import _Plan, device_at, device_expr, torch_at
from torchport.check.semantic._resolve import Callee
from torchport.check.semantic._scope import ScopeMap

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.semantic._star_names import Exports

__all__ = ["Context"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPES = (*_FUNCTIONS, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# The word `for`, then spaces, brackets, line joins and comments (may_hold_a_value).
# `for`, then its run (see loop_heads). The word start before it is tested apart: a
# pattern that starts with `\b` is tried at every character of the text; one that starts
# with the literal `for` jumps from one `for` to the next (15x less over three trees).
_FOR_RUN = lazy_pattern(r"for\b((?:[\s(\\]|#[^\r\n]*)*)")
_WORD = lazy_pattern(r"\w+")
_WORD_CHAR = lazy_pattern(r"\w")


class Context(SourceText):
    """Where the walk is in one file, and how to report and fix things there.

    Positions and text edits come from :class:`~torchport.check._source.SourceText`.
    """

    def __init__(
        self, source: str, path: str, tree: ast.Module, target_torch: tuple[int, int] | None = None
    ) -> None:
        super().__init__(source)
        self.path = path
        self.tree = tree
        self.ancestors: list[ast.AST] = []
        self.target_torch = target_torch  # the engine's setting (None: no limit; _placed.py)
        # Names some import binds somewhere (cheap: statements only). A name outside it
        # resolves to no import anywhere, so most questions need no scope pass at all.
        facts = statement_facts(tree)
        self.import_tails, self.alias_tails, assigned = facts.tails, facts.aliases, facts.assigned
        self.attribute_alias_tails = facts.attribute_aliases  # `self.pack = pps`: "pack" -> its
        # What each module-level star import binds (None: no star import; see _read_stars)
        self._stars: dict[int, Exports | None] | None = None
        self._wildcard = False  # a star import of torch's names: any free name may be torch's
        if facts.stars:
            self._read_stars(facts)
        # What a `from compat import L` binds to torch's objects through the project's own modules
        # (id(statement) -> name -> target), and an `import compat as c` (`c.L`); see _read_named
        self._named: dict[int, dict[str, str]] = {}
        self._through: dict[str, dict[str, str]] = {}
        # attribute -> the last part of its target, for `c.L` (the engine's call dispatch)
        self.attr_tails: dict[str, str] = {}
        if facts.froms or facts.plain:
            self._read_named(facts)
        # (local name, dotted target) of every import anywhere (the scope pass's import
        # bindings): questions about imports alone need no scope pass
        self.imported = facts.imported
        # Names some `x = value` binds somewhere (None: any, when the file has a `:=`). A
        # name outside it holds no known value anywhere: value_of needs no scope pass.
        self._assigned: frozenset[str] | None = None if ":=" in source else assigned
        self._loop_targets: dict[str, bool] = {}  # may_hold_a_value's answers
        self._for_heads: tuple[frozenset[str], tuple[str, ...]] | None = None  # _loop_heads
        # A scope map another pass built on this very tree (the port's facts of a sibling
        # module, see _syntax.keep_parsed): the same answers, not built twice.
        adopted = adopt_scopes(tree)
        self._scope_map: ScopeMap | None = adopted if isinstance(adopted, ScopeMap) else None
        self._module_imports = ModuleImports(facts, source, tree)  # see _fast_qualname
        self._placement: _Plan | None = None
        self._last_expr: ast.expr | None = None
        self._last_name: str | None = None
        self._torch_name: str | None = None
        # What other passes work out once per file (the port's facts, plans ...), by the
        # name of what they hold; dropped by release(), never carried to the next file.
        self.memo: dict[str, object] = {}

    def _read_stars(self, facts: StatementFacts) -> None:
        """Bind what the file's star imports bind, as imports of their targets.

        ``from helpers import *`` binds ``helpers``'s public names here (read from its file,
        transitively: ``port/_star_imports.py``, on first use: only files with a star
        import pay for it); the names join the statements' imports, so every question
        about them (the engine's dispatch, ``qualname``, the scope pass) sees them.
        """
        from torchport.check.port._star_imports import star_bindings

        stars = sorted(facts.stars, key=lambda s: (s.lineno, s.col_offset))
        answers = self._stars = star_bindings(self.path, stars)
        tails = self.import_tails
        for stmt in stars:
            found = answers[id(stmt)]
            if found is None:
                continue
            self._wildcard = self._wildcard or bool(found[1])
            for local, target in found[0].items():
                tail = (target or local).rpartition(".")[2]
                tails[local] = tail if tails.get(local, tail) == tail else None
                facts.imported.append((local, target))
                facts.module_imports.setdefault(local, set()).add(target)

    def _read_named(self, facts: StatementFacts) -> None:
        """Bind what the file's ``from m import a`` of the project's own modules bind to torch.

        ``compat.py`` doing ``from torch import load as L`` makes ``from compat import L``
        (``as M``, ``from .compat import L``, through more such modules) bind ``torch.load``
        here, as ``from torch import load as L`` would, and ``import compat as c`` makes
        ``c.L`` mean ``torch.load`` (``qualname``): ``port/_star_imports.py`` reads the
        modules (one resolver for star and named imports). The names join the statements'
        imports, as a star import's do.
        """
        from torchport.check.port._star_imports import torch_bindings

        found, self._through = torch_bindings(self.path, facts.froms, facts.plain, self.source)
        self._named = found
        for names in self._through.values():
            for attr, target in names.items():
                tail = target.rpartition(".")[2]
                if tail != attr:
                    self.attr_tails[attr] = tail
        tails = self.import_tails
        for names in found.values():
            for local, target in names.items():
                tail = target.rpartition(".")[2]
                tails[local] = tail if tails.get(local, tail) == tail else None
                facts.imported.append((local, target))
                if local in facts.module_imports:
                    facts.module_imports[local].add(target)

    @property
    def has_project_torch(self) -> bool:
        """Whether an import of the project's own module ``m`` binds torch's objects here
        (``from m import a``, ``import m``: :meth:`_read_named`; ``from m import *``)."""
        return bool(self._named or self._through) or any(
            target == "torch" or target.startswith("torch.")
            for found in (self._stars or {}).values()
            if found is not None
            for target in found[0].values()
            if target is not None
        )

    @property
    def has_star_imports(self) -> bool:
        """Whether the file has a star import (``from m import *``, always at module level)."""
        return self._stars is not None

    def star_names(self, stmt: ast.ImportFrom) -> frozenset[str] | None:
        """The names the file's star import ``stmt`` binds (None: not known, or torch's)."""
        found = (self._stars or {}).get(id(stmt))
        return None if found is None or found[1] else frozenset(found[0])

    # ------------------------------------------------------------ the walk

    def enter(self, node: ast.AST) -> None:
        """Called by the engine after the rules ran on ``node``, before its children."""
        self.ancestors.append(node)

    def leave(self, node: ast.AST) -> None:
        """Called by the engine after ``node``'s children."""
        self.ancestors.pop()

    def project_answer(self, expr: ast.expr, method: str, *, instance: bool) -> str | None:
        """Whose ``method`` a name the project's own modules bind has (``"torch"``, ``"other"``,
        ``"unknown"``; None: no project's name): ``port/_project_view.py``, on first use."""
        from torchport.check.port._project_view import project_answer

        return project_answer(expr, method, self, instance=instance)

    def project_methods(self) -> frozenset[str]:
        """Device methods of their own of the project's non-torch classes this file imports."""
        from torchport.check.port._project_view import project_methods

        return project_methods(self)

    def release(self) -> None:
        """Break the file's reference cycles once its walk is done.

        A scope's bindings point back at their scope, and the placement plan at
        this context: without this, every file's analysis would wait, as cyclic
        garbage, for the collector (which ``check`` pauses per chunk of files).
        Reference counting frees all of it here, at once.
        """
        if self._scope_map is not None:
            for scope in self._scope_map.scopes.values():
                scope.bindings.clear()
            self._scope_map = None
        self._placement = None
        self._last_expr = None
        self.memo.clear()
        self.ancestors.clear()

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

    # ------------------------------------------------------------ names

    def qualname(self, expr: ast.expr, *, at_module: bool = False) -> str | None:
        """The dotted name ``expr`` refers to through imports where it is, or None.

        ``th.cuda.synchronize`` after ``import torch as th`` is
        ``"torch.cuda.synchronize"``; a name no import binds there (a parameter named
        ``torch``, a local ``cuda = Device()``) gives None. ``at_module``: read in the
        module's own scope, the same answer (from its statements where the text declines).
        See :meth:`~torchport.check.semantic.ScopeMap.qualname`.
        """
        if expr is self._last_expr:
            return self._last_name  # several rules ask about the same call's function
        root = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or (
            root.id not in self.import_tails and not self._wildcard
        ):
            name = None
        else:
            name = self._fast_qualname(expr, root, at_module)  # "": known, no dotted name
            name = self.scopes.qualname(expr) if name is None else name or None
        self._last_expr, self._last_name = expr, name
        return name

    def imported_name(self, expr: ast.expr) -> str | None:
        """:meth:`qualname` without the scope pass (None where only the pass could tell)."""
        root = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        return self._fast_qualname(expr, root) if isinstance(root, ast.Name) else None

    def only_imported(self, name: str) -> bool:
        """Whether only imports bind ``name`` at module level (a function's or class's own
        bindings aside), read without the scope pass (False: unknown, ask :attr:`scopes`)."""
        return self._module_imports.only_at_module(name)

    def _fast_qualname(self, expr: ast.expr, root: ast.Name, at_module: bool = False) -> str | None:
        """``qualname`` without the scope pass where only module-level imports bind ``root``
        (None: the pass must answer; ``semantic/_module_imports.py``)."""
        target = self._module_imports.target(root.id, at_module=at_module)
        if not target:
            return target  # (None, or "" read at module level: a relative import's, no name)
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        parts.append(target)
        name = ".".join(reversed(parts))
        if self._through:
            from torchport.check.semantic._star_names import project_target

            return project_target(name, self._through)
        return name

    def callee(self, call: ast.Call) -> Callee | None:
        """What ``call`` calls through aliases, ``functools.partial`` and ``getattr``, or None.

        See :meth:`~torchport.check.semantic.ScopeMap.callee`.
        """
        name = self.qualname(call.func)
        if name is not None:
            # the scope map's first answer too (Resolver.function), without building it
            return Callee(name)
        return self.scopes.callee(call)

    def value_of(self, name: ast.Name) -> ast.expr | None:
        """The value ``name`` holds where it is read (``x = value``), None when unknown.

        See :meth:`~torchport.check.semantic.ScopeMap.value_of`.
        """
        if self._assigned is not None and name.id not in self._assigned:
            return None  # no binding of it anywhere has a value (the scope map's answer too)
        return self.scopes.value_of(name)

    def may_hold_a_value(self, name: str) -> bool:
        """Whether some binding of ``name`` anywhere in the file may give it a value to follow.

        False only when none can: no ``name = value`` or ``name: T = value`` (the
        statements' assigned names), no ``:=`` in the text, and no ``for`` loop or
        comprehension with ``name`` itself as its target (the text shows none: the
        keyword ``for``, then only spaces, brackets, line joins or comments, then the
        name). Such a name's :func:`~torchport.check.semantic._residence.bound_value`
        is None wherever it is read, and no scope pass need say so.
        """
        if self._assigned is None or name in self._assigned:
            return True
        found = self._loop_targets.get(name)
        if found is None:
            # A non-ASCII file may spell the name otherwise (NFKC): the scope pass decides.
            if not self.source.isascii():
                found = True
            else:
                found = written_as_loop_target(self._loop_heads(), name)
            self._loop_targets[name] = found
        return found

    def _loop_heads(self) -> tuple[frozenset[str], tuple[str, ...]]:
        if self._for_heads is None:
            self._for_heads = loop_heads(self.source)
        return self._for_heads

    def torch_name(self) -> str:
        """The name the module imported torch as at top level (``"torch"`` when it did not).

        For messages. A fix that writes torch's name asks :meth:`torch_at`.
        """
        if self._torch_name is not None:
            return self._torch_name  # asked per finding: the module's bindings scanned once
        scopes = self.scopes
        found = [
            b
            for bindings in scopes.module.bindings.values()
            for b in bindings
            if b.qualified == "torch" and scopes.parent(b.node) is self.tree
        ]
        name = min(found, key=lambda b: b.node.lineno).name if found else "torch"  # type: ignore[attr-defined]
        self._torch_name = name
        return name

    # ------------------------------------------------------------ scopes and the device

    @property
    def scopes(self) -> ScopeMap:
        """Scopes and bindings of the whole module: the one semantic model (built on first use).

        Only the Context builds a ``ScopeMap`` (held by ``tests/test_claims.py``).
        """
        if self._scope_map is None:
            self._scope_map = ScopeMap(self.tree, self._stars, self._named, self._through)
        return self._scope_map

    @property
    def built_scopes(self) -> ScopeMap | None:
        """The scope map if something asked for it already (None: not built)."""
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


def loop_heads(source: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """What may follow a ``for`` as its target in ``source``, found with one scan.

    After each word ``for`` comes a run of spaces, ``(``, ``\\`` and comments (each to
    its line's end), then the word that may be the target: a head. Returned: the
    heads, and the text of each run that holds a comment (a comment may be cut
    anywhere, so a name anywhere in one may be what the run leads to).
    """
    heads: set[str] = set()
    comments: list[str] = []
    search, word_char = _FOR_RUN.search, _WORD_CHAR.match
    at = 0
    while (match := search(source, at)) is not None:
        start = match.start()
        if start and word_char(source, start - 1) is not None:  # `xfor`: no word `for`
            at = start + 1  # (its run may hold one: `xfor # for y`)
            continue
        end = at = match.end()
        word = _WORD.match(source, end)
        if word is not None:
            heads.add(word.group())
        if "#" in match.group(1):
            # the run ends after a line end or at the text's end, never inside a comment:
            # a name ending at its last character ends before a word boundary in the text
            comments.append(source[match.start(1) : end])
    return frozenset(heads), tuple(comments)


def written_as_loop_target(found: tuple[frozenset[str], tuple[str, ...]], name: str) -> bool:
    """Whether ``for``, a run of spaces, brackets, line joins or comments, then ``name``
    followed by a word boundary occurs in the text :func:`loop_heads` scanned (``found``).

    The same answer as searching the whole text for that pattern name by name
    (``tests/check/test_context.py`` holds them equal), from one scan per file.
    """
    heads, comments = found
    if name in heads:
        return True
    if not comments:
        return False
    ends = re.compile(rf"{re.escape(name)}\b")
    return any(ends.search(text) is not None for text in comments)

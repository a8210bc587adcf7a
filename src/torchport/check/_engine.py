"""The checker's engine: one parse and one walk per file, and the loop that applies fixes.

For every file the engine calls :func:`ast.parse` once and walks the tree once,
iteratively, children in :func:`ast.iter_child_nodes` order. At each node it
runs the selected rules registered for the node's exact type (a dispatch table
built once per rule set), then calls ``ctx.enter(node)``, walks the children and
calls ``ctx.leave(node)``. Expression contexts (``Load``/``Store``) and operator
nodes (``Add``, ``Eq`` ...) are not visited unless a rule asks for their type:
they carry no position and nearly halve the number of nodes.

A rule that raises is a bug in torchport, not in the checked code: the engine
records a :class:`RuleFailure` naming the rule and the file, turns that rule off
for the rest of the file, and goes on (:func:`check_source` raises instead, so
that rule tests see the traceback).

Fixes follow Ruff's model: a fix is a set of text edits at character offsets
into the source. :func:`fix_text` repeats {check; accept fixes in source order;
apply; re-parse} until nothing changes. An edit identical to one already
accepted is shared rather than applied twice (several findings that all insert
the same ``device = ...`` line produce one line); a fix overlapping an accepted
edit waits for the next round. Text outside the edits is never touched.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import functools
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from torchport.check._context import Context
from torchport.check._rule import Edit, Finding, FixSafety, Rule
from torchport.check._select import available_rules, select_rules
from torchport.check._suppress import NoqaMap, parse_noqa

__all__ = [
    "MAX_FIX_ROUNDS",
    "CheckOutcome",
    "FixOutcome",
    "RuleFailure",
    "RuleSet",
    "check_source",
    "check_text",
    "fix_source",
    "fix_text",
    "ruleset_for",
]

MAX_FIX_ROUNDS = 10

# Node classes with no position that rules have no use for; skipped unless asked for.
_UNPOSITIONED: tuple[type[ast.AST], ...] = (
    ast.expr_context,
    ast.boolop,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
)
_UNPOSITIONED_FIELDS = frozenset({"ctx", "op", "ops"})
_COMPOUND: tuple[type[ast.AST], ...] = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.Match,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)
_LEAVE = object()  # stack marker: the node below it is finished


@dataclass(frozen=True, slots=True)
class RuleFailure:
    """A rule raised while checking a file: a bug in torchport, reported, never fatal."""

    code: str
    name: str
    path: str
    line: int
    error: str

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: internal error in rule {self.code} ({self.name}): "
            f"{self.error}; this is a torchport bug, please report it "
            f"(select around it with --ignore {self.code})"
        )


class RuleSet:
    """Instances of the selected rules and the table that maps a node type to its rules."""

    def __init__(self, rules: Iterable[type[Rule]]) -> None:
        self.classes: tuple[type[Rule], ...] = tuple(sorted(set(rules), key=lambda r: r.code))
        self.rules: tuple[Rule, ...] = tuple(cls() for cls in self.classes)
        dispatch: dict[type[ast.AST], list[Rule]] = {}
        for rule in self.rules:
            for node_type in rule.node_types:
                dispatch.setdefault(node_type, []).append(rule)
        self.dispatch: dict[type[ast.AST], tuple[Rule, ...]] = {
            node_type: tuple(found) for node_type, found in dispatch.items()
        }
        self.visit_unpositioned = any(issubclass(t, _UNPOSITIONED) for t in self.dispatch)
        self.codes = frozenset(cls.code for cls in self.classes)

    def __len__(self) -> int:
        return len(self.rules)

    def without(self, codes: Collection[str]) -> RuleSet:
        """This set minus the rules whose code starts with one of ``codes``."""
        prefixes = tuple(codes)
        return RuleSet(cls for cls in self.classes if not cls.code.startswith(prefixes))


@dataclass(slots=True)
class CheckOutcome:
    """What checking one source produced."""

    findings: list[Finding]
    failures: list[RuleFailure] = field(default_factory=list)


@dataclass(slots=True)
class FixOutcome:
    """What fixing one source produced: the new text, the fixes applied by code, what is left."""

    source: str
    fixed: Counter[str]
    remaining: list[Finding]
    failures: list[RuleFailure] = field(default_factory=list)

    def diff(self, original: str, path: str) -> str:
        """A unified diff from ``original`` to the fixed source (empty when nothing changed)."""
        if original == self.source:
            return ""
        return "".join(
            difflib.unified_diff(
                original.splitlines(keepends=True),
                self.source.splitlines(keepends=True),
                fromfile=f"a/{path}",
                tofile=f"b/{path}",
            )
        )


# ---------------------------------------------------------------- rule sets


@functools.lru_cache(maxsize=64)
def _cached_ruleset(
    select: tuple[str, ...] | None, ignore: tuple[str, ...], pool: tuple[type[Rule], ...]
) -> RuleSet:
    return RuleSet(select_rules(select, ignore, available=pool))


def ruleset_for(select: Collection[str] | None, ignore: Collection[str] | None) -> RuleSet:
    """The (cached) rule set for these selectors over :func:`available_rules`."""
    return _cached_ruleset(
        None if select is None else tuple(select), tuple(ignore or ()), available_rules()
    )


# ---------------------------------------------------------------- the walk


def _child_fields(cls: type[ast.AST], skip_unpositioned: bool) -> tuple[str, ...]:
    if skip_unpositioned:
        return tuple(name for name in cls._fields if name not in _UNPOSITIONED_FIELDS)
    return tuple(cls._fields)


def _statement_span(node: ast.AST, ancestors: Sequence[ast.AST]) -> tuple[int, int] | None:
    """Lines of the innermost simple statement holding ``node`` (None inside a compound header)."""
    for candidate in (node, *reversed(ancestors)):
        if isinstance(candidate, ast.stmt):
            if isinstance(candidate, _COMPOUND):
                return None
            end = candidate.end_lineno or candidate.lineno
            return candidate.lineno, end
    return None


def _walk(
    tree: ast.Module, ctx: Context, ruleset: RuleSet, noqa: NoqaMap, *, strict: bool
) -> CheckOutcome:
    findings: list[Finding] = []
    failures: list[RuleFailure] = []
    dispatch = ruleset.dispatch
    skip = not ruleset.visit_unpositioned
    fields_of: dict[type[ast.AST], tuple[str, ...]] = {}
    enter, leave = ctx.enter, ctx.leave
    node_class = ast.AST
    stack: list[Any] = [tree]  # nodes, each finished node followed by _LEAVE
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        if node is _LEAVE:
            leave(pop())
            continue
        cls = type(node)
        rules = dispatch.get(cls)
        if rules is not None:
            for rule in rules:
                try:
                    for finding in rule.check(node, ctx):
                        if noqa:
                            first, last = finding.line, finding.end_line
                            span = _statement_span(node, ctx.ancestors)
                            if span is not None:
                                first, last = min(first, span[0]), max(last, span[1])
                            if noqa.silences(finding.code, first, last):
                                continue
                        findings.append(finding)
                except Exception as exc:
                    line = getattr(node, "lineno", 1)
                    failure = RuleFailure(rule.code, rule.name, ctx.path, line, repr(exc))
                    if strict:
                        raise RuntimeError(str(failure)) from exc
                    failures.append(failure)
                    # The rule is broken for this file: stop calling it.
                    dispatch = {
                        t: tuple(r for r in rs if r is not rule) for t, rs in dispatch.items()
                    }
        enter(node)
        push(node)
        push(_LEAVE)
        fields = fields_of.get(cls)
        if fields is None:
            fields = fields_of[cls] = _child_fields(cls, skip)
        start = len(stack)
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, node_class):
                        push(item)
            elif isinstance(value, node_class):
                push(value)
        if len(stack) - start > 1:
            stack[start:] = stack[: start - 1 : -1]
    findings.sort(key=_finding_key)
    return CheckOutcome(list(dict.fromkeys(findings)), failures)


def _finding_key(finding: Finding) -> tuple[int, int, str, int, int, str]:
    return (
        finding.line,
        finding.col,
        finding.code,
        finding.end_line,
        finding.end_col,
        finding.message,
    )


def check_tree(
    source: str, path: str, tree: ast.Module, ruleset: RuleSet, *, strict: bool = False
) -> CheckOutcome:
    """Run ``ruleset`` over an already parsed ``tree`` of ``source``."""
    if not ruleset.rules:
        return CheckOutcome([])
    noqa = parse_noqa(source)
    if noqa.file_codes is None:
        return CheckOutcome([])
    if noqa.file_codes:
        ruleset = ruleset.without(noqa.file_codes)
    return _walk(tree, Context(source, path, tree), ruleset, noqa, strict=strict)


def check_text(source: str, path: str, ruleset: RuleSet, *, strict: bool = False) -> CheckOutcome:
    """Parse ``source`` once and run ``ruleset`` over it.

    Raises:
        SyntaxError: ``source`` does not parse.
    """
    return check_tree(source, path, ast.parse(source, filename=path), ruleset, strict=strict)


# ---------------------------------------------------------------- fixes


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.start == a.end and b.start == b.end:
        return a.start == b.start  # two different insertions at one point: order unknown
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def _apply(source: str, edits: Iterable[Edit]) -> str:
    parts: list[str] = []
    at = 0
    for edit in sorted(edits):
        parts.append(source[at : edit.start])
        parts.append(edit.text)
        at = edit.end
    parts.append(source[at:])
    return "".join(parts)


def _valid_edits(edits: Sequence[Edit], size: int) -> bool:
    if not edits or any(not 0 <= e.start <= e.end <= size for e in edits):
        return False
    return not any(_overlaps(a, b) for i, a in enumerate(edits) for b in edits[i + 1 :] if a != b)


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


class _Accepted:
    """Accepted edits, pairwise non-overlapping, kept sorted so a conflict check is a bisect."""

    def __init__(self) -> None:
        self.edits: list[Edit] = []
        self.starts: list[int] = []
        self.members: set[Edit] = set()

    def conflicts(self, edit: Edit) -> bool:
        # Disjoint spans sorted by start also have sorted ends: walk left from the
        # last span starting at or before edit.end until spans end before edit.start.
        j = bisect.bisect_right(self.starts, edit.end) - 1
        while j >= 0:
            other = self.edits[j]
            if _overlaps(edit, other):
                return True
            if other.end < edit.start:
                return False
            j -= 1
        return False

    def add(self, edit: Edit) -> None:
        i = bisect.bisect_right(self.edits, edit)
        self.edits.insert(i, edit)
        self.starts.insert(i, edit.start)
        self.members.add(edit)


def _one_round(
    source: str, path: str, findings: Sequence[Finding], allowed: frozenset[FixSafety]
) -> tuple[str, list[Finding], list[RuleFailure]]:
    """Apply the non-conflicting fixes of one round; returns (source, applied, failures)."""
    candidates = [f for f in findings if f.fix is not None and f.fix.safety in allowed]
    candidates.sort(key=lambda f: (min((e.start for e in f.fix.edits), default=0), f.code))  # type: ignore[union-attr]
    accepted = _Accepted()
    applied: list[Finding] = []
    failures: list[RuleFailure] = []
    for finding in candidates:
        assert finding.fix is not None
        edits = finding.fix.edits
        if not _valid_edits(edits, len(source)):
            failures.append(
                RuleFailure(
                    finding.code, finding.name, path, finding.line, f"invalid fix edits {edits!r}"
                )
            )
            continue
        new = [e for e in dict.fromkeys(edits) if e not in accepted.members]
        if any(accepted.conflicts(e) for e in new):
            continue  # conflicts with an accepted fix: next round
        for edit in new:
            accepted.add(edit)
        applied.append(finding)
    fixed = _apply(source, accepted.edits)
    if fixed == source or _parses(fixed):
        return fixed, applied, failures
    # Some fix breaks the syntax (a rule bug): keep the fixes that keep the file parseable.
    kept: dict[Edit, None] = {}
    good: list[Finding] = []
    for finding in applied:
        assert finding.fix is not None
        trial = {**kept, **dict.fromkeys(finding.fix.edits)}
        if _parses(_apply(source, trial)):
            kept, good = trial, [*good, finding]
        else:
            failures.append(
                RuleFailure(
                    finding.code, finding.name, path, finding.line, "its fix does not parse"
                )
            )
    return _apply(source, kept), good, failures


def fix_text(
    source: str,
    path: str,
    ruleset: RuleSet,
    *,
    unsafe: bool = False,
    tree: ast.Module | None = None,
) -> FixOutcome:
    """Apply fixes to ``source`` until it stops changing (at most :data:`MAX_FIX_ROUNDS` rounds).

    ``tree`` is ``source`` already parsed, when the caller has it.

    Raises:
        SyntaxError: ``source`` does not parse.
    """
    allowed = frozenset({FixSafety.SAFE, FixSafety.UNSAFE} if unsafe else {FixSafety.SAFE})
    fixed: Counter[str] = Counter()
    failures: dict[RuleFailure, None] = {}
    current = source
    if tree is None:
        tree = ast.parse(source, filename=path)
    outcome = check_tree(current, path, tree, ruleset)
    for _ in range(MAX_FIX_ROUNDS):
        failures.update(dict.fromkeys(outcome.failures))
        new, applied, broken = _one_round(current, path, outcome.findings, allowed)
        failures.update(dict.fromkeys(broken))
        if new == current:
            break
        fixed.update(f.code for f in applied)
        current = new
        outcome = check_text(current, path, ruleset)
    failures.update(dict.fromkeys(outcome.failures))
    return FixOutcome(current, fixed, outcome.findings, list(failures))


# ---------------------------------------------------------------- public API


def check_source(
    source: str,
    path: str = "<string>",
    *,
    select: Collection[str] | None = None,
    ignore: Collection[str] | None = None,
) -> list[Finding]:
    """Check one source text with the selected rules (default: every default rule).

    Findings come sorted by (line, col, code); ``# noqa`` comments are honoured.

    Raises:
        SyntaxError: ``source`` does not parse.
        ConfigError: a selector matches no rule.
        RuntimeError: a rule raised (a torchport bug; the message names the rule).
    """
    return check_text(source, path, ruleset_for(select, ignore), strict=True).findings


def fix_source(
    source: str,
    *,
    unsafe: bool = False,
    select: Collection[str] | None = None,
    ignore: Collection[str] | None = None,
) -> str:
    """Return ``source`` with every allowed fix applied, repeated until nothing changes.

    Safe fixes always; unsafe ones only with ``unsafe=True``. Text outside the
    edits is kept byte for byte. The result is a fixed point: fixing it again
    returns it unchanged.

    Raises:
        SyntaxError: ``source`` does not parse.
        ConfigError: a selector matches no rule.
        RuntimeError: a rule raised or produced a fix that does not parse.
    """
    outcome = fix_text(source, "<string>", ruleset_for(select, ignore), unsafe=unsafe)
    if outcome.failures:
        raise RuntimeError("; ".join(str(f) for f in outcome.failures))
    return outcome.source

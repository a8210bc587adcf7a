"""Applying fixes: repeated rounds of text edits until the source stops changing.

Fixes follow Ruff's model: a fix is a set of text edits at character offsets
into the source. :func:`fix_text` repeats {check; accept fixes in source order;
apply; re-parse} until nothing changes. An edit identical to one already
accepted is shared rather than applied twice (several findings that all insert
the same ``device = ...`` line produce one line); a fix overlapping an accepted
edit waits for the next round. Text outside the edits is never touched. A fix
whose result does not parse is a rule bug: it is dropped and reported, and the
other fixes of the round still apply.
"""

from __future__ import annotations

import ast
import bisect
import os
from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from torchport.check._engine import RuleFailure, RuleSet, check_text, check_tree, ruleset_for
from torchport.check._file_settings import UNLIMITED, FileSettings
from torchport.check._printable import quoted
from torchport.check._records import field, record
from torchport.check._rule import NO_FIX, Edit, Finding, FixSafety
from torchport.check._syntax import parse_source
from torchport.check._torch_api import parse_version
from torchport.errors import ConfigError

__all__ = ["MAX_FIX_ROUNDS", "FixOutcome", "fix_source", "fix_text"]

MAX_FIX_ROUNDS = 10


@record()
class FixOutcome:
    """What fixing one source produced: the new text, the fixes applied by code, what is left."""

    source: str
    fixed: Counter[str]
    remaining: list[Finding]
    failures: list[RuleFailure] = field(default_factory=list)
    held: dict[str, int] = field(default_factory=dict)  # of the last check: CheckOutcome.held

    def diff(self, original: str, path: str) -> str:
        """A unified diff from ``original`` to the fixed source (empty when nothing changed).

        Relative paths get git's ``a/``/``b/`` prefixes (``git apply`` takes it);
        absolute ones are named as they are. A name with control characters is
        quoted as git quotes it (see :mod:`torchport.check._printable`).
        """
        if original == self.source:
            return ""
        import difflib  # here: a check with no diff to show never loads it (start-up)

        absolute = os.path.isabs(path)
        lines = difflib.unified_diff(
            original.splitlines(keepends=True),
            self.source.splitlines(keepends=True),
            fromfile=quoted(path if absolute else f"a/{path}"),
            tofile=quoted(path if absolute else f"b/{path}"),
        )
        return "".join(
            line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n"
            for line in lines
        )


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


def _parsed(source: str) -> ast.Module | None:
    """``ast.parse(source)``, or None when it does not parse (a broken fix)."""
    # Running out of memory is no broken fix: MemoryError goes up to the file's report.
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _parses(source: str) -> bool:
    return _parsed(source) is not None


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
    source: str,
    path: str,
    findings: Sequence[Finding],
    allowed: frozenset[FixSafety],
    fixable: Collection[str] | None = None,
) -> tuple[str, list[Finding], list[RuleFailure], ast.Module | None]:
    """Apply the non-conflicting fixes of one round.

    Returns (source, applied, failures, the new source's tree): the tree that showed
    the fixed text parses, for the next round's check (None when nothing changed).
    """
    candidates = [
        f
        for f in findings
        if f.fix is not None
        and f.fix.safety in allowed
        and NO_FIX not in f.fix.edits
        and (fixable is None or f.code in fixable)
    ]
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
    if fixed == source:
        return fixed, applied, failures, None
    tree = _parsed(fixed)
    if tree is not None:
        return fixed, applied, failures, tree
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
    fixed = _apply(source, kept)
    return fixed, good, failures, None if fixed == source else _parsed(fixed)


def fix_text(
    source: str,
    path: str,
    ruleset: RuleSet,
    *,
    unsafe: bool = False,
    tree: ast.Module | None = None,
    fixable: Collection[str] | None = None,
    settings: FileSettings = UNLIMITED,
) -> FixOutcome:
    """Apply fixes to ``source`` until it stops changing (at most :data:`MAX_FIX_ROUNDS` rounds).

    ``tree`` is ``source`` already parsed, when the caller has it. ``fixable``:
    the codes whose fixes may apply (None: all); the other rules still report.
    ``settings``: the file's target torch and noqa policy (see ``check_tree``).

    The findings returned are a check of the returned text, made after its last fix:
    no kind of fix is exempt, in-place ones neither (``device=x.device`` writes words
    that the port's analysis of the whole file reads; see
    ``tests/check/port/test_port_findings_left.py``).

    Raises:
        SyntaxError: ``source`` does not parse.
    """
    allowed = frozenset({FixSafety.SAFE, FixSafety.UNSAFE} if unsafe else {FixSafety.SAFE})
    fixed: Counter[str] = Counter()
    failures: dict[RuleFailure, None] = {}
    current = source
    if tree is None:
        tree = parse_source(source, path)
    outcome = check_tree(current, path, tree, ruleset, settings=settings)
    for _ in range(MAX_FIX_ROUNDS):
        failures.update(dict.fromkeys(outcome.failures))
        new, applied, broken, new_tree = _one_round(
            current, path, outcome.findings, allowed, fixable
        )
        failures.update(dict.fromkeys(broken))
        if new == current:
            break
        fixed.update(f.code for f in applied)
        current = new
        # The tree that showed the fixed text parses is the one to check (no second parse).
        outcome = (
            check_text(current, path, ruleset, settings=settings)
            if new_tree is None
            else check_tree(current, path, new_tree, ruleset, settings=settings)
        )
    failures.update(dict.fromkeys(outcome.failures))
    return FixOutcome(current, fixed, outcome.findings, list(failures), dict(outcome.held))


def fix_source(
    source: str,
    *,
    unsafe: bool = False,
    select: Collection[str] | None = None,
    ignore: Collection[str] | None = None,
    target_torch: str | None = None,
    extend_select: Collection[str] = (),
) -> str:
    """Return ``source`` with every allowed fix applied, repeated until nothing changes.

    Safe fixes always; unsafe ones only with ``unsafe=True``. Text outside the
    edits is kept byte for byte. The result is a fixed point: fixing it again
    returns it unchanged. ``target_torch`` (``"2.7"``): write no API that torch
    lacks (None: any torch; see :mod:`torchport.check._torch_api`).

    Raises:
        SyntaxError: ``source`` does not parse.
        ConfigError: a selector matches no rule, or ``target_torch`` is no version.
        RuntimeError: a rule raised or produced a fix that does not parse.
    """
    settings = UNLIMITED
    if target_torch is not None:
        version = parse_version(target_torch)
        if version is None:
            raise ConfigError(
                f"target_torch={target_torch!r} is no torch version; expected MAJOR.MINOR "
                f"such as '2.7'"
            )
        settings = FileSettings(target_torch=version)
    rules = ruleset_for(select, ignore, extend_select)  # extend_select: --extend-select's
    outcome = fix_text(source, "<string>", rules, unsafe=unsafe, settings=settings)
    if outcome.failures:
        raise RuntimeError("; ".join(str(f) for f in outcome.failures))
    return outcome.source

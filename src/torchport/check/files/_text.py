"""The text report: one ``path:line:col: CODE message`` line per finding, then a summary.

Below each line, when the source is at hand, a short excerpt: the line with
the finding's columns marked (``^``), and with ``show_fixes`` the lines its fix
would write. Colour (ANSI) only when asked, which the CLI does on a terminal.
The first line of each finding stays greppable and is never cut (editors and CI
parse it); everything below it may be.

"What the fix changes" (``Fix.changes``) is said where a fix is shown, not on
every finding line: a check lists problems, and the tail made its lines hundreds
of characters long.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from torchport.check._catalog import shipped_rule
from torchport.check._patterns import lazy_pattern
from torchport.check._printable import quoted
from torchport.check._rule import Finding, FixSafety, Intent, Rule

__all__ = ["file_of", "fix_flags", "render_grouped", "render_text"]

_CELL = lazy_pattern(r":cell \d+$")
_LINE_END = lazy_pattern(r"\r\n|\r|\n")


def _lines(text: str) -> list[str]:
    r"""``text``'s lines as Python counts them (``\r\n``, ``\r``, ``\n`` each end one): the
    pattern compiled only for a text with a ``\r`` (start-up), the same list without it."""
    return _LINE_END.split(text) if "\r" in text else text.split("\n")


_WIDTH = 160  # longest excerpt line shown; longer ones are windowed around the column

_BOLD, _RED, _CYAN, _GREEN, _DIM, _RESET = (
    "\x1b[1m", "\x1b[1;31m", "\x1b[36m", "\x1b[32m", "\x1b[2m", "\x1b[0m",
)  # fmt: skip


def file_of(path: str) -> str:
    """The file a finding's path names (``nb.ipynb:cell 3`` is in ``nb.ipynb``)."""
    return _CELL.sub("", path) if ":cell " in path else path  # (compiled only then)


def _safety(finding: Finding) -> FixSafety | None:
    return finding.fix.safety if finding.fix is not None and finding.fix.edits else None


def fix_flags(
    finding: Finding,
    rules: Mapping[str, type[Rule]] | None = None,
    plain: Collection[str] | None = None,
) -> tuple[str, ...] | None:
    """The `fix` flags that apply ``finding``'s fix: ``()`` a plain `fix`; None: it has none.

    An unsafe fix needs ``--unsafe``; a SPEED rule's (see Intent) needs ``--speed``
    unless the run's selection named the rule, which ``plain`` says when given: the
    codes whose fixes a plain `fix` with the same settings applies. ``rules``: the
    rules that ran, by code (a shipped rule is also known without).
    """
    safety = _safety(finding)
    if safety is None:
        return None
    rule = (rules or {}).get(finding.code) or shipped_rule(finding.code)
    speed = rule is not None and rule.intent is Intent.SPEED
    if plain is not None:
        speed = finding.code not in plain
    return (*(("speed",) if speed else ()), *(("unsafe",) if safety is FixSafety.UNSAFE else ()))


class _Paint:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, style: str, text: str) -> str:
        return f"{style}{text}{_RESET}" if self.on and text else text


def _width(char: str) -> int:
    """Terminal columns of ``char``: 0 for a combining mark or a format character (joiners)."""
    if char.isascii():  # never a mark, a format character or wide: unicodedata not loaded
        return 1
    import unicodedata

    if unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def _printable(line: str) -> str:
    """``line`` with control characters shown as U+FFFD: never sent raw to a terminal."""
    if line.isprintable():
        return line
    import unicodedata

    return "".join("\ufffd" if c != "\t" and unicodedata.category(c) == "Cc" else c for c in line)


def _window(line: str, start: int, end: int) -> tuple[str, int, int]:
    """``line`` cut to about :data:`_WIDTH` characters around ``start``; the span moved along."""
    if len(line) <= _WIDTH:
        return line, start, end
    left = max(0, min(start - _WIDTH // 3, len(line) - _WIDTH))
    right = left + _WIDTH
    cut = ("…" if left else "") + line[left:right] + ("…" if right < len(line) else "")
    shift = left - (1 if left else 0)
    return cut, start - shift, min(end - shift, len(cut))


def _excerpt(f: Finding, lines: Sequence[str], paint: _Paint) -> list[str]:
    if not 0 < f.line <= len(lines):
        return []
    line = _printable(lines[f.line - 1].rstrip())
    start = min(f.col - 1, len(line))
    end = f.end_col - 1 if f.end_line == f.line else len(line)
    end = max(start + 1, min(end, len(line)))
    shown, start, end = _window(line, start, end)
    pad = "".join("\t" if c == "\t" else " " * _width(c) for c in shown[:start])
    marks = "^" * max(1, sum(_width(c) for c in shown[start:end]))
    number = str(f.line)
    gutter = " " * len(number)
    return [
        f"  {paint(_DIM, number + ' |')} {shown}",
        f"  {paint(_DIM, gutter + ' |')} {pad}{paint(_RED, marks)}",
    ]


def _fix_lines(f: Finding, source: str, paint: _Paint) -> list[str]:
    """The lines ``f``'s fix writes, as a small diff, and what it changes in results."""
    if f.fix is None or not f.fix.edits:
        return []
    fixed = source
    for edit in sorted(f.fix.edits, key=lambda e: (e.start, e.end), reverse=True):
        fixed = fixed[: edit.start] + edit.text + fixed[edit.end :]
    old, new = _lines(source), _lines(fixed)
    out = [f"  = fix ({f.fix.safety.value}):"]
    import difflib  # here: only --show-fixes needs it (start-up)

    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        out += [f"  {paint(_RED, f'- {old[i].rstrip()}')}" for i in range(i1, i2)]
        out += [f"  {paint(_GREEN, f'+ {new[j].rstrip()}')}" for j in range(j1, j2)]
    if f.fix.changes:
        out.append(f"  = the fix changes results: {f.fix.changes}")
    return out


def _summary(
    findings: Sequence[Finding],
    errors: int,
    applied: Collection[str],
    unplaced: int,
    flags: Sequence[tuple[str, ...] | None],
    unplaced_in: Collection[str] = (),
    held: Mapping[str, Mapping[str, int]] | None = None,
) -> list[str]:
    unchecked = ""
    if errors:
        unchecked = f"{errors} error{'s' if errors != 1 else ''} (named above) to fix first"
    if not findings and not unplaced:
        if held:  # never "All checks passed." over findings only left out of the listing
            # under a fix's list of what it changed, "No findings shown" would read as if
            # nothing had been fixed
            shown = [f"{'Not shown' if applied else 'No findings shown'}: {held_note(held)}."]
            return [*shown, f"And {unchecked}."] if errors else shown
        return [f"No findings, but {unchecked}." if errors else "All checks passed."]
    # Every file holding a counted finding: placed ones, and unplaced ones (a dry-run
    # fix's, on lines it would write), which name no line but do lie in a file.
    files = len({file_of(f.path) for f in findings} | {file_of(p) for p in unplaced_in})
    total = len(findings) + unplaced
    noun = "finding" if total == 1 else "findings"
    summary = f"Found {total} {noun} in {files} file{'s' if files != 1 else ''}"
    notes = []
    if unplaced:
        notes.append(f"{unplaced} on lines the fixes would write, shown in the diff")
    # Each count names the one command that applies those fixes (a SPEED rule's unsafe
    # fix needs both flags), and never the command that just ran: after `fix --unsafe`,
    # no "--unsafe" hint.
    needs = Counter(flags)
    for wanted in ((), ("speed",), ("unsafe",), ("speed", "unsafe")):
        if not needs[wanted] or (set(wanted) | {"safe"}) <= set(applied):
            continue
        command = " ".join(["`torchport fix", *(f"--{flag}" for flag in wanted)]) + "`"
        notes.append(f"{needs[wanted]} {'more with' if wanted else 'fixable with'} {command}")
    lines = [summary + (f" ({', '.join(notes)})" if notes else "") + "."]
    if held:
        lines.append(f"Not shown: {held_note(held)}.")
    if errors:
        lines.append(f"And {unchecked}.")
    return lines


def held_note(held: Mapping[str, Mapping[str, int]]) -> str:
    """What a default run left out as of low value where it stands (``CheckResult.held``: code
    that needs CUDA anyway, a form of a rule left out; vendored code nothing in the project
    imports, counted under ``"vendored " + code``), and the option that lists it."""
    counts: Counter[str] = Counter()
    vendored: Counter[str] = Counter()
    files, vendored_files = set(), set()
    for path, per_code in held.items():
        for code, n in per_code.items():
            if code.startswith(_VENDORED):
                vendored[code[len(_VENDORED) :]] += n
                vendored_files.add(path)
            else:
                counts[code] += n
                files.add(path)
    notes = []
    if counts:
        total, codes = sum(counts.values()), ",".join(sorted(counts))
        notes.append(
            f"a default run leaves out {total} finding{'s' if total != 1 else ''} of rules "
            f"naming CUDA ({codes}) in {len(files)} file{'s' if len(files) != 1 else ''}, of "
            f"low value there (`--explain CODE` says where); `--extend-select {codes}` lists "
            f"{'it' if total == 1 else 'them'}"
        )
    if vendored:
        total, codes = sum(vendored.values()), ",".join(sorted(vendored))
        n = len(vendored_files)
        notes.append(
            f"a default run leaves out {total} finding{'s' if total != 1 else ''} in vendored "
            f"code nothing in the project imports ({codes}) in {n} file{'s' if n != 1 else ''}; "
            f"`--extend-select {codes}` lists {'it' if total == 1 else 'them'}"
        )
    return "; ".join(notes)


_VENDORED = "vendored "  # files/_vendored.HELD_MARK (that module is not loaded to print this)


def render_text(
    findings: Sequence[Finding],
    errors: int = 0,
    *,
    sources: Mapping[str, str] | None = None,
    color: bool = False,
    show_fixes: bool = False,
    applied: Collection[str] = (),
    unplaced: int = 0,
    unplaced_in: Collection[str] = (),
    summary: bool = True,
    rules: Sequence[type[Rule]] = (),
    plain: Collection[str] | None = None,
    held: Mapping[str, Mapping[str, int]] | None = None,
) -> str:
    """``path:line:col: CODE message`` per finding (``[*]``: a plain `fix` applies it), then a
    summary.

    Args:
        findings: What to list, in order.
        errors: How many file errors there were (named on stderr: a file that could
            not be read or parsed ...), so the summary never calls such a run clean.
        sources: The text each finding's path refers to (``CheckResult.sources``);
            where given, an excerpt with the columns marked follows each line.
        color: ANSI colours, for a terminal.
        show_fixes: Also show the lines each fix would write, and what it changes.
        applied: The fixes the run applied already (``"safe"``, ``"speed"``,
            ``"unsafe"``), whose commands the summary then does not suggest.
        unplaced: Findings not listed because they have no position on disk (a
            dry-run fix's, on lines it would write); the summary counts them.
        unplaced_in: The files those unplaced findings are in, which the summary's
            file count includes.
        summary: End with the summary line (``--quiet`` leaves it out).
        rules: The rules that ran, whose intent says which command applies their fixes
            (shipped rules are known without).
        plain: The codes whose fixes a plain `fix` with the run's settings applies
            (:attr:`CheckResult.plain_fix`; None: judged by each rule's intent).
        held: Per file, the findings a default run left out as of low value there
            (:attr:`CheckResult.held`), which the summary counts.
    """
    by_code = {r.code: r for r in rules}
    flags = [fix_flags(f, by_code, plain) for f in findings]
    paint = _Paint(color)
    lines: list[str] = []
    split: dict[str, list[str]] = {}
    for f, needs in zip(findings, flags, strict=True):
        marker = f" {paint(_CYAN, '[*]')}" if needs == () else ""
        head = f"{paint(_BOLD, f'{quoted(f.path)}:{f.line}:{f.col}:')} {paint(_RED, f.code)}"
        lines.append(f"{head}{marker} {f.message}")
        source = None if sources is None else sources.get(f.path)
        if sources is None or source is None:
            continue
        if f.path not in split:
            split[f.path] = _lines(source)
        lines += _excerpt(f, split[f.path], paint)
        if show_fixes:  # a notebook's fix counts in its cells joined, not in one cell
            joined = sources.get(file_of(f.path)) if file_of(f.path) != f.path else source
            lines += _fix_lines(f, joined, paint) if joined is not None else []
        lines.append("")
    if summary:
        lines += _summary(findings, errors, applied, unplaced, flags, unplaced_in, held)
    return "".join(line + "\n" for line in lines)


def render_grouped(
    findings: Sequence[Finding],
    errors: int = 0,
    *,
    color: bool = False,
    summary: bool = True,
    rules: Sequence[type[Rule]] = (),
    plain: Collection[str] | None = None,
    held: Mapping[str, Mapping[str, int]] | None = None,
) -> str:
    """Findings grouped by file, as Ruff's ``grouped`` format: the path on a line of its
    own, then ``  line:col CODE [*] message`` per finding, a blank line after each file;
    then the summary (arguments as for :func:`render_text`)."""
    by_code = {r.code: r for r in rules}
    flags = [fix_flags(f, by_code, plain) for f in findings]
    paint = _Paint(color)
    groups: dict[str, list[tuple[Finding, tuple[str, ...] | None]]] = {}
    for f, needs in zip(findings, flags, strict=True):
        groups.setdefault(f.path, []).append((f, needs))
    lines: list[str] = []
    for path, rows in groups.items():
        lines.append(paint(_BOLD, f"{quoted(path)}:"))
        width = max(len(f"{f.line}:{f.col}") for f, _ in rows)
        for f, needs in rows:
            marker = f" {paint(_CYAN, '[*]')}" if needs == () else ""
            where = f"{f.line}:{f.col}".ljust(width)
            lines.append(f"  {where} {paint(_RED, f.code)}{marker} {f.message}")
        lines.append("")
    if summary:
        lines += _summary(findings, errors, (), 0, flags, (), held)
    return "".join(line + "\n" for line in lines)

"""The README's checker figures, computed from the rule registry (never typed by hand).

The README holds two generated blocks, each between the markers
``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``:

- ``rule-counts``: how many rules there are, how many are on by default, and how
  many of each code range;
- ``fix-safeties``: which rules a plain ``torchport fix`` fixes, which need
  ``--speed`` or ``--unsafe``, and which report without a fix.

``python docs/_gen readme`` rewrites them in place; ``tests/docs/test_readme_numbers.py``
fails when the README's blocks differ from what this module writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from torchport.check import RULES, FixSafety, Intent, Rule
from torchport.check._select import CONTEXTS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

# What each range holds, in words; the counts next to them come from RULES.
RANGES = (
    ("TP1", "placement (hard-coded devices, discarded and late moves)"),
    ("TP2", "transfers and host syncs"),
    ("TP3", "loading, checkpoints and loading security"),
    ("TP4", "CUDA-only APIs and their device-generic twins"),
    ("TP5", "port rules, run by `torchport port`"),
    ("TP9", "noisy, off by default"),
)


def codes(rules: Sequence[type[Rule]]) -> str:
    """``TP101, TP104-TP106`` : runs of three or more neighbours in the registry joined."""
    numbers = sorted(int(rule.code[2:]) for rule in rules)
    parts: list[str] = []
    start = 0
    while start < len(numbers):
        end = start
        while end + 1 < len(numbers) and numbers[end + 1] == numbers[end] + 1:
            end += 1
        if end - start >= 2:
            parts.append(f"TP{numbers[start]}-TP{numbers[end]}")
        else:
            parts.extend(f"TP{n}" for n in numbers[start : end + 1])
        start = end + 1
    return ", ".join(parts)


def _where(predicate: Callable[[type[Rule]], bool]) -> list[type[Rule]]:
    return [rule for rule in RULES if predicate(rule)]


def rule_counts() -> str:
    """The ``rule-counts`` block: totals, then one table row per code range."""
    on = _where(lambda r: r.default)
    scoped = [r for r in on if r.default_contexts != CONTEXTS]
    outside: dict[str, list[type[Rule]]] = {}
    for rule in scoped:  # where it is off, in words: "test and benchmark"
        left = sorted(CONTEXTS - rule.default_contexts, reverse=True)
        words = " and ".join("benchmark" if c == "bench" else c for c in left)
        outside.setdefault(words, []).append(rule)
    where = "; ".join(
        f"outside {words} code only: {codes(group)}" for words, group in sorted(outside.items())
    )
    lines = [
        f"The checker has {len(RULES)} rules, {len(on)} on by default "
        f"({len(scoped)} of them not everywhere, {where}; "
        "`torchport rule --all` lists them):",
        "",
        "| codes | what | rules | on by default |",
        "| --- | --- | --- | --- |",
    ]
    for prefix, what in RANGES:
        group = _where(lambda r, p=prefix: r.code.startswith(p))
        lines.append(
            f"| {prefix}xx | {what} | {len(group)} | {sum(1 for r in group if r.default)} |"
        )
    counted = sum(1 for r in RULES if r.code[:3] in {p for p, _ in RANGES})
    if counted != len(RULES):
        raise ValueError(f"{len(RULES) - counted} rules fall outside {[p for p, _ in RANGES]}")
    return "\n".join(lines)


def fix_safeties() -> str:
    """The ``fix-safeties`` block: which command fixes which default rule."""
    on = [r for r in RULES if r.default]
    plain = [r for r in on if r.intent in (Intent.DEVICE, Intent.SAFETY)]
    speed = [r for r in on if r.intent is Intent.SPEED]

    def safety(group: list[type[Rule]], value: FixSafety) -> str:
        return codes([r for r in group if r.fix_safety is value]) or "none"

    return "\n".join(
        [
            "What each rule on by default can fix. A rule's fix safety is the least safe fix it",
            "writes: a finding of an unsafe rule whose own fix is safe needs no `--unsafe`.",
            "",
            "| rules | safe: `torchport fix` | unsafe: `fix --unsafe` | reported, no fix |",
            "| --- | --- | --- | --- |",
            f"| device and loading security | {safety(plain, FixSafety.SAFE)} "
            f"| {safety(plain, FixSafety.UNSAFE)} | {safety(plain, FixSafety.NONE)} |",
            "| speed (`fix --speed`, or name them in `--select`) "
            f"| {safety(speed, FixSafety.SAFE)} "
            f"| {safety(speed, FixSafety.UNSAFE)} | {safety(speed, FixSafety.NONE)} |",
        ]
    )


BLOCKS: dict[str, Callable[[], str]] = {"rule-counts": rule_counts, "fix-safeties": fix_safeties}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {name} -->)\n?(.*?)\n?(<!-- end: {name} -->)", re.S)


def blocks_in(text: str) -> dict[str, str]:
    """The generated blocks as the README holds them (a missing one raises ``ValueError``)."""
    found = {}
    for name in BLOCKS:
        match = _pattern(name).search(text)
        if match is None:
            raise ValueError(f"README.md has no <!-- generated: {name} --> block")
        found[name] = match.group(2)
    return found


def render(text: str) -> str:
    """``text`` (the README) with every generated block written afresh."""
    blocks_in(text)  # raises when a marker is gone
    for name, make in BLOCKS.items():
        made = make()
        text = _pattern(name).sub(lambda m, made=made: f"{m.group(1)}\n{made}\n{m.group(3)}", text)
    return text


def main() -> None:
    README.write_text(render(README.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote the generated blocks of {README}")


if __name__ == "__main__":
    main()

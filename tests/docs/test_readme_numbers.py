"""Every rule figure in the README is what the rule registry says.

Two checks, apart: the README's generated blocks equal what ``docs/_gen/readme_numbers.py``
writes now (so a new rule fails this test until the generator is run), and the
numbers in the README's table equal counts this test takes from ``RULES`` itself
(so a generator that counted wrong fails too). Any "N rules" elsewhere in the README
or docs/ must match as well.
"""

from __future__ import annotations

import re
from pathlib import Path

import readme_numbers

from torchport.check import RULES, FixSafety

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_generated_blocks_are_fresh() -> None:
    assert readme_numbers.render(README) == README, "run: python docs/_gen readme"


def test_the_table_holds_the_registry_counts() -> None:
    block = readme_numbers.blocks_in(README)["rule-counts"]
    counts = re.search(r"has (\d+) rules, (\d+) on by default", block)
    assert counts is not None, block
    total, on = map(int, counts.groups())
    assert (total, on) == (len(RULES), sum(1 for rule in RULES if rule.default))
    rows = re.findall(r"^\| TP(\d)xx \| [^|]+ \| (\d+) \| (\d+) \|$", block, re.M)
    assert rows, block
    for digit, rules, default in rows:
        group = [rule for rule in RULES if rule.code.startswith(f"TP{digit}")]
        assert (int(rules), int(default)) == (len(group), sum(r.default for r in group)), digit
    assert sum(int(rules) for _, rules, _ in rows) == len(RULES)


def _expand(cell: str) -> set[str]:
    out: set[str] = set()
    for part in re.findall(r"TP\d+(?:-TP\d+)?", cell):
        first, _, last = part.partition("-")
        for number in range(int(first[2:]), int((last or first)[2:]) + 1):
            out.add(f"TP{number}")
    return out


def test_the_fix_table_names_each_default_rule_once_under_its_safety() -> None:
    block = readme_numbers.blocks_in(README)["fix-safeties"]
    rows = re.findall(r"^\| (?!rules|---)[^|]+\|([^|]*)\|([^|]*)\|([^|]*)\|$", block, re.M)
    assert len(rows) == 2, block
    columns = (FixSafety.SAFE, FixSafety.UNSAFE, FixSafety.NONE)
    seen: list[str] = []
    for row in rows:
        for safety, cell in zip(columns, row, strict=True):
            named = _expand(cell)
            known = {rule.code: rule for rule in RULES}
            for code in named:
                assert code in known, f"{code} in the README names no rule"  # a range over a gap
                assert known[code].fix_safety is safety, code
            seen.extend(named)
    assert sorted(seen) == sorted(rule.code for rule in RULES if rule.default)


def test_no_other_rule_count_in_the_prose() -> None:
    generated = {"_build", "reference"}  # Sphinx output, not committed
    pages = [ROOT / "README.md"] + [
        page for page in sorted((ROOT / "docs").rglob("*.md")) if not generated & set(page.parts)
    ]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"\b(\d+) rules\b(?! on by default)", text):
            assert int(match.group(1)) == len(RULES), f"{page.name}: {match.group(0)!r}"
        for match in re.finditer(r"\b(\d+) (?:rules )?(?:are )?on by default\b", text):
            assert int(match.group(1)) == sum(rule.default for rule in RULES), page.name

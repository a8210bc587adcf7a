"""Every example of every rule, run through the real engine (one test per example).

Valid examples must not be reported; invalid ones must be reported exactly
``count`` times, and, when they carry a ``fixed`` source, ``fix_source`` must
produce exactly that text, which parses, re-checks clean for the rule and is a
fixed point of fix.
"""

from __future__ import annotations

import ast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source, fix_source
from torchport.check._rule import Example, Rule
from torchport.check.rules import RULES

VALID = [
    pytest.param(rule, source, id=f"{rule.code}-valid-{i}")
    for rule in RULES
    for i, source in enumerate(rule.valid)
]
INVALID = [
    pytest.param(rule, example, id=f"{rule.code}-invalid-{i}")
    for rule in RULES
    for i, example in enumerate(rule.invalid)
]
FIXED = [p for p in INVALID if p.values[1].fixed is not None]  # type: ignore[union-attr]


@pytest.mark.parametrize(("rule", "source"), VALID)
def test_valid_example_is_not_reported(rule: type[Rule], source: str) -> None:
    assert [str(f) for f in check_source(source, select=[rule.code])] == []


@pytest.mark.parametrize(("rule", "example"), INVALID)
def test_invalid_example_is_reported(rule: type[Rule], example: Example) -> None:
    findings = check_source(example.source, select=[rule.code])
    assert len(findings) == example.count, [str(f) for f in findings]
    assert {f.code for f in findings} == {rule.code}
    for finding in findings:
        assert finding.name == rule.name and finding.message
        if finding.fix is not None:
            # a fix may be safer than the rule's worst case, never less safe
            order = ["none", "safe", "unsafe"]
            assert order.index(finding.fix.safety.value) <= order.index(rule.fix_safety.value)
    if example.fixed is None:
        assert fix_source(example.source, select=[rule.code], unsafe=True) == example.source


@pytest.mark.parametrize(("rule", "example"), FIXED)
def test_fix_gives_expected_source(rule: type[Rule], example: Example) -> None:
    fixed = fix_source(example.source, select=[rule.code], unsafe=True)
    assert fixed == example.fixed
    ast.parse(fixed)
    assert check_source(fixed, select=[rule.code]) == []
    assert fix_source(fixed, select=[rule.code], unsafe=True) == fixed
    assert "torchport" not in fixed


@pytest.mark.parametrize(("rule", "example"), INVALID)
def test_all_rules_together_converge(rule: type[Rule], example: Example) -> None:
    """Every rule's fix at once, on each example: parses, idempotent, no fixable finding left."""
    fixed = fix_source(example.source, select=["ALL"], unsafe=True)
    ast.parse(fixed)
    assert fix_source(fixed, select=["ALL"], unsafe=True) == fixed
    assert [str(f) for f in check_source(fixed, select=["ALL"]) if f.fix is not None] == []


@pytest.mark.parametrize(("rule", "example"), FIXED)
def test_safe_only_fix_applies_only_safe_fixes(rule: type[Rule], example: Example) -> None:
    safe = fix_source(example.source, select=[rule.code])
    ast.parse(safe)
    findings = check_source(example.source, select=[rule.code])
    if all(f.fix is not None and f.fix.safety.value == "safe" for f in findings):
        assert safe == example.fixed
    elif all(f.fix is None or f.fix.safety.value == "unsafe" for f in findings):
        assert safe == example.source


SNIPPETS = sorted({s for rule in RULES for s in (*rule.valid, *(e.source for e in rule.invalid))})
WRAPPERS = ("", "def f(x, y):\n", "for batch in loader:\n", "with torch.no_grad():\n", "if x:\n")


@st.composite
def programs(draw: st.DrawFn) -> str:
    """Rule examples stitched together at random depths, with odd bytes around them."""
    parts = [draw(st.sampled_from(["", "import torch\n", '"""Doc."""\nimport os\n']))]
    for snippet in draw(st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=5)):
        header = draw(st.sampled_from(WRAPPERS))
        if header:
            body = "".join(
                f"    {line}" if line.strip() else line for line in snippet.splitlines(True)
            )
            snippet = header + body
        parts.append(snippet)
        if draw(st.booleans()):
            parts.append("s = 'é€😀'  # non-ASCII before the next line\n")
    source = "\n".join(parts)
    if draw(st.booleans()):
        source = source.replace("\n", "\r\n")
    return source


@given(programs())
def test_fix_of_any_mix_parses_converges_and_stays_plain_pytorch(source: str) -> None:
    ast.parse(source)
    fixed = fix_source(source, select=["ALL"], unsafe=True)
    ast.parse(fixed)
    assert "torchport" not in fixed
    assert fix_source(fixed, select=["ALL"], unsafe=True) == fixed
    assert [str(f) for f in check_source(fixed, select=["ALL"]) if f.fix is not None] == []
    definitions = [ln for ln in fixed.splitlines() if ln.startswith("device = torch.accelerator")]
    own = [ln for ln in source.splitlines() if ln.startswith("device = ")]
    assert len(definitions) <= max(1, len(own))  # fixes add one device, shared by all
    if "\r\n" in source:
        assert "\n" not in fixed.replace("\r\n", "")

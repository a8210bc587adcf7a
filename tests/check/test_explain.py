"""explain(): a rule's docs rendered from its docstring and its own examples."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from torchport.check import check_source, fix_paths
from torchport.check._explain import explain
from torchport.check._rule import FixSafety, Intent, Rule
from torchport.check._torch_api import SINCE, format_version
from torchport.check.rules import RULES
from torchport.errors import ConfigError


@pytest.mark.parametrize("rule", [pytest.param(r, id=r.code) for r in RULES])
def test_explain_renders_docstring_and_every_example(rule: type[Rule]) -> None:
    text = explain(rule.code)
    assert text.startswith(f"# {rule.code} {rule.name}\n")
    assert inspect.cleandoc(rule.__doc__ or "") in text
    for example in rule.invalid:
        assert example.source.rstrip("\n") in text
        if example.fixed is not None:
            assert example.fixed.rstrip("\n") in text
    for source in rule.valid:
        assert source.rstrip("\n") in text
    assert ("--unsafe" in text) is (rule.fix_safety is FixSafety.UNSAFE)
    assert ("off by default" in text) is (not rule.default)
    assert text.count("```python") == len(rule.valid) + sum(
        1 + (e.fixed is not None) for e in rule.invalid
    )


def test_explain_accepts_lowercase_code_and_rule_name() -> None:
    assert explain("tp101") == explain("TP101") == explain("hard-coded-cuda")


@pytest.mark.parametrize(
    ("wrong", "suggested"),
    [("TP1O1", "TP101"), ("sync-in-loops", "sync-in-loop"), ("TP41", "TP401")],
)
def test_unknown_code_lists_close_matches(wrong: str, suggested: str) -> None:
    with pytest.raises(ConfigError, match=suggested) as info:
        explain(wrong)
    assert repr(wrong) in str(info.value)


def test_unknown_code_without_close_match_still_says_what_to_do() -> None:
    with pytest.raises(ConfigError, match="--explain TP101"):
        explain("zzz")


def _shown_messages(text: str) -> list[str]:
    head = text.split("\nFix: ", 1)[0]
    if "\nMessage: " in head:
        return [head.split("\nMessage: ", 1)[1]]
    return [line[2:] for line in head.splitlines() if line.startswith("- ")]


@pytest.mark.parametrize("rule", [pytest.param(r, id=r.code) for r in RULES])
def test_message_is_what_check_prints(rule: type[Rule]) -> None:
    """Every message explain shows is one `check` prints on the examples, and every one is shown."""
    printed = {
        str(f).split(f": {rule.code} ", 1)[1]
        for example in rule.invalid
        for f in check_source(example.source, select=[rule.code])
        if f.code == rule.code
    }
    assert set(_shown_messages(explain(rule.code))) == printed


_COMMANDS = re.compile(r"`torchport fix([^`]*)`")


@pytest.mark.parametrize(
    "rule",
    [pytest.param(r, id=r.code) for r in RULES if any(e.fixed for e in r.invalid)],
)
def test_the_commands_explain_names_apply_the_fix(rule: type[Rule], tmp_path: Path) -> None:
    """Run each command the Fix line names (through the API the CLI calls) on each example.

    A command with `--unsafe` applies every fix of the examples; one without
    applies exactly the safe ones. Other rules' fixes apply too (as they would),
    so "applied" means: fewer of this rule's findings are left.
    """
    fix_line = next(line for line in explain(rule.code).splitlines() if line.startswith("Fix: "))
    if rule.intent is Intent.PORT:
        assert "`torchport port` applies it" in fix_line
        return
    commands = [c.split() for c in _COMMANDS.findall(fix_line)]
    assert commands, fix_line
    if [] not in commands:
        commands.append(["(plain)"])  # a plain `torchport fix` must then apply nothing
    path = tmp_path / "example.py"
    # The examples' fixes may write APIs of the newest torch (TP102: set_device_index, 2.7);
    # which target gates which fix is tests/check/test_torch_api.py's question, not this one.
    newest = format_version(max(SINCE.values()))
    (tmp_path / "pyproject.toml").write_text(f'[tool.torchport]\ntarget-torch = "{newest}"\n')
    for example in (e for e in rule.invalid if e.fixed):
        fixes = [f.fix for f in check_source(example.source, select=[rule.code]) if f.fix]
        for words in commands:
            select = [words[words.index("--select") + 1]] if "--select" in words else None
            unsafe, speed = "--unsafe" in words, "--speed" in words
            path.write_text(example.source)
            fix_paths([path], select=select, unsafe=unsafe, speed=speed)
            left = check_source(path.read_text(), select=[rule.code])
            applied = len(left) < len(check_source(example.source, select=[rule.code]))
            expected = words != ["(plain)"] and any(
                unsafe or fix.safety is FixSafety.SAFE for fix in fixes
            )
            assert applied is expected, (words, example.source, path.read_text())


@pytest.mark.parametrize("code", ["TP202", "TP302", "TP109", "TP901"])
def test_explain_never_says_both_no_fix_and_a_command(code: str) -> None:
    text = explain(code)
    fix_line = next(line for line in text.splitlines() if line.startswith("Fix: "))
    intent_line = next(line for line in text.splitlines() if line.startswith("Intent: "))
    assert "torchport fix" not in intent_line
    if "no automatic fix" in fix_line:
        assert "applies" not in fix_line

"""explain(): a rule's docs rendered from its docstring and its own examples."""

from __future__ import annotations

import inspect

import pytest

from torchport.check._explain import explain
from torchport.check._rule import FixSafety, Rule
from torchport.check.rules import RULES
from torchport.errors import ConfigError


@pytest.mark.parametrize("rule", [pytest.param(r, id=r.code) for r in RULES])
def test_explain_renders_docstring_and_every_example(rule: type[Rule]) -> None:
    text = explain(rule.code)
    assert text.startswith(f"# {rule.code} {rule.name}\n")
    assert rule.message in text
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


def test_explain_says_which_fix_applies_a_speed_rule() -> None:
    from torchport.check import Intent

    speed = next(rule for rule in RULES if rule.intent is Intent.SPEED)
    assert "`torchport fix --speed`" in explain(speed.code)
    assert "plain `torchport fix` applies" in explain("TP302")

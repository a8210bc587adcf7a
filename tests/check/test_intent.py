"""Every shipped rule states its Intent, which decides what a plain `fix` applies."""

from __future__ import annotations

from torchport.check import RULES, Intent


def test_every_shipped_rule_sets_its_intent_in_its_own_class() -> None:
    missing = [rule.code for rule in RULES if "intent" not in vars(rule)]
    assert missing == [], f"rules without an explicit `intent = Intent.X`: {missing}"


def test_intent_follows_the_code_range() -> None:
    for rule in RULES:
        if rule.code.startswith("TP5"):
            assert rule.intent is Intent.PORT, rule.code
            assert rule.default is False, rule.code
        else:
            assert rule.intent is not Intent.PORT, rule.code


def test_load_security_rules_are_safety() -> None:
    codes = {"TP302", "TP304", "TP305", "TP306", "TP307", "TP308", "TP309"}
    found = {rule.code: rule.intent for rule in RULES if rule.code in codes}
    assert found == dict.fromkeys(codes, Intent.SAFETY)

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
    load_rules = [rule for rule in RULES if rule.name.startswith(("load-", "unsafe-"))]
    assert load_rules
    for rule in load_rules:
        if rule.code != "TP301":  # map_location is about devices, not security
            assert rule.intent is Intent.SAFETY, rule.code

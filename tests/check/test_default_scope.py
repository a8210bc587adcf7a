"""The default set is a policy: every rule's default contexts hold the judged 90% bar.

The oracle is apart from the checker: it recomputes, from the committed judgments
(``benchmarks/data/precision_sample*.csv``: one verdict per sampled finding, judged
one by one under benchmarks/precision_standard.md) and the rows' contexts
(``benchmarks/data/precision_scope.csv``, written by
``benchmarks/bench_precision_sample.py --scope``: test code, benchmark code or the rest,
whether the rule, selected by code, still reports the row, and whether its code needs CUDA
anyway), each rule's real / judged per context over samples A-Y, and holds every rule's
metadata to it: a rule is on by default in a context only where at least 90% of its judged
findings still reported there are real; with fewer than 8 judged there, only if every one
is; never in test or benchmark code alone (they are the lower contexts: the rule must earn
the rest first). A rule kept on below the bar (``KEPT_ON``) must reach it in the part of
other code a default run reports it in (files that do not need CUDA anyway, for a rule
naming CUDA: ``NARROWED``). The figures the rule pages print (``check/_default_scope.JUDGED``)
must be these.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from torchport.check import explain
from torchport.check._default_scope import (
    BAR,
    BENCH_SAMPLES,
    JUDGED,
    KEPT_ON,
    LEFT_OFF,
    NARROWED,
    SAMPLES,
)
from torchport.check._rule import Rule
from torchport.check._select import CONTEXTS, CUDA_NAMING
from torchport.check.rules import RULES

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
# One file per sample A-Y (A's has no letter), and V's second uniform draw: V is 200 of main
# 6729da7's 320 default-on findings on round 5v's repositories, V2 60 of the 143 findings
# TP109 and TP401 added there when they went on (j34v), so V + V2 is a uniform draw per rule of
# what those rules reported. Left out, as J's TP303 stratum is: V_off and VO, every finding of
# the off-by-default TP122 and TP205 selected alone, VO on repositories chosen for those rules.
POOLED = ["precision_sample.csv"] + [
    f"precision_sample_{x}.csv" for x in [*"bcdefghijklmnopqrstuv", "v2", *"wxy"]
]
BENCH_POOLED = POOLED  # benchmark code: the same span since sample T
PARAMS = [pytest.param(rule, id=rule.code) for rule in RULES]


def _read(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="") as handle:
        return list(csv.DictReader(handle))


def _key(sample: str, row: dict[str, str]) -> tuple[str, str, str, int, str]:
    return (sample, row["repo"], row["path"], int(row["line"]), row["code"])


def _pooled() -> dict[str, dict[str, Counter[str]]]:
    """Verdicts of the rows still reported, per rule and context: {code: {context: Counter}};
    the context ``narrowed`` is other code that does not need CUDA anyway (neither its file
    nor a block holding it imports a CUDA-only package or extension)."""
    verdicts = {
        _key(sample, row): row["verdict"]
        for sample in BENCH_POOLED
        for row in _read(sample)
        if row["verdict"]
    }
    scope = _read("precision_scope.csv")
    keys = [_key(row["sample"], row) for row in scope]
    assert sorted(keys) == sorted(verdicts), (
        "precision_scope.csv is not the judged rows: rerun --scope"
    )
    out: dict[str, dict[str, Counter[str]]] = {}
    for key, row in zip(keys, scope, strict=True):
        assert row["context"] in ("code", "test", "bench", "unparsed"), row
        assert row["reported"] in ("yes", "no"), row
        assert row["cuda"] in ("yes", "no"), row
        if row["context"] != "bench" and row["sample"] not in POOLED:
            continue  # held out for test code and the rest
        if row["reported"] == "yes":
            per = out.setdefault(row["code"], {})
            per.setdefault(row["context"], Counter())[verdicts[key]] += 1
            if row["context"] == "code" and row["cuda"] == "no":
                per.setdefault("narrowed", Counter())[verdicts[key]] += 1
    return out


POOL = _pooled()


def _earns(counts: Counter[str]) -> bool:
    real, judged = counts["real"], counts["real"] + counts["low"] + counts["noise"]
    return real == judged if judged < 8 else real >= 0.9 * judged


@pytest.mark.parametrize("rule", PARAMS)
def test_a_rule_is_on_by_default_only_where_its_judged_findings_are_90_percent_real(
    rule: type[Rule],
) -> None:
    if not rule.default:
        assert rule.code not in KEPT_ON, rule.code
        return
    for context in rule.default_contexts:
        counts = POOL.get(rule.code, {}).get(context, Counter())
        if rule.code in KEPT_ON and context == "code":
            # kept on below the bar: the entry must still be needed, and the part of other
            # code a default run reports it in must reach the bar
            assert not _earns(counts), f"{rule.code} earns its default now: drop its KEPT_ON"
            if rule.code in NARROWED:
                narrowed = POOL.get(rule.code, {}).get("narrowed", Counter())
                assert _earns(narrowed), f"{rule.code} misses the bar outside CUDA-only code too"
            continue
        assert _earns(counts), f"{rule.code} is on by default in {context}: {dict(counts)}"


def test_rules_kept_on_below_the_bar_are_on_outside_test_code_only() -> None:
    by_code = {rule.code: rule for rule in RULES}
    assert set(NARROWED) <= set(KEPT_ON)
    for code, reason in KEPT_ON.items():
        rule = by_code[code]
        assert rule.default and "code" in rule.default_contexts, code
        assert "test" not in rule.default_contexts, code  # benchmark code only where earned
        assert reason and f"kept on: {reason}" in explain(code), code
        if code not in NARROWED:  # kept by decision: the reason states the judged figures
            assert reason.startswith("by decision: "), code
            code_counts = POOL[code]["code"]
            real, judged = code_counts["real"], sum(code_counts.values())
            assert f"{real} of {judged} judged findings in other code" in reason, code
            continue
        assert code in CUDA_NAMING, code  # the narrowing is the default run's CUDA scope
        counts = POOL[code]["narrowed"]
        real, judged = NARROWED[code]
        assert (real, judged) == (counts["real"], counts["real"] + counts["low"] + counts["noise"])
        assert f"{real} of {judged}" in reason, code
        assert reason and f"kept on: {reason}" in explain(code), code


def test_rules_left_off_by_decision_are_off_and_their_pages_say_why() -> None:
    by_code = {rule.code: rule for rule in RULES}
    assert not set(LEFT_OFF) & set(KEPT_ON)
    for code, reason in LEFT_OFF.items():
        assert not by_code[code].default, code
        assert reason.startswith("by decision: "), code
        # the judged figure the decision overrules: it must still reach the bar, else the
        # bar keeps the rule off and the decision is not needed
        code_counts = POOL.get(code, {}).get("code", Counter())
        assert sum(code_counts.values()) and _earns(code_counts), f"{code}: drop its LEFT_OFF"
        assert f"{code_counts['real']} of {sum(code_counts.values())} real" in reason, code
        assert reason in explain(code), code


@pytest.mark.parametrize("rule", PARAMS)
def test_a_rule_off_by_default_is_under_the_bar_in_other_code_or_left_off_by_decision(
    rule: type[Rule],
) -> None:
    # its page says "off by default: under 90% real outside test code" with its figures
    counts = POOL.get(rule.code, {}).get("code", Counter())
    if rule.default or rule.code in LEFT_OFF or not sum(counts.values()):
        return
    assert not _earns(counts), f"{rule.code} reaches the bar in other code: {dict(counts)}"
    assert f"off by default: under {BAR:.0%} real outside test code" in explain(rule.code)


@pytest.mark.parametrize("rule", PARAMS)
def test_no_rule_is_on_in_test_code_alone(rule: type[Rule]) -> None:
    assert rule.default_contexts <= CONTEXTS
    assert not rule.default or "code" in rule.default_contexts


def test_the_pages_print_the_judged_figures() -> None:
    expected = {
        code: {
            context: (c["real"], c["real"] + c["low"] + c["noise"])
            for context, c in per.items()
            if context not in ("unparsed", "narrowed") and c["real"] + c["low"] + c["noise"]
        }
        for code, per in POOL.items()
    }
    assert {code: per for code, per in expected.items() if per} == JUDGED
    assert SAMPLES == "A-Y" and len(POOLED) == 26  # one file per letter, A's has none, and V2
    assert BENCH_SAMPLES == "A-Y" and BENCH_POOLED == POOLED


@pytest.mark.parametrize("rule", PARAMS)
def test_a_scoped_or_judged_rule_says_where_it_is_on_and_why(rule: type[Rule]) -> None:
    page = explain(rule.code)
    for context, (real, judged) in JUDGED.get(rule.code, {}).items():
        assert f"{real} of {judged} real" in page, rule.code
        assert f"samples {BENCH_SAMPLES if context == 'bench' else SAMPLES}" in page, rule.code
    if rule.default and rule.default_contexts != CONTEXTS:
        missing = sorted(CONTEXTS - rule.default_contexts, reverse=True)
        where = " and ".join("benchmark" if c == "bench" else c for c in missing)
        assert f"on by default outside {where} code" in page, rule.code
        assert f"--extend-select {rule.code}" in page, rule.code

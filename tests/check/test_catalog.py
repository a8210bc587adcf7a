"""The rule catalog says what each rule's own class says, and its stand-ins act as the rules.

The oracle is the rule classes themselves (every module under ``check/rules/``
imported): the catalog is data written apart from them, and a check that runs a
stand-in must find exactly what the real rule finds. Run this file as a script to
print the entries for ``check/_catalog.py`` after a rule changes.
"""

from __future__ import annotations

import ast
import json
import pickle
import subprocess
import sys

import pytest

from torchport.check._catalog import ENTRIES, LazyRule, real_rule, shipped_rule, shipped_rules
from torchport.check._engine import RuleSet, check_text
from torchport.check._rule import Rule
from torchport.check.rules import RULES

STAND_INS = {rule.code: rule for rule in shipped_rules()}
PARAMS = [pytest.param(rule, id=rule.code) for rule in RULES]


def _metadata(rule: type[Rule]) -> tuple[object, ...]:
    return (
        rule.code,
        rule.name,
        rule.default,
        rule.intent,
        rule.fix_safety,
        rule.node_types,
        rule.call_attrs,
        rule.attr_names,
        rule.constants,
        rule.call_keywords,
        rule.default_contexts,
        rule.message,
    )


def test_the_catalog_lists_every_rule_once_in_code_order() -> None:
    assert [e.code for e in ENTRIES] == [rule.code for rule in RULES]
    assert [e.code for e in ENTRIES] == sorted(e.code for e in ENTRIES)
    assert len({e.code for e in ENTRIES}) == len(ENTRIES)


@pytest.mark.parametrize("rule", PARAMS)
def test_a_stand_in_says_what_its_rule_says(rule: type[Rule]) -> None:
    stand_in = STAND_INS[rule.code]
    assert _metadata(stand_in) == _metadata(rule), render_entries()
    assert real_rule(stand_in) is rule
    assert shipped_rule(rule.code) is stand_in
    # what the catalog leaves out comes from the rule itself
    assert stand_in.__doc__ == rule.__doc__
    assert (stand_in.valid, stand_in.invalid) == (rule.valid, rule.invalid)


@pytest.mark.parametrize("rule", PARAMS)
def test_a_stand_in_finds_what_its_rule_finds(rule: type[Rule]) -> None:
    sources = [*rule.valid, *(example.source for example in rule.invalid)]
    real, lazy = RuleSet([rule]), RuleSet([STAND_INS[rule.code]])
    for source in sources:
        expected = check_text(source, "x.py", real, strict=True).findings
        assert check_text(source, "x.py", lazy, strict=True).findings == expected
    assert isinstance(lazy.rules[0], LazyRule)


def test_stand_ins_travel_to_worker_processes_as_themselves() -> None:
    for stand_in in STAND_INS.values():
        assert pickle.loads(pickle.dumps(stand_in)) is stand_in


def test_stand_ins_stay_out_of_the_registry() -> None:
    assert all(Rule.registry[code] is not s for code, s in STAND_INS.items())
    assert shipped_rule("TP000") is None


def test_the_catalog_imports_no_rule() -> None:
    probe = (
        "import json, sys\n"
        "from torchport.check._catalog import shipped_rules\n"
        "from torchport.check._select import available_rules, select_rules\n"
        "assert available_rules() == shipped_rules()\n"
        "select_rules(['ALL'])\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    modules = json.loads(out.stdout)
    assert not [m for m in modules if m.startswith("torchport.check.rules.")]


def test_a_selection_makes_the_stand_ins_of_its_rules_alone() -> None:
    # a class costs ~10 us: a default run makes its 14, not the catalog's 64; each made
    # once, the same class whichever way it is asked for, in the catalog's order
    probe = (
        "import json\n"
        "from torchport.check import _catalog\n"
        "from torchport.check._select import available_codes, select_rules\n"
        "chosen = select_rules()\n"
        "made = sorted(_catalog._SHIPPED)\n"
        "codes = list(available_codes())\n"
        "assert all(_catalog.shipped_rule(r.code) is r for r in chosen)\n"
        "assert all(getattr(_catalog, r.__name__) is r for r in chosen)\n"
        "every = _catalog.shipped_rules()\n"
        "assert all(r in every for r in chosen)\n"
        "print(json.dumps([[r.__name__ for r in chosen], made, codes, [r.code for r in every]]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    chosen, made, codes, every = json.loads(out.stdout)
    assert sorted(chosen) == made
    assert made == sorted(r.__name__ for r in STAND_INS.values() if r.default)
    assert codes == sorted(STAND_INS) == sorted(every)
    assert every == [entry.code for entry in ENTRIES]


def render_entries() -> str:
    """The text of ``ENTRIES`` in ``check/_catalog.py``, from the rule classes."""

    def names(values: frozenset[object] | None) -> str:
        if values is None:
            return "None"
        if not values:
            return "frozenset()"
        return "frozenset({" + ", ".join(repr(v) for v in sorted(values, key=repr)) + "})"

    lines = []
    for rule in sorted(RULES, key=lambda r: r.code):
        types = ", ".join(repr(t.__name__) for t in rule.node_types)
        module = rule.__module__.rsplit(".", 1)[1]
        lines += [
            "    RuleEntry(",
            f"        {rule.code!r}, {rule.__qualname__!r}, {module!r}, {rule.name!r},",
            f"        {rule.default!r}, {rule.intent.value!r}, {rule.fix_safety.value!r},",
            f"        ({types},),",
            f"        {names(rule.call_attrs)},",  # type: ignore[arg-type]
            f"        {names(rule.attr_names)},",  # type: ignore[arg-type]
            f"        {names(rule.constants)},",
            *([f"        {names(rule.call_keywords)},"] if rule.call_keywords else []),  # type: ignore[arg-type]
            *(
                [f"        default_contexts={names(rule.default_contexts)},"]  # type: ignore[arg-type]
                if rule.default_contexts != frozenset({"bench", "code", "test"})
                else []
            ),
            "    ),",
        ]
    return "\n".join(lines)


def test_node_type_names_are_ast_classes() -> None:
    for entry in ENTRIES:
        assert all(isinstance(getattr(ast, t, None), type) for t in entry.node_types), entry


if __name__ == "__main__":
    print(render_entries())

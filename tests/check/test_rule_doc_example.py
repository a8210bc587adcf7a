"""The complete rule in ``check/_rule.py``'s docstring works when copied.

The test takes the text a contributor would copy (the indented block after
"Example of a complete rule"), loads it as a module of its own, runs the rule it
defines through the real engine on the rule's own examples, and holds it to the
contract every shipped rule keeps (``test_rule_contract.py``).
"""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

import tests.check.test_rule_contract as contract
from torchport.check import _rule
from torchport.check._engine import RuleSet, check_text
from torchport.check._rule import Rule
from torchport.check.rules import RULES


def example_text() -> tuple[str, str]:
    """(the file name the docstring gives, the code block it shows)."""
    doc = _rule.__doc__ or ""
    _, _, rest = doc.partition("Example of a complete rule")
    assert rest, "the docstring no longer shows a complete rule"
    named = re.search(r"``check/rules/(\w+\.py)``", rest)
    assert named is not None, "the example no longer says which file it is"
    block = rest.split("::\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if line.strip() and not line.startswith("    "):
            break  # the prose after the block
        lines.append(line)
    return named.group(1), textwrap.dedent("\n".join(lines)).strip() + "\n"


def load_example(tmp_path: Path) -> tuple[str, ModuleType]:
    filename, code = example_text()
    path = tmp_path / filename
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"copied_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return filename, module


@pytest.fixture
def copied(tmp_path: Path) -> tuple[str, type[Rule]]:
    filename, module = load_example(tmp_path)
    rules = [
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, Rule) and value is not Rule
    ]
    assert len(rules) == 1, rules
    return filename, rules[0]


def test_the_example_keeps_the_rule_contract(copied: tuple[str, type[Rule]]) -> None:
    filename, rule = copied
    contract.test_code_name_and_default(rule)
    contract.test_message_says_what_to_do(rule)
    contract.test_docstring_headings(rule)
    contract.test_examples_present_and_consistent(rule)
    assert filename == rule.name.replace("-", "_") + ".py"  # the file is named after the rule
    assert rule.code not in {r.code for r in RULES}, "the example takes a shipped rule's code"
    assert rule.name not in {r.name for r in RULES}, "the example takes a shipped rule's name"
    assert rule.code not in Rule.registry  # copied outside check/rules/: not registered


def test_the_example_reports_its_invalid_examples(copied: tuple[str, type[Rule]]) -> None:
    _, rule = copied
    for example in rule.invalid:
        found = check_text(example.source, "example.py", RuleSet([rule])).findings
        assert len(found) == example.count, [str(f) for f in found]
        assert all(f.code == rule.code and f.message == rule.message for f in found)


def test_the_example_leaves_its_valid_examples(copied: tuple[str, type[Rule]]) -> None:
    _, rule = copied
    for source in rule.valid:
        assert check_text(source, "example.py", RuleSet([rule])).findings == []


def test_the_extraction_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_rule, "__doc__", "A rule module without an example.")
    with pytest.raises(AssertionError, match="no longer shows"):
        example_text()

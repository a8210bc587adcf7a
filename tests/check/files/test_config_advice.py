"""What a wrong ``[tool.torchport]`` value is told to write instead is right.

The oracle is apart from the message's code: the line after "write e.g." is put in a
``pyproject.toml`` of its own and must load, give the key a value, and that value must
be of the kind the key holds: rule selectors (a prefix of some rule's code, or ``ALL``)
for the rule keys; path patterns, never rule codes, for the excludes; and for a
``per-file-ignores`` entry, the user's own pattern mapped to codes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check import RULES
from torchport.check.files._config import Config, load_config
from torchport.errors import ConfigError

RULE_KEYS = ("select", "extend-select", "ignore")
PATTERN_KEYS = ("exclude", "extend-exclude")
_CODE = re.compile(r"^TP\d*$")

# Wrong values as TOML: not a list, or a list holding something other than strings.
WRONG = st.sampled_from(['"TP101"', '"legacy/"', "1", "true", "[1]", '["a", 2]', "{ a = 1 }"])


def _advice(error: ConfigError) -> str:
    message = str(error)
    assert "write e.g. " in message, message
    return message.split("write e.g. ", 1)[1]


def _load(folder: Path, line: str) -> Config:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pyproject.toml"
    path.write_text(f"[tool.torchport]\n{line}\n", encoding="utf-8")
    return load_config(path)


def _is_selector(value: str) -> bool:
    return value == "ALL" or any(rule.code.startswith(value) for rule in RULES)


@pytest.mark.parametrize("key", RULE_KEYS + PATTERN_KEYS)
@given(wrong=WRONG)
def test_the_advice_for_a_list_key_is_a_value_of_its_kind(
    tmp_path_factory: pytest.TempPathFactory, key: str, wrong: str
) -> None:
    folder = tmp_path_factory.mktemp("cfg")
    with pytest.raises(ConfigError) as caught:
        _load(folder / "bad", f"{key} = {wrong}")
    config = _load(folder / "advised", _advice(caught.value))
    values = getattr(config, key.replace("-", "_"))
    assert values, f"the advice for {key} sets nothing"
    for value in values:
        if key in RULE_KEYS:
            assert _is_selector(value), f"{key}: {value!r} selects no rule"
        else:
            assert not _CODE.match(value), f"{key} is told to write a rule code {value!r}"


@given(
    pattern=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12),
    wrong=WRONG,
)
def test_the_advice_for_a_per_file_ignores_entry_keeps_the_pattern(
    tmp_path_factory: pytest.TempPathFactory, pattern: str, wrong: str
) -> None:
    folder = tmp_path_factory.mktemp("cfg")
    key = '"' + pattern.replace("\\", "\\\\").replace('"', '\\"') + '"'
    key = "".join(f"\\u{ord(c):04X}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in key)
    with pytest.raises(ConfigError) as caught:
        _load(folder / "bad", f"per-file-ignores = {{ {key} = {wrong} }}")
    config = _load(folder / "advised", _advice(caught.value))
    ((advised_pattern, codes),) = config.per_file_ignores
    assert advised_pattern == pattern
    assert codes and all(_is_selector(code) for code in codes)


def test_the_advice_for_a_per_file_ignores_that_is_no_table_loads(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path / "bad", 'per-file-ignores = ["tests/**"]')
    config = _load(tmp_path / "advised", _advice(caught.value))
    assert config.per_file_ignores

"""docs/settings.md is what ``docs/_gen/settings_page.py`` writes, and what it says holds.

The page is generated from the configuration's code; these tests fail when the
committed page is stale (a key added, a default or an error message changed) and
check the page against the code by other roads than the generator's: the keys
``load_config`` accepts, the example table loading cleanly, each default being what an
empty table gives.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import settings_page

from torchport.check import load_config
from torchport.check._torch_api import FLOOR
from torchport.errors import ConfigError

PAGE = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def test_the_committed_page_is_what_the_generator_writes() -> None:
    assert PAGE.read_text(encoding="utf-8") == settings_page.render(), (
        "docs/settings.md is stale; run: python docs/_gen settings"
    )


def _documented_keys() -> list[str]:
    return re.findall(r"^### `([a-z-]+)`$", PAGE.read_text(encoding="utf-8"), re.M)


def test_every_key_load_config_accepts_has_a_section(tmp_path: Path) -> None:
    documented = _documented_keys()
    for key in documented:  # each documented key is accepted...
        (tmp_path / "pyproject.toml").write_text(f"[tool.torchport]\n{key} = []\n")
        try:
            load_config(tmp_path / "pyproject.toml")
        except ConfigError as error:
            assert "unknown key" not in str(error), key
    # ...and a key that is not documented is refused, so the list is complete.
    (tmp_path / "pyproject.toml").write_text("[tool.torchport]\nnot-a-key = 1\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(tmp_path / "pyproject.toml")
    assert sorted(documented) == sorted(settings_page.keys())


def test_the_example_table_is_a_valid_configuration(tmp_path: Path) -> None:
    block = re.search(r"```toml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert block is not None
    (tmp_path / "pyproject.toml").write_text(block.group(1), encoding="utf-8")
    config = load_config(tmp_path / "pyproject.toml")
    assert config.target_torch == (2, 7)
    assert config.ignore == ("TP303",)


def test_the_stated_defaults_are_what_an_empty_table_gives(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchport]\n")
    config = load_config(tmp_path / "pyproject.toml")
    text = PAGE.read_text(encoding="utf-8")
    for key in _documented_keys():
        section = text.split(f"### `{key}`", 1)[1].split("\n### ", 1)[0]
        row = re.search(r"^\| default \| (.*) \|$", section, re.M)
        assert row is not None, key
        default = row.group(1)
        value = getattr(config, key.replace("-", "_"))
        if default in ("`[]`", "`{}`"):
            assert value == (), key
        elif default in ("`true`", "`false`"):
            assert value is (default == "`true`"), key
        elif key == "select":
            assert value is None  # None: the rules on by default
        else:
            assert key == "target-torch", key
            assert value in (None, FLOOR)  # no requirements beside the table: the floor


def test_every_environment_variable_the_package_reads_is_documented() -> None:
    # apart from the generator's scan: the names os.environ is asked for in the source
    import re as _re

    source = PAGE.parents[1] / "src" / "torchport"
    read = set()
    for path in source.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        read |= set(_re.findall(r"environ(?:\.get)?[\[(]\s*\"([A-Z_]+)\"", text))
        read |= set(_re.findall(r"^_?[A-Z_]*(?:ENV|VAR)[A-Z_]* = \"([A-Z_]+)\"", text, _re.M))
    torchport_own = {name for name in read if name.startswith("TORCHPORT_")} | {
        "NO_COLOR",
        "FORCE_COLOR",
    }
    section = PAGE.read_text(encoding="utf-8").split("## Environment variables", 1)[1]
    documented = set(_re.findall(r"^\| `([A-Z_]+)` \|", section, _re.M))
    assert torchport_own <= documented, sorted(torchport_own - documented)

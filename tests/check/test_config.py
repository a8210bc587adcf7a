"""`[tool.torchport]`: finding the file, reading every key, rejecting bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchport.check._config import Config, find_config, load_config
from torchport.errors import ConfigError

FULL = """
[project]
name = "x"

[tool.torchport]
select = ["TP1", "TP201"]
extend-select = ["TP901"]
ignore = ["TP303"]
exclude = ["legacy/"]
extend-exclude = ["gen/**"]

[tool.torchport.per-file-ignores]
"tests/**" = ["TP101"]
"scripts/*.py" = ["TP2", "TP3"]
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_every_key_is_read(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "pyproject.toml", FULL))
    assert config.select == ("TP1", "TP201")
    assert config.extend_select == ("TP901",)
    assert config.ignore == ("TP303",)
    assert config.exclude == ("legacy/",)
    assert config.extend_exclude == ("gen/**",)
    assert config.per_file_ignores == (("tests/**", ("TP101",)), ("scripts/*.py", ("TP2", "TP3")))
    assert config.root == tmp_path
    assert config.ignores_for(tmp_path / "tests" / "a" / "t.py") == ("TP101",)
    assert config.ignores_for(tmp_path / "scripts" / "s.py") == ("TP2", "TP3")
    assert config.ignores_for(tmp_path / "scripts" / "deep" / "s.py") == ()
    (globs,) = config.exclude_globs()
    assert globs.match(tmp_path / "legacy", is_dir=True)
    assert globs.match(tmp_path / "gen" / "a" / "b.py", is_dir=False)
    assert not globs.match(tmp_path / "src" / "a.py", is_dir=False)


def test_nearest_pyproject_with_a_table_wins(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchport]\nselect = ["TP1"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", '[project]\nname = "no-table"\n')
    inner = write(
        tmp_path / "pkg" / "sub" / "pyproject.toml", '[tool.torchport]\nignore = ["TP2"]\n'
    )
    write(tmp_path / "pkg" / "sub" / "deep" / "m.py", "")
    assert find_config([tmp_path / "pkg" / "sub" / "deep" / "m.py"]).source == inner
    # pkg/pyproject.toml has no [tool.torchport]: skipped, the root one applies
    found = find_config([tmp_path / "pkg"])
    assert found.source == tmp_path / "pyproject.toml" and found.select == ("TP1",)
    # several paths: their common folder
    assert (
        find_config([tmp_path / "pkg" / "sub", tmp_path / "pkg"]).source
        == tmp_path / "pyproject.toml"
    )


def test_defaults_without_any_config(tmp_path: Path) -> None:
    config = find_config([tmp_path])
    assert config == Config(root=tmp_path)
    assert config.select is None and config.source is None and config.exclude_globs() == []


def test_cwd_when_no_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchport]\nignore = ["TP4"]\n')
    monkeypatch.chdir(tmp_path)
    assert find_config([]).ignore == ("TP4",)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ('selct = ["TP1"]', r"unknown key 'selct'.*did you mean 'select'"),
        ("colour = 1", r"unknown key 'colour'.*known keys"),
        ('select = "TP1"', r"select .* must be a list of strings"),
        ("ignore = [1]", r"ignore .* must be a list of strings"),
        ('per-file-ignores = ["x"]', r"per-file-ignores .* must be a table"),
        ('per-file-ignores = { "a/*" = "TP1" }', r"per-file-ignores.'a/\*'.* list of strings"),
        ("exclude = [true]", r"exclude .* must be a list"),
    ],
)
def test_bad_keys_and_values_name_the_key_and_file(tmp_path: Path, body: str, match: str) -> None:
    path = write(tmp_path / "pyproject.toml", f"[tool.torchport]\n{body}\n")
    with pytest.raises(ConfigError, match=match) as info:
        load_config(path)
    assert str(path) in str(info.value)
    with pytest.raises(ConfigError):
        find_config([tmp_path])


def test_invalid_toml_and_missing_table_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path / "bad.toml", "[tool.torchport\n"))
    with pytest.raises(ConfigError, match=r"no \[tool.torchport\] table"):
        load_config(write(tmp_path / "other.toml", "[tool.ruff]\n"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.toml")

"""`[tool.torchport]`: finding the file, reading every key, rejecting bad ones."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check.files._config import Config, load_config
from torchport.check.files._config_search import find_config
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
        ('per-file-ignores = { "a/*" = "TP1" }', r'entry "a/\*".* list of strings'),
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


# ------------------------------------------------- bad configuration: each a clear error


def test_non_utf8_pyproject_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_bytes(b'[tool.torchport]\nselect = ["TP1"]\n# caf\xe9\n')
    with pytest.raises(ConfigError, match=r"not UTF-8 \(byte \d+.*re-save it as UTF-8"):
        load_config(path)
    with pytest.raises(ConfigError, match="not UTF-8"):
        find_config([tmp_path])


@pytest.mark.parametrize("value", ["5", '"TP1"', "[1, 2]", "true"])
def test_tool_torchport_that_is_not_a_table(tmp_path: Path, value: str) -> None:
    path = write(tmp_path / "pyproject.toml", f"[tool]\ntorchport = {value}\n")
    with pytest.raises(ConfigError, match=r"`torchport` under \[tool\].*expected a table"):
        find_config([tmp_path])
    with pytest.raises(ConfigError, match="expected a table"):
        load_config(path)


def test_other_tools_tables_are_not_judged(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool]\nruff = 5\n")
    assert find_config([tmp_path]).source is None


@pytest.mark.parametrize("pattern", ["[z-a]", "src/[9-0]*.py"])
def test_invalid_exclude_pattern_is_a_config_error(tmp_path: Path, pattern: str) -> None:
    from torchport.check import check_paths

    write(tmp_path / "pyproject.toml", f'[tool.torchport]\nexclude = ["ok/", "{pattern}"]\n')
    write(tmp_path / "a.py", "x = 1\n")
    with pytest.raises(ConfigError, match=r"invalid pattern.*exclude of .*pattern 2.*\[a-z\]"):
        check_paths([tmp_path])


def test_invalid_gitignore_pattern_names_file_and_line(tmp_path: Path) -> None:
    from torchport.check import check_paths

    write(tmp_path / "sub" / ".gitignore", "# comment\n*.log\n[z-a]\n")
    write(tmp_path / "sub" / "a.py", "x = 1\n")
    with pytest.raises(ConfigError, match=r"sub/\.gitignore, line 3"):
        check_paths([tmp_path])


@pytest.mark.parametrize("body", ["select = []\n", 'select = [" "]\n'])
def test_empty_select_is_an_error_not_all_checks_passed(tmp_path: Path, body: str) -> None:
    from torchport.check import check_paths
    from torchport.cli._main import main

    write(tmp_path / "pyproject.toml", "[tool.torchport]\n" + body)
    write(tmp_path / "a.py", "x = y.cuda()\n")
    with pytest.raises(ConfigError, match=r"select in .* is empty"):
        check_paths([tmp_path])
    assert main(["check", str(tmp_path)]) == 2
    assert main(["check", "--select", "", str(tmp_path / "a.py")]) == 2  # --select "" too
    # an extend-select next to the empty select still runs something: not an error
    assert check_paths([tmp_path], extend_select=["TP101"]).findings


@given(
    st.sampled_from(["gen", "out/deep", ".hidden"]),
    st.sampled_from(["{p}", "{p}/", "./{p}", "/{p}", "{root}/{p}", "././{p}/"]),
    st.sampled_from(["config", "command line"]),
)
def test_an_exclude_means_the_same_folder_however_it_is_spelled(
    tmp_path_factory: pytest.TempPathFactory, folder: str, spelling: str, where: str
) -> None:
    """The oracle: the files under that folder, and only those, are left out."""
    from torchport.check import check_paths

    root = tmp_path_factory.mktemp("spell")
    files = ["a.py", "gen/b.py", "out/deep/c.py", "out/d.py", ".hidden/e.py", "src/gen.py"]
    for name in files:
        write(root / name, "x = 1\n")
    pattern = spelling.format(p=folder, root=root.as_posix())
    here = Path.cwd()
    os.chdir(root)  # command-line patterns are relative to the working folder
    try:
        if where == "config":
            write(root / "pyproject.toml", f"[tool.torchport]\nextend-exclude = [{pattern!r}]\n")
            config = load_config(root / "pyproject.toml")
        else:
            config = Config(root=root).with_excludes(None, [pattern])
        checked = check_paths([root / n for n in files], config=config).files
    finally:
        os.chdir(here)
    assert checked == len([n for n in files if not n.startswith(f"{folder}/")])


def test_per_file_ignores_read_dot_slash_and_full_paths_as_excludes_do(tmp_path: Path) -> None:
    for pattern in ("gen/**", "./gen/**", f"{tmp_path.as_posix()}/gen/**"):
        config = Config(per_file_ignores=((pattern, ("TP1",)),), root=tmp_path)
        assert config.ignores_for(tmp_path / "gen" / "b.py") == ("TP1",), pattern
        assert config.ignores_for(tmp_path / "src" / "gen" / "b.py") == (), pattern

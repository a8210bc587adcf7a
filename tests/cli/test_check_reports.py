"""Every output format escapes control characters in paths (a file name cannot forge lines in
a CI log); the CI formats (grouped, gitlab, junit) hold what they should; --show-settings,
--show-files, --cache-dir and check --diff do what docs/cli.md says."""

from __future__ import annotations

import json
import os
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import FORMATS, check_paths
from torchport.cli import main
from torchport.cli.check import FORMATS as CLI_FORMATS

SCRIPT = "import torch\nx = torch.zeros(3).cuda()\n"
MACHINE = ("json", "sarif", "gitlab")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _hostile(text: str) -> list[str]:
    """The characters of ``text`` a terminal or CI log would act on (a line break aside)."""
    bad = ("Cc", "Cf", "Zl", "Zp", "Cs")
    return [c for c in text if c != "\n" and unicodedata.category(c) in bad]


def _machine_paths(fmt: str, data: object) -> set[str]:
    """The file names a JSON/SARIF/GitLab report names, decoded."""
    if fmt == "sarif":
        results = data["runs"][0]["results"]  # type: ignore[index]
        uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
        return {os.path.basename(unquote(u, errors="surrogateescape")) for u in uris}
    if fmt == "gitlab":
        return {os.path.basename(i["location"]["path"]) for i in data}  # type: ignore[union-attr]
    return {os.path.basename(i["path"]) for i in data}  # type: ignore[union-attr]


def test_the_cli_lists_every_format() -> None:
    assert CLI_FORMATS == FORMATS
    assert {"grouped", "gitlab", "junit"} <= set(FORMATS)


_CHARS = ["a", "b", "_", "\n", "\r", "\t", "\x1b", "\x07", "\u202e", "\u2028", "\udcff"]
names = st.text(
    st.sampled_from(_CHARS),
    min_size=1,
    max_size=6,
).filter(lambda n: _hostile(n) or "\n" in n)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=names)
def test_a_file_name_never_reaches_a_report_raw(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    folder = tmp_path_factory.mktemp("names")
    try:
        (folder / f"{name}.py").write_text(SCRIPT)
    except (OSError, UnicodeEncodeError):
        return  # a name this file system refuses
    (folder / "plain.py").write_text(SCRIPT)
    (real,) = [p for p in os.listdir(folder) if p != "plain.py"]
    for fmt in FORMATS:
        code, out, err = _run(
            capsys, "check", "--extend-select", "TP101", "--no-cache", "--format", fmt, str(folder)
        )
        assert code == 1, err
        assert not _hostile(out) and not _hostile(err), (fmt, out)
        if fmt in MACHINE:  # their own escaping keeps the exact path
            assert real in _machine_paths(fmt, json.loads(out)), (fmt, out)
        elif fmt == "junit":
            ET.fromstring(out.encode())
        else:  # every finding is one line: its path cannot split it
            heads = [line for line in out.splitlines() if "TP101" in line]
            assert len(heads) == 2, (fmt, out)
    for argv in (["fix", "--diff"], ["port", "--diff"], ["check", "--show-files"]):
        code, out, err = _run(capsys, *argv, str(folder))
        assert not _hostile(out) and not _hostile(err), (argv, out, err)


def test_grouped_lists_each_file_once_with_its_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text(SCRIPT * 2)
    (tmp_path / "b.py").write_text(SCRIPT)
    code, out, _ = _run(
        capsys,
        "check",
        "--extend-select",
        "TP101",
        "--no-cache",
        "--format",
        "grouped",
        str(tmp_path),
    )
    assert code == 1
    blocks = [b for b in out.split("\n\n") if b.strip()]
    assert blocks[0].splitlines()[0].endswith("a.py:")
    assert sum("TP101" in line for line in blocks[0].splitlines()) == 2
    assert blocks[1].splitlines()[0].endswith("b.py:")
    assert blocks[-1].startswith("Found")


def test_gitlab_fingerprints_are_stable_and_distinct(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SCRIPT * 2)
    _, out, _ = _run(
        capsys, "check", "--extend-select", "TP101", "--no-cache", "--format", "gitlab", "a.py"
    )
    issues = json.loads(out)
    assert {i["location"]["path"] for i in issues} == {"a.py"}
    prints = [i["fingerprint"] for i in issues]
    assert len(set(prints)) == len(prints)
    (tmp_path / "a.py").write_text("\n\n" + SCRIPT * 2)  # lines move: identities stay
    _, moved, _ = _run(
        capsys, "check", "--extend-select", "TP101", "--no-cache", "--format", "gitlab", "a.py"
    )
    assert [i["fingerprint"] for i in json.loads(moved)] == prints
    assert [i["location"]["lines"]["begin"] for i in json.loads(moved)] != [
        i["location"]["lines"]["begin"] for i in issues
    ]


def test_junit_counts_findings_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text(SCRIPT)
    (tmp_path / "bad.py").write_text("def (:\n")
    code, out, _ = _run(
        capsys,
        "check",
        "--extend-select",
        "TP101",
        "--no-cache",
        "--format",
        "junit",
        str(tmp_path),
    )
    assert code == 2
    root = ET.fromstring(out.encode())
    result = check_paths([tmp_path], extend_select=["TP101"])
    assert root.get("failures") == str(len(result.findings))
    assert root.get("errors") == "1"
    assert len(root.findall(".//failure")) == len(result.findings)
    (clean := tmp_path / "clean").mkdir()
    (clean / "c.py").write_text("x = 1\n")
    code, out, _ = _run(
        capsys, "check", "--extend-select", "TP101", "--no-cache", "--format", "junit", str(clean)
    )
    assert code == 0 and ET.fromstring(out.encode()).find(".//testcase") is not None


def test_show_settings_names_the_table_and_the_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["torch>=2.7"]\n'
        '[tool.torchport]\nignore = ["TP106"]\n'
        '[tool.torchport.per-file-ignores]\n"tests/**" = ["TP3"]\n'
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text(SCRIPT)
    argv = ["check", "--show-settings", "--format", "json", str(tmp_path / "tests" / "t.py")]
    code, out, _ = _run(capsys, *argv)
    facts = json.loads(out)
    assert code == 0
    assert facts["config"] == str(tmp_path / "pyproject.toml")
    assert facts["target-torch"] == "2.7" and "dependencies" in facts["target-torch-from"]
    assert facts["per-file-ignores"] == ["TP3"] and facts["ignore"] == ["TP106"]
    assert "TP106" not in facts["rules"] and not any(c.startswith("TP3") for c in facts["rules"])
    code, out, _ = _run(capsys, *argv, "--target-torch", "2.9")
    assert json.loads(out)["target-torch"] == "2.9"
    code, _, err = _run(
        capsys, "check", "--extend-select", "TP101", "--show-settings", str(tmp_path), str(tmp_path)
    )
    assert code == 2 and "one file" in err


def test_show_files_is_what_a_check_covers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchport]\nexclude = ["gen/"]\n')
    for name in ("a.py", "gen/b.py", "sub/c.pyi", "notes.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(SCRIPT)
    code, out, _ = _run(capsys, "check", "--extend-select", "TP101", "--show-files", str(tmp_path))
    listed = out.splitlines()
    assert code == 0
    assert listed == sorted(str(tmp_path / n) for n in ("a.py", "sub/c.pyi"))
    assert check_paths([tmp_path], extend_select=["TP101"]).files == len(listed)


def test_cache_dir_puts_the_cache_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text(SCRIPT)
    os.utime(tmp_path / "a.py", (1e9, 1e9))  # not "just modified", which is never cached
    cache = tmp_path / "elsewhere"
    _run(
        capsys,
        "check",
        "--extend-select",
        "TP101",
        "--cache-dir",
        str(cache),
        str(tmp_path / "a.py"),
    )
    assert list(cache.rglob("*.json"))
    assert not (tmp_path / ".torchport_cache").exists()


def test_check_diff_shows_the_fix_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text(SCRIPT)
    code, out, _ = _run(
        capsys, "check", "--extend-select", "TP101", "--diff", str(tmp_path / "a.py")
    )
    assert code == 1 and out.startswith("--- ") and "+x = torch.zeros(3).to(device)" in out
    assert (tmp_path / "a.py").read_text() == SCRIPT

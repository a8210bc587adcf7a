"""check_paths / fix_paths end to end on real files, with test-only rules."""

from __future__ import annotations

import ast
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import torchport.check
import torchport.check.files._plan as plan_module
import torchport.check.rules as rules_pkg
from torchport.check import check_paths, fix_paths
from torchport.check._context import Context
from torchport.check._rule import Edit, Finding, Fix, FixSafety, Rule
from torchport.errors import ConfigError


class DotCuda(Rule):
    """What it does: test rule: `x.cuda()` -> `x.cpu()`."""

    code = "TP9960"
    name = "test-dot-cuda"
    message = "use .cpu()"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Attribute,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Attribute)
        if node.attr == "cuda":
            end = ctx.end(node)
            yield ctx.finding(self, node, fix=Fix((Edit(end - 4, end, "cpu"),), FixSafety.SAFE))


class NameBoom(Rule):
    """What it does: test rule: reports `flag`, crashes on `boom`."""

    code = "TP9961"
    name = "test-name-boom"
    message = "flagged"
    node_types = (ast.Name,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id == "boom":
            raise ValueError("kaboom")
        if node.id == "flag":
            yield ctx.finding(self, node)


@pytest.fixture(autouse=True)
def with_test_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules_pkg, "RULES", (DotCuda, NameBoom))


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_public_surface() -> None:
    assert sorted(torchport.check.__all__) == sorted(set(torchport.check.__all__))
    for name in ("check_source", "fix_source", "check_paths", "fix_paths", "Finding", "Rule",
                 "FixSafety", "RULES", "CheckResult", "FixResult", "explain"):  # fmt: skip
        assert name in torchport.check.__all__
        assert getattr(torchport.check, name) is not None


def test_bad_files_are_named_errors_and_the_rest_still_checked(tmp_path: Path) -> None:
    write(tmp_path / "ok.py", "x.cuda()\n")
    write(tmp_path / "syntax.py", "def (:\n")
    write(tmp_path / "latin.py", "s = 'é'\n".encode("latin-1"))
    write(tmp_path / "nul.py", b"x = 1\x00\n")
    write(tmp_path / "cookie.py", "# coding: latin-1\nflag = 'é'\n".encode("latin-1"))
    write(tmp_path / "crash.py", "boom\nz.cuda\n")
    result = check_paths([tmp_path, tmp_path / "absent.py"], jobs=1)
    errors = {Path(e.path).name: e.message for e in result.errors}
    assert set(errors) == {"syntax.py", "latin.py", "nul.py", "crash.py", "absent.py"}
    assert errors["syntax.py"].startswith("cannot parse") and "line 1" in errors["syntax.py"]
    assert "not valid utf-8" in errors["latin.py"]
    assert "TP9961" in errors["crash.py"] and "internal error" in errors["crash.py"]
    found = [(Path(f.path).name, f.code) for f in result.findings]
    assert found == [("cookie.py", "TP9961"), ("crash.py", "TP9960"), ("ok.py", "TP9960")]
    assert result.exit_code == 2
    assert result.files == 6


def test_exit_codes_and_selection(tmp_path: Path) -> None:
    clean = write(tmp_path / "clean.py", "x = 1\n")
    dirty = write(tmp_path / "dirty.py", "x.cuda(flag)\n")
    assert check_paths([clean]).exit_code == 0
    assert check_paths(str(dirty)).findings == check_paths([dirty]).findings != []  # one path
    assert check_paths([dirty]).exit_code == 1
    assert [f.code for f in check_paths([dirty], select=["TP9961"]).findings] == ["TP9961"]
    assert [f.code for f in check_paths([dirty], ignore=["TP9960"]).findings] == ["TP9961"]
    with pytest.raises(ConfigError, match="TP1234"):
        check_paths([dirty], select=["TP1234"])


def test_config_select_ignore_per_file_and_exclude(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        '[tool.torchport]\nignore = ["TP9961"]\nexclude = ["legacy/"]\n'
        '[tool.torchport.per-file-ignores]\n"tests/*" = ["TP9960"]\n',
    )
    write(tmp_path / "a.py", "flag.cuda()\n")
    write(tmp_path / "tests" / "t.py", "flag.cuda()\n")
    write(tmp_path / "legacy" / "old.py", "flag.cuda()\n")
    result = check_paths([tmp_path])
    assert [(Path(f.path).name, f.code) for f in result.findings] == [("a.py", "TP9960")]
    # the command line adds to ignore and replaces select
    with pytest.raises(ConfigError, match="no rule is left to run"):
        check_paths([tmp_path], ignore=["TP9960"])  # with the config's, every rule
    with pytest.raises(ConfigError, match="no rule is left to run"):
        check_paths([tmp_path], select=["TP9961"])  # config's ignore still applies
    write(tmp_path / "pyproject.toml", '[tool.torchport]\nignore = ["TP77"]\n')
    with pytest.raises(ConfigError, match="TP77"):
        check_paths([tmp_path])
    other = write(tmp_path / "conf" / "torchport.toml", '[tool.torchport]\nselect = ["TP9961"]\n')
    assert {f.code for f in check_paths([tmp_path / "a.py"], config=other).findings} == {"TP9961"}


def test_parallel_equals_serial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, process_pools: list[int]
) -> None:
    for i in range(70):
        body = "".join(f"v{j} = x{j}.cuda()\nflag\n" for j in range(i % 7))
        write(tmp_path / f"pkg{i % 3}" / f"m{i}.py", body or "pass\n")
    write(tmp_path / "pkg0" / "broken.py", "def (:\n")
    serial = check_paths([tmp_path], jobs=1)
    parallel = check_paths([tmp_path], jobs=2)
    assert parallel.findings == serial.findings and parallel.errors == serial.errors
    assert process_pools == [2]
    process_pools.clear()
    assert check_paths([tmp_path]).findings == serial.findings  # tiny files: this process
    assert process_pools == []
    monkeypatch.setattr(plan_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(plan_module.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # idle cores
    # jobs=None: a check stays in this process however many files (each worker would
    # work out the project view again); a fix takes workers from many files up
    assert check_paths([tmp_path]).findings == serial.findings
    assert process_pools == []
    assert check_paths([tmp_path], jobs=2).findings == serial.findings
    assert process_pools == [2]
    fix_paths([tmp_path], diff=True)
    assert len(process_pools) == 2 and process_pools[1] >= 1
    assert len(serial.findings) > 100 and len(serial.errors) == 1
    assert parallel.lines == serial.lines and parallel.files == serial.files == 71
    keys = [(f.path, f.line, f.col, f.code) for f in serial.findings]
    assert keys == sorted(keys)


def test_fix_writes_atomically_keeps_mode_encoding_and_is_idempotent(tmp_path: Path) -> None:
    before = "# coding: latin-1\r\ns = 'é'\r\ny = x.cuda()\r\n"
    script = write(tmp_path / "s.py", before.encode("latin-1"))
    script.chmod(0o751)
    bom = write(tmp_path / "bom.py", b"\xef\xbb\xbfa.cuda()\n")
    clean = write(tmp_path / "clean.py", "x = 1\n")
    clean_inode = clean.stat().st_ino
    result = fix_paths([tmp_path])
    assert [(Path(c.path).name, c.fixed, c.written) for c in result.changed] == [
        ("bom.py", {"TP9960": 1}, True),
        ("s.py", {"TP9960": 1}, True),
    ]
    assert script.read_bytes() == before.replace("cuda", "cpu").encode("latin-1")
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert bom.read_bytes() == b"\xef\xbb\xbfa.cpu()\n"
    assert clean.stat().st_ino == clean_inode  # unchanged files are not rewritten
    assert result.exit_code == 0 and result.remaining == []
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # no temp files left
    again = fix_paths([tmp_path])
    assert again.changed == [] and again.exit_code == 0


def test_fix_reports_remaining_findings(tmp_path: Path) -> None:
    write(tmp_path / "a.py", "flag.cuda()\n")
    result = fix_paths([tmp_path])
    assert [f.code for f in result.remaining] == ["TP9961"]
    assert result.exit_code == 1
    assert (tmp_path / "a.py").read_text() == "flag.cpu()\n"


def test_diff_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path / "a.py", "y = x.cuda()\n")
    result = fix_paths([path], diff=True)
    (change,) = result.changed
    assert not change.written and change.fixed == {"TP9960": 1}
    assert "-y = x.cuda()\n+y = x.cpu()\n" in change.diff and f"+++ {path}\n" in change.diff
    assert path.read_text() == "y = x.cuda()\n"
    assert result.exit_code == 1  # something would change


def test_fix_never_writes_through_a_symlink_leading_outside(tmp_path: Path) -> None:
    outside = write(tmp_path / "outside" / "o.py", "y = x.cuda()\n")
    tree = tmp_path / "tree"
    inner = write(tree / "sub" / "real.py", "y = x.cuda()\n")
    (tree / "out.py").symlink_to(outside)
    (tree / "in.py").symlink_to(inner)
    result = fix_paths([tree / "out.py"])
    assert outside.read_text() == "y = x.cuda()\n"
    assert result.exit_code == 2 and "symlink" in result.errors[0].message
    result = fix_paths([tree / "in.py"])
    assert result.exit_code == 0
    assert inner.read_text() == "y = x.cpu()\n" and (tree / "in.py").is_symlink()
    # walking the tree never follows the links at all
    write(outside, "y = x.cuda()\n")
    fix_paths([tree])
    assert outside.read_text() == "y = x.cuda()\n"


def test_fix_unparseable_file_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "bad.py", "x.cuda(\n")
    result = fix_paths([tmp_path])
    assert result.exit_code == 2 and result.errors[0].path.endswith("bad.py")
    assert os.listdir(tmp_path) == ["bad.py"]


def test_too_deep_and_engine_crash_are_per_file_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torchport.check._engine as engine

    write(tmp_path / "deep.py", "x = " + "a+" * 200_000 + "a\n")
    write(tmp_path / "ok.py", "x.cuda()\n")
    write(tmp_path / "crash.py", "CRASH = 1\n")

    class CrashingContext(Context):
        def __init__(self, source: str, path: str, tree: ast.Module, **options: Any) -> None:
            if "CRASH" in source:
                raise IndexError("context bug")
            super().__init__(source, path, tree, **options)

    monkeypatch.setattr(engine, "Context", CrashingContext)
    for result in (check_paths([tmp_path], jobs=1), fix_paths([tmp_path], diff=True, jobs=1)):
        errors = {Path(e.path).name: e.message for e in result.errors}
        assert errors["deep.py"] == "cannot parse: nested too deeply for Python's parser"
        assert errors["crash.py"].startswith("internal error: IndexError('context bug')")
        assert result.exit_code == 2
    assert [Path(f.path).name for f in check_paths([tmp_path], jobs=1).findings] == ["ok.py"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_fix_keeps_the_owner(tmp_path: Path) -> None:
    path = write(tmp_path / "a.py", "y = x.cuda()\n")
    os.chown(path, 4321, 4322)
    fix_paths([path])
    assert path.read_text() == "y = x.cpu()\n"
    assert (path.stat().st_uid, path.stat().st_gid) == (4321, 4322)


def test_diff_of_a_file_without_final_newline_and_absolute_path(tmp_path: Path) -> None:
    path = write(tmp_path / "a.py", "y = x.cuda()")
    (change,) = fix_paths([path.absolute()], diff=True).changed
    assert change.diff.splitlines() == [
        f"--- {path.absolute()}",
        f"+++ {path.absolute()}",
        "@@ -1 +1 @@",
        "-y = x.cuda()",
        "\\ No newline at end of file",
        "+y = x.cpu()",
        "\\ No newline at end of file",
    ]
    if shutil.which("patch") is None:
        return
    patch = tmp_path / "fix.patch"
    patch.write_text(change.diff)
    applied = subprocess.run(
        ["patch", "--dry-run", "-p0", "-i", str(patch)], capture_output=True, text=True, cwd="/"
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr


def test_stdin_text_uses_the_name_for_config_and_writes_nothing(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        '[tool.torchport]\nexclude = ["old/"]\n'
        '[tool.torchport.per-file-ignores]\n"gen/*" = ["TP9960"]\n',
    )
    name = tmp_path / "gen" / "buffer.py"  # need not exist
    result = check_paths([name], stdin="flag.cuda()\n")
    assert [(f.path, f.code) for f in result.findings] == [(str(name), "TP9961")]
    assert result.files == 1 and result.lines == 1
    fixed = fix_paths([tmp_path / "b.py"], stdin="y = x.cuda()\n")
    (change,) = fixed.changed
    assert change.text == "y = x.cpu()\n" and not change.written and change.diff == ""
    assert fixed.exit_code == 0 and not (tmp_path / "b.py").exists()
    assert check_paths([tmp_path / "old" / "x.py"], stdin="flag\n").findings == []  # excluded
    with pytest.raises(ConfigError, match="exactly one path"):
        check_paths([tmp_path, tmp_path], stdin="x = 1\n")

"""`torchport fix`: in-place fixes, --diff, --unsafe, exit codes (with test-only rules)."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import torchport.check.rules as rules_pkg
from torchport.check import fix_paths
from torchport.check._context import Context
from torchport.check._rule import Finding, Fix, FixSafety, Intent, Rule
from torchport.cli._main import main


class Rename(Rule):
    """What it does: test rule: `old` -> `new` (safe); `risky` -> `safe` (unsafe)."""

    code = "TP9940"
    name = "test-rename"
    message = "rename it"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Name,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id == "old":
            yield ctx.finding(self, node, fix=Fix((ctx.replace(node, "new"),), FixSafety.SAFE))
        elif node.id == "risky":
            yield ctx.finding(self, node, fix=Fix((ctx.replace(node, "safe"),), FixSafety.UNSAFE))
        elif node.id == "stuck":
            yield ctx.finding(self, node)


@pytest.fixture(autouse=True)
def with_test_rules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(rules_pkg, "RULES", (Rename,))
    monkeypatch.chdir(tmp_path)


def run_fix(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["fix", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_fix_in_place_then_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text("x = old + old\n")
    code, out, _ = run_fix(capsys, "a.py")
    assert code == 0
    assert "fixed a.py: TP9940 x2" in out and "Fixed 2 findings in 1 file; 0 left." in out
    assert (tmp_path / "a.py").read_text() == "x = new + new\n"
    code, out, _ = run_fix(capsys, "a.py")
    assert code == 0 and "Fixed 0 findings in 0 files; 0 left." in out


def test_unsafe_and_remaining(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text("risky\nstuck\n")
    code, out, _ = run_fix(capsys, "a.py")
    assert code == 1 and "a.py:1:1: TP9940 rename it" in out and "2 left" in out
    assert (tmp_path / "a.py").read_text() == "risky\nstuck\n"
    assert "1 more with `torchport fix --unsafe`" in out
    code, out, _ = run_fix(capsys, "--unsafe", "a.py")
    assert code == 1 and "1 left" in out
    assert "--unsafe" not in out  # it just ran: no hint to run it
    assert (tmp_path / "a.py").read_text() == "safe\nstuck\n"
    code, _, err = run_fix(capsys, "--ignore", "TP9940", "a.py")  # no rule left to run
    assert code == 2 and "no rule is left to run" in err


def test_diff_prints_a_patch_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text("y = old\n")
    code, out, err = run_fix(capsys, "--diff", "a.py")
    assert code == 1
    assert out == "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-y = old\n+y = new\n"
    assert "would fix a.py" in err
    assert (tmp_path / "a.py").read_text() == "y = old\n"
    (tmp_path / "a.py").write_text("y = new\n")
    assert run_fix(capsys, "--diff", "a.py")[:2] == (0, "")


def test_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.py").write_text("def (:\n")
    (tmp_path / "a.py").write_text("old\n")
    code, _, err = run_fix(capsys, ".")
    assert code == 2 and "bad.py: error: cannot parse" in err
    assert (tmp_path / "a.py").read_text() == "new\n"


def test_stdin_fixed_text_on_stdout_and_no_file_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text("old\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO("x = old\nstuck\n"))
    code, out, err = run_fix(capsys, "-", "--stdin-filename", "a.py")
    assert (code, out) == (1, "x = new\nstuck\n")
    assert "fixed a.py: TP9940 x1" in err and "a.py:2:1: TP9940" in err
    assert (tmp_path / "a.py").read_text() == "old\n"  # the named file is never touched
    monkeypatch.setattr(sys, "stdin", io.StringIO("clean = 1\n"))
    assert run_fix(capsys, "-")[:2] == (0, "clean = 1\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO("y = old\n"))
    code, out, _ = run_fix(capsys, "-", "--diff")
    assert code == 1 and out == "--- a/-\n+++ b/-\n@@ -1 +1 @@\n-y = old\n+y = new\n"


class Speedup(Rename):
    """What it does: test SPEED rule: `slow` -> `fast` (safe)."""

    code = "TP9941"
    name = "test-speedup"
    intent = Intent.SPEED

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id == "slow":
            yield ctx.finding(self, node, fix=Fix((ctx.replace(node, "fast"),), FixSafety.SAFE))


@pytest.mark.parametrize(
    ("argv", "config", "expected"),
    [
        ((), "", "x = new + slow\n"),  # plain fix: DEVICE/SAFETY fixes only
        (("--speed",), "", "x = new + fast\n"),
        (("--select", "TP9941"), "", "x = old + fast\n"),  # named explicitly
        (("--extend-select", "TP994"), "", "x = new + fast\n"),  # a prefix names it too
        (("--select", "ALL"), "", "x = new + slow\n"),  # ALL is not an explicit choice
        ((), 'select = ["TP9940", "TP9941"]', "x = new + fast\n"),  # config select counts
    ],
)
def test_speed_fixes_need_an_explicit_choice(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    config: str,
    expected: str,
) -> None:
    monkeypatch.setattr(rules_pkg, "RULES", (Rename, Speedup))
    if config:
        (tmp_path / "pyproject.toml").write_text(f"[tool.torchport]\n{config}\n")
    (tmp_path / "a.py").write_text("x = old + slow\n")
    code, out, _ = run_fix(capsys, *argv, "a.py")
    assert (tmp_path / "a.py").read_text() == expected
    if "slow" in expected:  # the speed finding is reported, not silently dropped
        assert code == 1 and "TP9941" in out and "1 left" in out


def test_plain_fix_applies_no_shipped_speed_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchport.check import RULES, fix_paths
    from torchport.check._select import fixable_rules

    speed = [r for r in RULES if r.intent is Intent.SPEED]
    assert speed and not set(speed) & set(fixable_rules(RULES))
    assert set(speed) <= set(fixable_rules(RULES, speed=True))
    monkeypatch.setattr(rules_pkg, "RULES", RULES)
    path = tmp_path / "t.py"
    path.write_text(  # TP203, a speed rule on by default, with its fix left to --speed --unsafe
        "import torch\nfrom torch.utils.data import DataLoader\n\n"
        'device = torch.device("cuda")\nloader = DataLoader(range(4))\n'
        "for x in loader:\n    x = x.to(device)\n"
    )
    plain = fix_paths([path], stdin=path.read_text(), unsafe=True)  # remaining: fixed text
    assert not any("TP203" in change.fixed for change in plain.changed)
    assert "TP203" in {f.code for f in plain.remaining}  # reported, with its fix left unapplied
    fast = fix_paths([path], diff=True, speed=True, unsafe=True)
    assert "TP203" in fast.changed[0].fixed


class RiskySpeedup(Rename):
    """What it does: test SPEED rule with an unsafe fix: `lazy` -> `eager`."""

    code = "TP9942"
    name = "test-risky-speedup"
    intent = Intent.SPEED

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id == "lazy":
            yield ctx.finding(self, node, fix=Fix((ctx.replace(node, "eager"),), FixSafety.UNSAFE))


_HINT = re.compile(r"(\d+) (?:more|fixable) with `torchport fix((?: --\w+)*)`")
_FLAG_SETS = [
    frozenset(),
    frozenset({"speed"}),
    frozenset({"unsafe"}),
    frozenset({"speed", "unsafe"}),
]


def _applied(flags: frozenset[str]) -> int:
    """How many fixes `fix --diff` with these flags applies to a.py."""
    result = fix_paths(["a.py"], diff=True, unsafe="unsafe" in flags, speed="speed" in flags)
    return sum(sum(change.fixed.values()) for change in result.changed)


def _exactly(flags: frozenset[str], applied: dict[frozenset[str], int]) -> int:
    """Fixes that need exactly ``flags``, from what each command applies (inclusion-exclusion)."""
    return sum((-1) ** len(flags - sub) * n for sub, n in applied.items() if sub <= flags)


@given(st.lists(st.sampled_from(["old", "risky", "slow", "lazy", "stuck", "x"]), min_size=1))
@settings(max_examples=15)
def test_each_hint_names_the_command_that_applies_that_many_more_fixes(
    tmp_path_factory: pytest.TempPathFactory, names: list[str]
) -> None:
    """The oracle is `fix` itself. A fix needing flags F is applied by every command whose
    flags include F, so the fixes needing exactly F number the alternating sum of what the
    commands with F's subsets apply; each hint must give that number for its F."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rules_pkg, "RULES", (Rename, Speedup, RiskySpeedup))
        folder = tmp_path_factory.mktemp("hints")
        patch.chdir(folder)
        (folder / "a.py").write_text("".join(f"v{i} = {n}\n" for i, n in enumerate(names)))
        applied = {flags: _applied(flags) for flags in _FLAG_SETS}
        expected = {
            flags: sum(
                (-1) ** len(flags - sub) * applied[sub] for sub in _FLAG_SETS if sub <= flags
            )
            for flags in _FLAG_SETS
        }
        with contextlib.redirect_stdout(io.StringIO()) as out:
            main(["check", "--no-cache", "a.py"])
        hinted = {frozenset(f.replace("--", "") for f in flags.split()): int(n)
                  for n, flags in _HINT.findall(out.getvalue())}  # fmt: skip
        assert hinted == {flags: n for flags, n in expected.items() if n}, out.getvalue()


def test_after_fix_unsafe_a_speed_fix_that_is_unsafe_is_still_hinted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rules_pkg, "RULES", (Rename, RiskySpeedup))
    (tmp_path / "a.py").write_text("x = lazy\n")
    code, _, err = run_fix(capsys, "--unsafe", "--diff", "a.py")  # the report: on stderr
    assert code == 1 and "1 more with `torchport fix --speed --unsafe`" in err
    assert err.endswith("Would fix 0 findings in 0 files; 1 left.\n")
    assert run_fix(capsys, "--unsafe", "--speed", "a.py")[0] == 0
    assert (tmp_path / "a.py").read_text() == "x = eager\n"


_SELECTIONS = [(), ("--select", "TP9941"), ("--extend-select", "TP994"), ("--select", "ALL")]


@given(
    st.lists(st.sampled_from(["old", "risky", "slow", "lazy", "stuck"]), min_size=1),
    st.sampled_from(_SELECTIONS),
)
@example(["slow", "lazy", "old"], ())
@settings(max_examples=15)
def test_fixable_in_every_format_means_a_plain_fix_with_the_same_selection_applies_it(
    tmp_path_factory: pytest.TempPathFactory, names: list[str], selection: tuple[str, ...]
) -> None:
    """The oracle is `fix --diff` with the same selection: what it fixes, per code."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rules_pkg, "RULES", (Rename, Speedup, RiskySpeedup))
        folder = tmp_path_factory.mktemp("fixable")
        patch.chdir(folder)
        (folder / "a.py").write_text("".join(f"v{i} = {n}\n" for i, n in enumerate(names)))
        select = list(selection[1:]) if selection[:1] == ("--select",) else None
        extend = list(selection[1:]) if selection[:1] == ("--extend-select",) else None
        fixed = fix_paths(["a.py"], diff=True, select=select, extend_select=extend)
        applied = Counter({c: n for change in fixed.changed for c, n in change.fixed.items()})
        with contextlib.redirect_stdout(io.StringIO()) as out:
            main(["check", "--no-cache", "--format", "json", *selection, "a.py"])
        reported = Counter(f["code"] for f in json.loads(out.getvalue()) if f["fixable"])
        assert reported == applied
        with contextlib.redirect_stdout(io.StringIO()) as out:
            main(["check", "--no-cache", "--format", "concise", *selection, "a.py"])
        starred = Counter(line.split()[1] for line in out.getvalue().splitlines() if "[*]" in line)
        assert starred == applied

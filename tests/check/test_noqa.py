"""`# noqa` forms and which lines a comment covers."""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from torchport.check import check_paths, check_source
from torchport.check._context import Context
from torchport.check._engine import RuleSet, check_text
from torchport.check._noqa import parse_noqa
from torchport.check._rule import Finding, Rule


class CallRule(Rule):
    """What it does: test rule reporting every call to `cuda`."""

    code = "TP9980"
    name = "test-noqa-call"
    message = "m"
    node_types = (ast.Call,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if isinstance(node.func, ast.Name) and node.func.id == "cuda":
            yield ctx.finding(self, node)


class OtherRule(Rule):
    """What it does: test rule reporting the name `other`."""

    code = "TP9870"
    name = "test-noqa-other"
    message = "m"
    node_types = (ast.Name,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id == "other":
            yield ctx.finding(self, node)


RULES = RuleSet([CallRule, OtherRule])


def codes(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_text(source, "s.py", RULES).findings]


@pytest.mark.parametrize(
    "comment",
    ["# noqa", "#noqa", "# NOQA", "# noqa: TP9980", "# noqa:TP9980,TP9870", "# noqa: TP99",
     "# noqa: E501, TP9980", "# type: ignore  # noqa: TP9"],
)  # fmt: skip
def test_noqa_forms_that_silence(comment: str) -> None:
    assert codes(f"x = cuda()  {comment}\n") == []


@pytest.mark.parametrize("comment", ["# noqa: E501", "# noqa: TP9870", "# noqa: TP981", "# no qa"])
def test_noqa_forms_that_do_not_silence(comment: str) -> None:
    assert codes(f"x = cuda()  {comment}\n") == [(1, "TP9980")]


def test_only_listed_codes_are_silenced() -> None:
    assert codes("y = cuda(other)  # noqa: TP9870\n") == [(1, "TP9980")]


def test_noqa_inside_a_string_is_not_a_comment() -> None:
    assert codes('x = cuda("# noqa")\n') == [(1, "TP9980")]
    assert codes('s = """\n# noqa\n"""\nx = cuda()\n') == [(4, "TP9980")]


def test_noqa_on_any_line_of_a_simple_statement() -> None:
    source = "x = f(\n    cuda(),\n    1,\n)  # noqa: TP9980\n"
    assert codes(source) == []
    source = "x = f(\n    cuda(),  # noqa\n    1,\n)\n"
    assert codes(source) == []


def test_noqa_does_not_leak_from_a_loop_body_to_its_header() -> None:
    source = "for i in cuda():\n    y = 1  # noqa\n"
    assert codes(source) == [(1, "TP9980")]
    source = "for i in cuda():  # noqa\n    y = cuda()\n"
    assert codes(source) == [(2, "TP9980")]


def test_file_level_noqa() -> None:
    assert codes("# torchport: noqa\nx = cuda(other)\n") == []
    assert codes("# torchport: noqa: TP9980\nx = cuda(other)\n") == [(2, "TP9870")]
    # only on a line of its own; after code it silences nothing
    assert codes("x = cuda(other)  # torchport: noqa\n") == [(1, "TP9980"), (1, "TP9870")]


def test_parse_noqa_map() -> None:
    noqa = parse_noqa("a = 1  # noqa\nb = 2  # noqa: tp1, TP201\nc = 3\n")
    assert noqa.lines == {1: None, 2: frozenset({"TP1", "TP201"})}
    assert noqa.silences("TP101", 2, 2) and noqa.silences("TP999", 1, 1)
    assert not noqa.silences("TP301", 2, 3) and not noqa.silences("TP101", 3, 3)
    assert not parse_noqa("x = 1\n")


def _tokenize_noqa_lines(source: str) -> set[int]:
    """The reference: real comments mentioning noqa, found by the tokenizer."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {t.start[0] for t in tokens if t.type == tokenize.COMMENT and "noqa" in t.string.lower()}


pieces = st.sampled_from(
    [
        "x = 1", "# noqa", "'# noqa'", '"# noqa"', "'''\\n# noqa\\n'''", '"""a\\n\\"# noqa"""',
        "'it\\\\'s # noqa'", "r'\\\\'", "b'#'", "f'{x}#'", "(1,  # noqa\\n 2)", "'\"'", '"\'"',
        "s = '''a ''' # noqa", '"""\\n\\n"""', "# NoQA", "s = '\u0130\u0130'",
        "'''\\n\u0130 # noqa\\n'''",
    ]
)  # fmt: skip


@given(
    st.lists(st.tuples(pieces, st.booleans()), min_size=1, max_size=6),
    st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_comment_scan_agrees_with_tokenize(parts: list[tuple[str, bool]], newline: str) -> None:
    """Whatever line ending the file uses (Python counts all three), on the same lines."""
    source = "".join(
        f"{piece.encode().decode('unicode_escape')}{'  # noqa' if tail else ''}\n"
        for piece, tail in parts
    )
    try:
        ast.parse(source)
    except SyntaxError:
        assume(False)
    expected = _tokenize_noqa_lines(source)  # tokenize reads "\n" lines only
    assert set(parse_noqa(source.replace("\n", newline)).lines) == expected


def test_unknown_tp_codes_are_found_and_other_tools_codes_are_not() -> None:
    from torchport.check._noqa import unknown_codes

    source = (
        "x = 1  # noqa: TP999, E501, TP1\n"
        "# torchport: noqa: TP77\n"
        's = "# noqa: TP888"\n'
        "y = 2  # noqa\n"
    )
    assert unknown_codes(source, ["TP101", "TP202"]) == [(1, "TP999"), (2, "TP77")]


def test_unknown_noqa_code_is_an_error_naming_the_line(tmp_path: Path) -> None:
    from torchport.check import check_paths, fix_paths

    path = tmp_path / "a.py"
    path.write_text("import torch\n\nx = 1  # noqa: TP999\ny = torch.ones(1)  # noqa: TP101\n")
    result = check_paths([path], extend_select=["TP101"])
    assert result.exit_code == 2 and len(result.errors) == 1
    error = result.errors[0]
    assert error.path == str(path) and error.message.startswith("line 3: `# noqa` names TP999")
    assert "remove it" in error.message
    assert fix_paths([path]).exit_code == 2


# --- noqa codes that silence nothing ---------------------------------------------------


def _unused(source: str, ran: tuple[str, ...] = ("TP101", "TP905", "TP201")) -> list[str]:
    from torchport.check._engine import RuleSet, check_text
    from torchport.check._select import available_rules

    rules = RuleSet(r for r in available_rules() if r.code in ran)
    noqa = check_text(source, "t.py", rules).noqa
    assert noqa is not None
    return [f"{line}:{code}" for line, _, code in noqa.unused(ran)]


def test_a_noqa_code_that_silences_nothing_is_named() -> None:
    source = (
        "import torch\n"
        "x = torch.zeros(3).cuda()  # noqa: TP101, TP905\n"  # both used
        "y = 1  # noqa: TP101\n"  # nothing there
        "z = torch.ones(2).cuda()  # noqa: TP1, TP201, E501\n"  # TP1 used; TP201 not
        "w = 2  # noqa: TP999, TP3\n"  # no rule that ran matches: not judged
        "v = 3  # noqa\n"  # blanket: other tools read it too
    )
    assert _unused(source) == ["3:TP101", "4:TP201"]


def test_a_noqa_on_a_statement_line_counts_for_its_findings() -> None:
    source = "import torch\nx = torch.zeros(\n    3\n).cuda()  # noqa: TP101, TP905\n"
    assert _unused(source) == []


def test_unused_noqa_reaches_the_report(tmp_path: Path) -> None:
    from torchport.check import check_paths

    path = tmp_path / "t.py"
    path.write_text("import torch\ny = 1  # noqa: TP101\n")
    result = check_paths([path], extend_select=["TP101"])
    assert result.findings == []
    (unused,) = result.unused_noqa
    assert (unused.code, unused.line, unused.col) == ("TP000", 2, 8)
    assert "remove TP101" in unused.message


# ---------------------------------------------------------------- other tools' file-wide noqa

_BODY = "import torch\nx = torch.zeros(3).cuda()\n"


@pytest.mark.parametrize(
    ("header", "silenced"),
    [
        ("# ruff: noqa", True),
        ("#ruff:noqa", True),
        ("# RUFF: NOQA", True),
        ("# flake8: noqa", True),
        ("# ruff: noqa: TP1", True),
        ("# ruff: noqa: E501", False),  # Ruff's own codes: nothing of ours
        ("# flake8: noqa: TP101", False),  # flake8 ignores the form with codes; so do we
        ("x = 1  # ruff: noqa", False),  # a file exemption stands on a line of its own
        ('s = "# ruff: noqa"', False),
    ],
)
def test_other_tools_file_exemptions_count(header: str, silenced: bool) -> None:
    source = f"{header}\n{_BODY}"
    codes = {f.code for f in check_source(source, extend_select=["TP101"])}
    assert ("TP101" not in codes) is silenced, codes


@pytest.mark.parametrize("header", ["# ruff: noqa", "# flake8: noqa", "# ruff: noqa: TP101"])
def test_respect_foreign_noqa_false_turns_them_off(tmp_path: Path, header: str) -> None:
    (tmp_path / "gen.py").write_text(f"{header}\n{_BODY}")
    assert "TP101" not in {
        f.code for f in check_paths([tmp_path / "gen.py"], extend_select=["TP101"]).findings
    }
    (tmp_path / "pyproject.toml").write_text("[tool.torchport]\nrespect-foreign-noqa = false\n")
    assert "TP101" in {
        f.code for f in check_paths([tmp_path / "gen.py"], extend_select=["TP101"]).findings
    }
    (tmp_path / "own.py").write_text(f"# torchport: noqa\n{_BODY}")  # ours always counts
    assert not check_paths([tmp_path / "own.py"], extend_select=["TP101"]).findings

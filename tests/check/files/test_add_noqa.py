"""`--add-noqa`: every finding silenced, the program unchanged, or the file left alone.

The oracle is Python's own parser: comments do not reach the syntax tree, so the
marked file must parse to the same tree as before, and a check with the same
rules must find nothing in it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport.check.rules as rules_pkg
from torchport.check import add_noqa_paths, check_paths
from torchport.check._context import Context
from torchport.check._noqa import add_noqa_comments
from torchport.check._rule import Finding, Rule


class Flag(Rule):
    """What it does: test rule flagging the names `flag` and `other`.

    Why is this bad? It is a test.
    """

    code = "TP9920"
    name = "test-noqa-flag"
    message = "rename it"
    node_types = (ast.Name,)

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Name)
        if node.id in ("flag", "other"):
            yield ctx.finding(self, node)


@pytest.fixture(autouse=True)
def with_test_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules_pkg, "RULES", (Flag,))


# Statements a real file holds around findings: comments, strings over several
# lines (with a finding on their last line, or not), continuations, calls split over lines.
_STATEMENTS = st.sampled_from(
    [
        "x = flag\n",
        "y = flag + other  # keep this note\n",
        "z = other  # noqa: E501\n",
        's = """text\nmore"""; w = flag\n',
        "t = (flag,\n     other)\n",
        "u = 1 + \\\n    flag\n",
        "v = f'{flag}'\n",
        "if flag:\n    pass\n",
        "def f(a=flag):\n    return other\n",
        "plain = 1\n",
        "# a comment with flag in it\n",
    ]
)


@settings(max_examples=40)
@given(st.lists(_STATEMENTS, min_size=1, max_size=8), st.sampled_from(["\n", "\r\n"]))
def test_marked_files_parse_to_the_same_tree_and_check_clean(
    tmp_path_factory: pytest.TempPathFactory, statements: list[str], newline: str
) -> None:
    folder = tmp_path_factory.mktemp("noqa")
    path = folder / "m.py"
    source = "".join(statements).replace("\n", newline)
    path.write_bytes(source.encode())
    result = add_noqa_paths([path])
    marked = path.read_bytes().decode()
    assert ast.dump(ast.parse(marked)) == ast.dump(ast.parse(source))
    if result.errors:  # a line that cannot hold a comment: the file is left as it was
        assert marked == source
        return
    assert check_paths([path]).findings == []
    assert marked.count("\r\n") == source.count("\r\n")  # line endings kept
    assert add_noqa_paths([path]).added == {}  # nothing left to add


def test_comments_join_what_is_there(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a = flag  # why\nb = other  # noqa: E501\nc = flag  # noqa\n")
    assert add_noqa_paths([path]).added == {str(path): 2}
    assert path.read_text() == (
        "a = flag  # noqa: TP9920  # why\nb = other  # noqa: E501, TP9920\nc = flag  # noqa\n"
    )


def test_a_finding_inside_a_multiline_string_leaves_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    source = 'x = f"""\n{flag}\n"""\n'
    path.write_text(source)
    result = add_noqa_paths([path])
    assert result.exit_code == 2 and "line 2 cannot hold a comment" in result.errors[0].message
    assert path.read_text() == source


def test_the_text_function_reports_lines_it_cannot_mark() -> None:
    marked, refused = add_noqa_comments('s = """a\nb"""\n', {1: {"TP1"}, 2: {"TP2"}})
    assert refused == {1} and marked == 's = """a\nb"""  # noqa: TP2\n'

"""`--add-noqa`: every finding silenced or named, the program unchanged.

The oracle is Python's own parser: comments do not reach the syntax tree, so the
marked file must parse to the same tree as before (type comments included, as
type checkers read them), and a check with the same rules must find nothing in
it but the lines the errors name.
"""

from __future__ import annotations

import ast
import json
import re
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
        "u2 = flag \\\n    + 1\n",
        "ti = flag  # type: ignore[attr-defined]\n",
        "tc = flag  # type: int\n",
        'r = flag; """doc\n"""\n',
        "g = call(\n    flag,\n    '''x\ny''')\n",
        "h = '''a\n''' + flag\n",
        "v = f'{flag}'\n",
        "if flag:\n    pass\n",
        "def f(a=flag):\n    return other\n",
        "plain = 1\n",
        "# a comment with flag in it\n",
    ]
)


def _types(text: str) -> list[str]:
    """The type comments and type-ignore codes as mypy reads them (a trailing `# note` cut)."""
    tree = ast.parse(text, type_comments=True)
    found = [f"{t.lineno}:{t.tag.split('#')[0].strip()}" for t in tree.type_ignores]
    for node in ast.walk(tree):
        comment = getattr(node, "type_comment", None)
        if comment:
            found.append(f"{node.lineno}:{comment.split('#')[0].strip()}")
    return sorted(found)


@settings(max_examples=40)
@given(st.lists(_STATEMENTS, min_size=1, max_size=8), st.sampled_from(["\n", "\r\n", "\r"]))
def test_marked_files_parse_to_the_same_tree_and_check_clean(
    tmp_path_factory: pytest.TempPathFactory, statements: list[str], newline: str
) -> None:
    folder = tmp_path_factory.mktemp("noqa")
    path = folder / "m.py"
    source = "".join(statements).replace("\n", newline)
    path.write_bytes(source.encode())
    found = check_paths([path]).findings
    result = add_noqa_paths([path])
    marked = path.read_bytes().decode()
    assert ast.dump(ast.parse(marked)) == ast.dump(ast.parse(source))
    assert _types(marked) == _types(source)
    assert (marked.count("\r\n"), marked.count("\r")) == (source.count("\r\n"), source.count("\r"))
    left = check_paths([path]).findings
    # What is left is what the errors name; everything else is silenced.
    named = {int(n) for e in result.errors for n in re.findall(r"\d+", e.message.split(":")[0])}
    assert {f.line for f in left} <= named
    assert sum(result.added.values()) + len(left) == len(found)
    if not result.errors:
        assert left == []
        assert add_noqa_paths([path]).added == {}  # nothing left to add


def test_comments_join_what_is_there(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a = flag  # why\nb = other  # noqa: E501\nc = flag  # noqa\n")
    assert add_noqa_paths([path]).added == {str(path): 2}
    assert path.read_text() == (
        "a = flag  # noqa: TP9920  # why\nb = other  # noqa: E501, TP9920\nc = flag  # noqa\n"
    )


def test_a_finding_inside_a_multiline_string_is_marked_where_the_statement_ends(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.py"
    path.write_text('x = f"""\n{flag}\n"""\ny = (flag +\n  1) \\\n  + 2\n')
    assert add_noqa_paths([path]).added == {str(path): 2}
    assert path.read_text() == (
        'x = f"""\n{flag}\n"""  # noqa: TP9920\ny = (flag +  # noqa: TP9920\n  1) \\\n  + 2\n'
    )
    assert check_paths([path]).findings == []


def test_a_line_no_comment_can_reach_is_named_and_the_rest_still_marked(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text('a = flag\nb = flag; """\n"""\nc = other\n')
    result = add_noqa_paths([path])
    assert result.exit_code == 2 and result.added == {str(path): 2}
    assert result.errors[0].message.startswith("line 2: no `# noqa` comment can silence TP9920")
    assert path.read_text() == (
        'a = flag  # noqa: TP9920\nb = flag; """\n"""\nc = other  # noqa: TP9920\n'
    )
    assert [f.line for f in check_paths([path]).findings] == [2]


def test_type_comments_stay_first_where_type_checkers_read_them(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    source = "a = flag  # type: ignore[misc]\nb = flag  # type: int\nc = flag  # why\n"
    path.write_text(source)
    assert add_noqa_paths([path]).added == {str(path): 3}
    assert path.read_text() == (
        "a = flag  # type: ignore[misc]  # noqa: TP9920\n"
        "b = flag  # type: int  # noqa: TP9920\n"
        "c = flag  # noqa: TP9920  # why\n"
    )
    assert _types(path.read_text()) == _types(source) == ["1:[misc]", "2:int"]


def test_notebook_cells_are_marked_as_fix_writes_them(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["flag\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["%matplotlib inline\n", "x = flag\n", "y = 1"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["z = other"]},
    ]  # fmt: skip
    data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(data, indent=1) + "\n")
    assert add_noqa_paths([path]).added == {str(path): 2}
    written = json.loads(path.read_text())
    assert written["cells"][1]["source"] == [
        "%matplotlib inline\n", "x = flag  # noqa: TP9920\n", "y = 1",
    ]  # fmt: skip
    assert written["cells"][2]["source"] == ["z = other  # noqa: TP9920"]
    assert written["cells"][0] == cells[0]
    assert check_paths([path]).findings == []


def test_the_text_function_reports_lines_it_cannot_mark() -> None:
    marked, refused = add_noqa_comments('s = """a\nb"""\n', {1: {"TP1"}, 2: {"TP2"}})
    assert refused == {1} and marked == 's = """a\nb"""  # noqa: TP2\n'
    marked, _ = add_noqa_comments("t = 1  # type: ignore  # noqa: E501\n", {1: {"TP1"}})
    assert marked == "t = 1  # type: ignore  # noqa: E501, TP1\n"


def test_a_notebook_cell_that_does_not_parse_is_named_and_the_others_marked(
    tmp_path: Path,
) -> None:
    def cell(*lines: str) -> dict[str, object]:
        return {"cell_type": "code", "metadata": {}, "outputs": [], "source": list(lines)}

    data = {
        "cells": [cell("x = flag\n"), cell("def broken(:\n"), cell("y = other")],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(data, indent=1) + "\n")
    result = add_noqa_paths([path])
    assert result.added == {str(path): 2} and result.exit_code == 2
    assert [e.message.split(":")[0] for e in result.errors] == ["cell 2 not marked"]
    assert [c["source"] for c in json.loads(path.read_text())["cells"]] == [
        ["x = flag  # noqa: TP9920\n"], ["def broken(:\n"], ["y = other  # noqa: TP9920"],
    ]  # fmt: skip
    assert check_paths([path]).findings == []

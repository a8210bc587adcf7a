"""A file parsed a piece at a time gives ``ast.parse``'s tree, positions and errors.

The oracle is ``ast.parse`` of the whole text. Generated files join top-level
statements drawn from kinds that make a cut at column 0 wrong: decorators, ``if`` /
``else``, ``try`` / ``except`` / ``finally``, ``for`` / ``else``, strings and brackets
whose lines start at column 0, backslash continuations, f-strings, comments, blank
lines, non-ASCII text; some with a syntax error. Every tree must dump the same with
positions; every error must be the same error at the same line and offset. The real
largest files of this package, parsed in small pieces, are the second oracle.
"""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._chunked_parse import CHUNKED_FROM, _pieces, parse_in_pieces

STATEMENTS = (
    "x = torch.ones(1).cuda()\n",
    "@decorator\ndef f(a, b=1):\n    return a + b\n",
    "@a.b(c)\n\n# between\n@d\nclass C(Base):\n    y: int = 0\n",
    "if x:\n    pass\nelif y:\n    pass\nelse:\n    z = 1\n",
    "try:\n    go()\nexcept* ValueError:\n    pass\n",
    "try:\n    go()\nexcept OSError as e:\n    raise\nfinally:\n    done()\n",
    "for i in range(3):\n    pass\nelse:\n    out = i\n",
    's = """\nx = 1\ndef g(): pass\n"""\n',
    "t = (1,\n2,\n3)\n",
    "u = [\n]\n",
    "v = 1 + \\\n2\n",
    'w = f"{x!r:>{width}} {y=}"\n',
    "# a comment at column 0\n",
    "\n\n",
    'name = "é ü 中"  # non-ASCII\n',
    "async def h():\n    async with a as b:\n        await b\n",
    "match p:\n    case [1, *rest]:\n        pass\n    case _:\n        pass\n",
    "lambda_ = lambda q: (q,\nq)\n",
)
BROKEN = ("def broken(:\n    pass\n", "z = (1,\n", 'q = """never closed\n', "  indented = 1\n")


def same(source: str, piece: int) -> None:
    try:
        expected = ast.dump(ast.parse(source), include_attributes=True)
    except SyntaxError as whole:
        try:
            parse_in_pieces(source, chunked_from=0, piece=piece)
        except SyntaxError as pieces:
            assert (pieces.msg, pieces.lineno, pieces.offset) == (
                whole.msg,
                whole.lineno,
                whole.offset,
            ), source
            return
        raise AssertionError(f"parsed in pieces, not whole:\n{source}") from None
    got = parse_in_pieces(source, chunked_from=0, piece=piece)
    assert ast.dump(got, include_attributes=True) == expected, source


@given(
    parts=st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=12),
    broken=st.sampled_from(("", *BROKEN)),
    where=st.integers(min_value=0, max_value=12),
    piece=st.sampled_from([1, 20, 60, 200]),
)
def test_the_tree_and_the_errors_are_ast_parse_s(
    parts: list[str], broken: str, where: int, piece: int
) -> None:
    if broken:
        parts = [*parts[:where], broken, *parts[where:]]
    same("".join(parts), piece)


def test_the_pieces_are_used_and_join_to_the_same_tree() -> None:
    source = "".join(STATEMENTS) * 20
    body = _pieces(source, "<test>", 300)
    assert body is not None  # cut, not parsed whole
    whole = ast.parse(source)
    assert ast.dump(ast.Module(body=body, type_ignores=[]), include_attributes=True) == (
        ast.dump(whole, include_attributes=True)
    )


def test_this_repository_s_files_parse_the_same_in_small_pieces() -> None:
    root = Path(__file__).resolve().parents[2] / "src" / "torchport"
    largest = sorted(root.rglob("*.py"), key=lambda p: p.stat().st_size)[-4:]
    for path in largest:  # the most statements of every kind, at a cost the suite can take
        same(path.read_text(encoding="utf-8"), 2000)


def test_the_syntax_reader_hands_large_files_to_it_at_its_threshold() -> None:
    from torchport.check import _syntax

    assert _syntax._PIECES_FROM == CHUNKED_FROM

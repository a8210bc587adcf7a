"""The text prefilter never drops a finding: oracles apart from it, on generated sources.

Two oracles. The parsed tree itself: when any string constant or identifier of the
tree holds a word, :func:`may_hold` must say the text may hold it (it may say so
needlessly, never the other way). And the findings: every rule's, with and without
the prefilter, on sources that build the word every way Python allows without
writing it (split literals, escapes, backslash-newlines, NFKC identifiers).
"""

from __future__ import annotations

import ast
import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for
from torchport.check._prefilter import NEEDS, absent_rules, may_hold

WORDS = sorted(set(NEEDS.values()))
ALL = ruleset_for(["ALL"], None)


def strings_in_tree(tree: ast.AST) -> list[str]:
    """Every str the tree holds: constants (f-string parts too) and identifiers."""
    found: list[str] = []
    for node in ast.walk(tree):
        for _, value in ast.iter_fields(node):
            values = value if isinstance(value, list) else [value]
            found += [v for v in values if isinstance(v, str)]
    return found


def _escape(char: str, how: int) -> str:
    code = ord(char)
    return [
        f"\\x{code:02x}",
        f"\\u{code:04x}",
        f"\\U{code:08x}",
        f"\\{code:o}",
        f"\\N{{{unicodedata.name(char)}}}",
    ][how]


# what may stand between two pieces of a split literal: comments (a banner of `#`, a quote
# inside one), line breaks, a backslash-newline
GAPS = [" ", "", "\n    ", " # c\n    ", " \\\n    ", " ####\n    # '\n    ", ' #"x"\n    ']


@st.composite
def literals(draw: st.DrawFn) -> str:
    """A string expression whose value holds ``cuda`` (or a near miss), written every way."""
    cuda = ["cuda", "cuda:", "cuda:0", "cuda:{}", "cuda:%d", "cud", "cu"]
    env = ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOA", "TORCH_"]
    tf32 = ["allow_tf32", "allow_tf3", "a"]
    word = draw(st.sampled_from([*cuda, "weights_only", "weights_", "weights_onl", *env, *tf32]))
    quote = draw(st.sampled_from(['"', "'", '"""', "'''"]))
    prefix = draw(st.sampled_from(["", "r", "u", "f", "R", "F"]))
    how = draw(st.integers(0, 3))
    if how == 0 and len(word) > 1:  # implicit concatenation, split anywhere
        cut = draw(st.integers(1, len(word) - 1))
        gap = draw(st.sampled_from(GAPS))
        second = draw(st.sampled_from(["", "r", "u", "f"]))
        left, right = word[:cut], word[cut:]
        if prefix in ("f", "F"):
            left = left.replace("{", "{{").replace("}", "}}")
        if second == "f":
            right = right.replace("{", "{{").replace("}", "}}")
        return f"({prefix}{quote}{left}{quote}{gap}{second}{quote}{right}{quote})"
    if how == 1 and prefix not in ("r", "R"):  # one letter escaped
        at = draw(st.integers(0, min(3, len(word) - 1)))
        kind = draw(st.integers(0, 4))
        body = word[:at] + _escape(word[at], kind) + word[at + 1 :]
        if prefix in ("f", "F"):
            prefix = ""  # braces and \N{...} mean other things in an f-string: keep it plain
        return f"{prefix}{quote}{body}{quote}"
    if how == 2 and prefix not in ("r", "R") and len(word) > 1:  # a backslash-newline inside
        cut = draw(st.integers(1, len(word) - 1))
        return f"{quote}{word[:cut]}\\\n{word[cut:]}{quote}"
    if prefix in ("f", "F"):
        return f"{prefix}{quote}{word.replace('{}', '{i}')}{quote}"
    return f"{prefix}{quote}{word}{quote}"


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if c.isalpha() else c for c in text)


@st.composite
def programs(draw: st.DrawFn) -> str:
    lit = draw(literals())
    method = draw(st.sampled_from(["cuda", "cpu", _fullwidth("cuda"), "c" + _fullwidth("uda")]))
    tf32 = draw(st.sampled_from(["allow_tf32", "allow_tf3", _fullwidth("allow") + "_tf32"]))
    lines = draw(
        st.lists(
            st.sampled_from(
                [
                    f"x = x.to({lit})",
                    f"d = torch.device({lit})",
                    f"device = {lit}",
                    f"dev: str = {lit}",
                    f"def f(device={lit}):\n    pass",
                    f"a = torch.autocast(device_type={lit})",
                    f"b = {lit}.format(i)",
                    f"c = {lit} % i",
                    f"e = {lit} + str(i)",
                    f"y = x.{method}()",
                    f"m = model.to(device={lit})",
                    f"s = torch.load(f, **{{{lit}: False}})",
                    f"kw = {{{lit}: 0}}\nt = torch.load(f, **kw)",
                    "u = torch.load(f, weights_only=False)",
                    "v = torch.load(f, weights_only=0)",
                    f'os.environ[{lit}] = "1"',
                    f'os.environ.setdefault({lit}, "yes")',
                    f'os.environ.update({{{lit}: "1"}})',
                    f"torch.backends.cuda.matmul.{tf32} = True",
                    "z = torch.ones(3)",
                    'name = " ".join(parts)',
                ]
            ),
            min_size=1,
            max_size=4,
        )
    )
    return "import os\nimport torch\n\n" + "\n".join(lines) + "\n"


def _parses(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


@given(programs())
def test_a_word_in_the_tree_is_never_ruled_out_by_the_text(source: str) -> None:
    tree = _parses(source)
    if tree is None:
        return
    held = strings_in_tree(tree)
    for word in WORDS:
        if any(word in s for s in held):
            assert may_hold(source, word), source


@given(programs())
def test_the_prefilter_drops_no_finding(source: str) -> None:
    if _parses(source) is None:
        return
    with_it = check_text(source, "x.py", ALL, strict=True).findings
    without = check_text(source, "x.py", ALL, strict=True, prefilter=False).findings
    assert with_it == without, source


@given(
    word=st.sampled_from(WORDS),
    cut=st.integers(1, 40),
    banner=st.integers(1, 300),
    quote=st.sampled_from(['"', "'"]),
    then=st.sampled_from(["", 'x = "da"\n', "y = 1\n", '"a" "b"\n']),
)
def test_a_banner_comment_after_a_literal_is_read_in_one_pass(
    word: str, cut: int, banner: int, quote: str, then: str
) -> None:
    """A literal ending in a proper prefix of a word, then a comment of many `#` (a banner):
    the answer must not depend on how the comment could be split (the pattern read it in
    2^(n-1) ways before; a 42-`#` banner hung `check`: pytest-timeout fails this test then)."""
    left = word[: min(cut, len(word) - 1)]
    source = f"s = ({quote}{left}{quote}  {'#' * banner}\n    )\n{then}"
    tree = _parses(source)
    assert tree is not None, source
    held = any(word in s for s in strings_in_tree(tree))
    assert may_hold(source, word) or not held, source
    assert absent_rules(source, NEEDS) == frozenset(
        code for code, needed in NEEDS.items() if not may_hold(source, needed)
    )


def test_hidden_spellings_keep_the_rules() -> None:
    hidden = [
        'x.to("cu" "da")',
        'x.to("cu"\n      "da")',
        'x.to("cu"  # note\n "da")',
        'x.to("\\x63uda")',
        'x.to("\\143uda")',
        'x.to("\\N{LATIN SMALL LETTER C}uda")',
        'x.to("cu\\\nda")',
        "x.ｃｕｄａ()",  # noqa: RUF001  (NFKC: the name is `cuda`)
        'x.to(f"cu" "da")',
        "x.to('''cu''' '''da''')",
    ]
    for line in hidden:
        source = f"import torch\n{line}\n"
        assert "cuda" in "".join(strings_in_tree(ast.parse(source))), line
        assert may_hold(source, "cuda"), line
        assert not absent_rules(source, {c for c, w in NEEDS.items() if w == "cuda"}), line


def test_files_without_the_word_skip_its_rules() -> None:
    # the prefilter does something: otherwise the tests above hold trivially
    source = 'import torch\n\nname = " ".join(["a", "b"])\nx = torch.ones(3).to(dev)\n'
    assert not may_hold(source, "cuda")
    codes = {"TP101", "TP113", "TP115", "TP102", "TP302", "TP306", "TP407"}
    assert absent_rules(source, codes) == codes - {"TP102"}


def test_hidden_weights_only_keeps_its_rule() -> None:
    hidden = [
        'torch.load(f, **{"weights" "_only": False})',
        'torch.load(f, **{"weights_"\n    "only": False})',
        'torch.load(f, **{"weights\\x5fonly": False})',
        'torch.load(f, **{"weights_\\\nonly": False})',
    ]
    for line in hidden:
        source = f"import torch\n{line}\n"
        tree = ast.parse(source)
        assert "weights_only" in "".join(strings_in_tree(tree)), line
        assert "TP302" not in absent_rules(source, {"TP302"}), line
        found = check_text(source, "x.py", ALL, strict=True).findings
        assert [f.code for f in found if f.code == "TP302"] == ["TP302"], line


def test_a_hidden_environment_variable_keeps_its_rule() -> None:
    hidden = [
        'os.environ["TORCH_FORCE_NO_" "WEIGHTS_ONLY_LOAD"] = "1"',
        'os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_\\x4cOAD"] = "1"',
        'os.environ.update({"TORCH_FORCE_NO_WEIGHTS_"\n    "ONLY_LOAD": "1"})',
    ]
    for line in hidden:
        source = f"import os\n{line}\n"
        assert "TP306" not in absent_rules(source, {"TP306"}), line
        found = check_text(source, "x.py", ALL, strict=True).findings
        assert [f.code for f in found] == ["TP306"], line


def test_every_example_of_a_prefiltered_rule_holds_its_word() -> None:
    # A rule taught to report without its word (a value followed across files, say)
    # must leave NEEDS: its own examples would show it here.
    from torchport.check._catalog import real_rule, shipped_rule

    for code, word in NEEDS.items():
        stand_in = shipped_rule(code)
        assert stand_in is not None, code
        for example in real_rule(stand_in).invalid:
            assert may_hold(example.source, word), (code, example.source)
            found = check_text(example.source, "x.py", ALL, strict=True).findings
            assert any(f.code == code for f in found), (code, example.source)


@given(programs())
def test_absent_rules_are_those_whose_word_may_not_be_held(source: str) -> None:
    # absent_rules scans the text once for all words: the answer of may_hold word by word
    expected = {code for code, word in NEEDS.items() if not may_hold(source, word)}
    assert absent_rules(source, NEEDS) == expected, source


class _Codes(frozenset[str]):
    """A rule set's codes that refuse to be walked: membership only."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("absent_rules walked every selected code")


def test_absent_rules_asks_only_the_codes_it_knows() -> None:
    # once per file over a rule set of ~60 codes: the prefilter asks its few codes
    # (NEEDS) of the set, the same answer as walking the set
    source = 'import torch\n\nx = torch.ones(3).to(dev)\nos.environ["A"] = "1"\n'
    codes = {"TP101", "TP113", "TP115", "TP102", "TP302", "TP306", "TP407", "TP999"}
    expected = frozenset(c for c in codes if c in NEEDS)
    assert absent_rules(source, _Codes(codes)) == expected
    assert absent_rules(source, codes) == expected
    assert absent_rules('x = "cuda"\n', _Codes(codes)) == expected - {"TP101", "TP113", "TP115"}


def _split_by_word(word: str) -> re.Pattern[str]:
    """The oracle: a proper prefix of ``word`` ending a literal another literal follows,
    written for this one word (the prefilter's own pattern serves every word)."""
    prefixes = "|".join(re.escape(word[:size]) for size in range(1, len(word)))
    gap = r"(?:\s|#[^\r\n]*+|\\\r?\n)*+"
    return re.compile(rf"(?:{prefixes})[\"']{gap}[rRbBuUfF]{{0,2}}[\"']")


def test_the_words_are_ascii_identifiers() -> None:
    # what _prefilter._split_after relies on: a prefix's last character is a word character
    for word in WORDS:
        assert word.isascii() and word.isidentifier(), word


# text of the characters that matter to a split: quotes, string prefixes, gaps (spaces, line
# breaks, comments, backslash-newlines), other punctuation, and the words' prefixes (their
# first letters, halves and longest proper prefixes)
_PREFIXES = sorted({w[:k] for w in WORDS for k in (1, 2, len(w) // 2, len(w) - 1) if k > 0})
_PIECES = st.sampled_from(
    ['"', "'", '"""', "r", "f", "b", "u", "R", " ", "\n", "\\\n", "\\", "#", "# c\n", "(",
     ")", ",", "=", "x", "_", "1", "da", "LOA", *_PREFIXES]
)  # fmt: skip


@given(st.lists(_PIECES, max_size=30).map("".join))
def test_one_split_pattern_answers_as_a_pattern_per_word(source: str) -> None:
    # may_hold on ASCII text without the word and without an escape (a backslash-newline is
    # one) is the split test alone
    for word in WORDS:
        if word in source or re.search(r"\\[xuUN0-7\r\n]", source):
            continue
        assert may_hold(source, word) == bool(_split_by_word(word).search(source)), (
            word,
            source,
        )


def test_every_proper_prefix_before_another_literal_is_a_split() -> None:
    # each prefix length, each gap, each string prefix of the next literal: the text may
    # hold the word; with a letter after the prefix or before it, as the oracle answers
    for word in WORDS:
        for size in range(1, len(word)):
            for gap in ["", " ", "\n    ", " # c\n    ", " ####\n    # '\n    "]:
                for then in ['"z"', "'z'", 'f"z"', 'rb"z"', '"""z"""']:
                    source = f'x = ("{word[:size]}"{gap}{then})\n'
                    assert may_hold(source, word), source
                    for near in (
                        f'x = ("{word[:size]}q"{gap}{then})\n',
                        source.replace('"', '"q', 1),
                    ):
                        expected = bool(_split_by_word(word).search(near))
                        assert may_hold(near, word) == expected, near

"""The argparse-free reading of ``check [FLAG...] [PATH...]`` equals argparse's.

The oracle is argparse itself, given the parser ``torchport`` builds: on generated
command lines (check's flags, abbreviations, options with values, ``-``, ``--``,
empty words, flags after paths, other subcommands), wherever the plain reader
answers, argparse must accept the same line with nothing left over and give the
same namespace, value for value (defaults, lists and the handler included).
"""

from __future__ import annotations

import contextlib
import io

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.cli._main import build_parser
from torchport.cli._plain_check import FLAGS, plain_check

OTHER_WORDS = [
    "--no-c", "--stat", "--quiet=1", "-qq", "-qj2", "--select", "ALL", "TP101,TP2", "--format",
    "json", "-j", "2", "--jobs=2", "-o", "out.txt", "--ignore", "--extend-select", "--exclude",
    "--config", "--target-torch", "2.4", "--explain", "--cache-dir", "--help", "-h", "--version",
    "--unsafe", "--speed", "--bogus", "-", "--", "", "-1", "-x", "check", "fix", "port", "rule",
    "--jobs", "-j", "1", "0", "03", "12", "\u0663", "1_0", " 2", "-j3", "--jobs=1", "--job",
]  # fmt: skip
PATHS = ["a.py", "dir/", ".", "x y.py", "sub/nb.ipynb", "check", "fix", "ä.py", "a=b.py", "@args"]
WORD = st.sampled_from([*FLAGS, *OTHER_WORDS, *PATHS])


def _argparse(argv: list[str]) -> tuple[dict[str, object], list[str]] | None:
    """argparse's namespace and left-over words, or None where it exits (an error, help)."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            args, unknown = build_parser(argv).parse_known_args(argv)
        except SystemExit:
            return None
    return vars(args), unknown


def _agree(argv: list[str]) -> bool:
    """Whether the plain reader answered (then it must agree with argparse)."""
    plain = plain_check(argv)
    if plain is None:
        return False
    parsed = _argparse(argv)
    assert parsed is not None, argv  # argparse refused a line the plain reader took
    namespace, unknown = parsed
    assert unknown == [], argv
    assert vars(plain) == namespace, argv
    return True


@given(
    st.sampled_from([["check"], ["check"], ["fix"], []]),
    st.lists(st.sampled_from(sorted(FLAGS)), max_size=4),
    st.lists(st.sampled_from(PATHS), max_size=3),
    st.lists(WORD, max_size=3),
    st.integers(min_value=0, max_value=8),
)
@example(["check"], [], ["a.py"], [], 0)
@example(["check"], ["--no-cache"], ["tiny.py"], [], 0)
@example(["check"], [], [], [], 0)
def test_plain_reading_equals_argparse(
    head: list[str], flags: list[str], paths: list[str], noise: list[str], at: int
) -> None:
    argv = [*head, *flags, *paths]
    at = min(at, len(argv))
    _agree(argv)
    _agree([*argv[:at], *noise, *argv[at:]])  # any word anywhere: answered only if plain


@given(st.lists(WORD, max_size=6))
def test_any_word_list_is_answered_only_as_argparse_reads_it(words: list[str]) -> None:
    _agree(["check", *words])
    _agree(words)


def test_the_plain_reader_takes_the_lines_it_is_for() -> None:
    # not vacuous: these are read without argparse, and agree
    for argv in (
        ["check"],
        ["check", "a.py"],
        ["check", "--no-cache", "tiny.py"],
        ["check", "-q", "--statistics", "--exit-zero", "src", "tests"],
        [*["check"], *FLAGS],
        ["check", "--no-cache", "--exit-zero", "-q", "-j", "1", "tree"],  # the benchmarks'
        ["check", "--jobs", "4", "-q", "-j", "02", "a.py"],
    ):
        assert _agree(argv), argv
    for argv in (
        ["check", "a.py", "--no-cache"], ["check", "-"], ["check", "--select", "ALL"],
        ["check", "-j", "0", "a.py"], ["check", "-j2", "a.py"], ["check", "-j"],
        ["check", "--jobs=2"], ["check", "-j", "\u0663"], ["check", "a.py", "-j", "2"],
    ):  # fmt: skip
        assert plain_check(argv) is None, argv


def test_every_on_off_flag_of_check_is_known() -> None:
    # a store_true flag added to `check` without a place here would make the plain
    # reader refuse lines it could take; an option with a value must not be in FLAGS
    parser = build_parser(["check"])
    sub = next(a for a in parser._actions if a.dest == "subcommand")
    check = sub.choices["check"]  # type: ignore[attr-defined]
    on_off = {
        option: action.dest
        for action in check._actions
        if type(action).__name__ == "_StoreTrueAction"
        for option in action.option_strings
    }
    assert on_off == FLAGS

"""The page runner's output match: exact lines, and ``...`` inside a line for any text."""

from __future__ import annotations

import page_blocks as pages
from hypothesis import assume, given
from hypothesis import strategies as st

TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)


@given(line=TEXT)
def test_a_line_without_dots_matches_only_itself(line: str) -> None:
    if "..." not in line:
        assert pages.shows(line, line)
        assert not pages.shows(line, line + "x")
        assert not pages.shows(line + "x", line)


@given(head=TEXT, middle=TEXT, tail=TEXT)
def test_dots_inside_a_line_stand_for_any_text_and_the_rest_must_match(
    head: str, middle: str, tail: str
) -> None:
    # A dot next to the three is ambiguous in the notation itself ("...." may be "." then
    # "..." or the other way): pages write none, and the matcher need not guess.
    assume(not head.endswith(".") and not tail.startswith("."))
    assert pages.shows(f"{head}...{tail}", f"{head}{middle}{tail}")
    if "..." not in head + tail and not (head + middle + tail).startswith(head + "Z"):
        assert not pages.shows(f"{head}Z...{tail}", f"{head}{middle}{tail}")

"""Where a move runs inside a comprehension that Python runs inline in its caller's frame
(PEP 709, Python 3.12 and later), the comprehension's span stands for the frame its names
had before: :func:`torchport.diagnose._move_alias.inlined_scope`.

Oracle: the span is read from the source line's text (its brackets), and whether the
comprehension is inlined from the running Python's version, not from the syntax tree the
code under test walks.
"""

from __future__ import annotations

import linecache
import sys
from types import FrameType

from torchport.diagnose._move_alias import inlined_scope

INLINED = sys.version_info >= (3, 12)


def _scope_here(_: object) -> tuple[int, int, int, int] | None:
    """The scope of the call to this function, read while its caller runs it."""
    frame = sys._getframe(1)
    assert isinstance(frame, FrameType)
    return inlined_scope(frame)


def _span(line: int, opening: str, closing: str, which: int = 0) -> tuple[int, int, int, int]:
    """The span of the ``which``-th bracketed comprehension on ``line`` of this file."""
    text = linecache.getline(__file__, line)
    start = -1
    for _ in range(which + 1):
        start = text.index(opening, start + 1)
    depth, end = 0, start
    for end in range(start, len(text)):
        depth += {opening: 1, closing: -1}.get(text[end], 0)
        if depth == 0:
            break
    return (line, start, line, end + 1)


def test_a_comprehension_inlined_in_its_callers_frame_is_the_moves_scope() -> None:
    line = sys._getframe().f_lineno + 1
    listed = [_scope_here(t) for t in range(1)]
    assert listed == [_span(line, "[", "]") if INLINED else None]
    line = sys._getframe().f_lineno + 1
    keyed = {k: _scope_here(k) for k in range(1)}
    assert keyed == {0: _span(line, "{", "}") if INLINED else None}
    line = sys._getframe().f_lineno + 1
    nested = [[_scope_here(u) for u in range(1)] for t in range(1)]  # the inner one's
    assert nested == [[_span(line, "[", "]", which=1) if INLINED else None]]
    line = sys._getframe().f_lineno + 1
    member = {_scope_here(t) for t in range(1)}
    assert member == {_span(line, "{", "}") if INLINED else None}


def test_a_move_outside_an_inlined_comprehension_has_no_scope() -> None:
    assert _scope_here(0) is None  # no comprehension
    assert list(_scope_here(t) for t in range(1)) == [None]  # a generator: its own frame
    assert [t for t in [_scope_here(0)]] == [None]  # the first iterable: the caller's
    assert [f() for f in [lambda: _scope_here(0)]] == [None]  # a lambda's own frame

"""A note inside a span records what a note outside one records (``_listing.note``).

Inside a span (``listed_once``: the tree and the working folder hold still) a note makes
each name absolute, and reads each path's state, once for all the notes there. The
oracle is the rule written out apart, with no span: each record holds, per path noted,
``os.path.abspath`` of the name and ``state`` of that path when first noted, in the order
first noted. Generated: names spelled relative to the working folder, absolute, with
``./`` or ``sub/..``, as ``Path``s; files and folders, present and missing; nested records;
then the tree changed (a file rewritten with another length, a file removed, a name added
to a folder) and the same notes made in the next span, which sees the changed states.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._listing import listed_once, note, recorded, state

PLACES = ("a.py", "b.py", "sub/c.py", "sub", ".", "missing.py", "sub/missing")
SPELLINGS = ("plain", "dot", "detour", "absolute", "path")

notes = st.lists(
    st.one_of(
        st.tuples(st.just("note"), st.sampled_from(PLACES), st.sampled_from(SPELLINGS)),
        st.just(("open",)),
        st.just(("close",)),
    ),
    min_size=1,
    max_size=25,
)
changes = st.lists(
    st.one_of(
        st.tuples(st.just("rewrite"), st.sampled_from(("a.py", "b.py", "sub/c.py"))),
        st.tuples(st.just("remove"), st.sampled_from(("a.py", "sub/c.py"))),
        st.tuples(st.just("add"), st.sampled_from((".", "sub"))),
    ),
    max_size=3,
)


def _spelled(root: str, place: str, spelling: str) -> str | Path:
    if spelling == "dot":
        return "./" + place
    if spelling == "detour":
        return os.path.join("sub", "..", place)
    if spelling == "absolute":
        return os.path.join(root, place)
    if spelling == "path":
        return Path(place)
    return place


def _run(root: str, plan: list[tuple[str, ...]]) -> list[dict[str, list[object] | None]]:
    """Every record the plan opens (the outermost first), as the notes left them."""
    records: list[dict[str, list[object] | None]] = []
    with ExitStack() as outer:
        records.append(outer.enter_context(recorded()))
        inner: list[ExitStack] = []
        for step in plan:
            if step[0] == "open":
                stack = ExitStack()
                records.append(stack.enter_context(recorded()))
                inner.append(stack)
            elif step[0] == "close" and inner:
                inner.pop().close()
            elif step[0] == "note":
                note(_spelled(root, step[1], step[2]))
        while inner:
            inner.pop().close()
    return records


def _model(root: str, plan: list[tuple[str, ...]]) -> list[dict[str, list[object] | None]]:
    """The oracle: each note goes to every record open then, keeping its first state."""
    records: list[dict[str, list[object] | None]] = [{}]
    open_ = [0]
    for step in plan:
        if step[0] == "open":
            records.append({})
            open_.append(len(records) - 1)
        elif step[0] == "close" and len(open_) > 1:
            open_.pop()
        elif step[0] == "note":
            key = os.path.abspath(_spelled(root, step[1], step[2]))
            for at in open_:
                records[at].setdefault(key, state(key))
    return records


def _change(root: Path, plan: list[tuple[str, str]], stamp: int) -> None:
    for kind, where in plan:
        path = root / where
        if kind == "rewrite" and path.exists():
            path.write_text(path.read_text() + "y" * (stamp + 1))
        elif kind == "remove" and path.exists():
            path.unlink()
        elif kind == "add":
            (path / f"new{stamp}.py").write_text("")


@settings(max_examples=40, deadline=None)
@given(plan=notes, change=changes)
def test_a_note_in_a_span_records_what_one_outside_records(
    plan: list[tuple[str, ...]], change: list[tuple[str, str]]
) -> None:
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "sub").mkdir()
        for name in ("a.py", "b.py", "sub/c.py"):
            (root / name).write_text(f"x = {name!r}\n")
        os.chdir(folder)
        try:
            real = os.getcwd()  # (the names noted relative to it)
            for stamp in range(2):  # a span, the tree changed, the next span
                with listed_once():
                    within = _run(real, plan)
                    within_again = _run(real, plan)  # (its states read once in the span)
                model = _model(real, plan)
                outside = _run(real, plan)
                assert within == model == outside == within_again
                for got, expected in zip(within, model, strict=True):
                    assert list(got) == list(expected)  # the order first noted
                _change(root, change, stamp)
        finally:
            os.chdir(here)

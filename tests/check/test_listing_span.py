"""An answer worked out in an earlier span is checked again in the next (``_listing.still``).

Inside a span each path's state is read once for every answer checked there; these tests
hold that to what an answer rests on. Generated: a folder of files and a subfolder,
answers noting some of them in one span, then changes between spans (a file rewritten
with another length, a file removed, a file added to a folder), then every answer asked,
in a generated order and twice, in the next span and in the one after a second change.
The oracle is the change list itself: an answer holds exactly when nothing it noted was
changed (a folder is changed when a name comes or goes in it), and it agrees with
``same`` asked of each path apart (no span, nothing kept).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check._listing import listed_once, note, recorded, same, span, still

FILES = ("a.py", "b.py", "sub/c.py", "sub/d.py")
FOLDERS = ("", "sub")
PATHS = (*FILES, *FOLDERS)

changes = st.lists(
    st.one_of(
        st.tuples(st.just("rewrite"), st.sampled_from(FILES)),
        st.tuples(st.just("remove"), st.sampled_from(FILES)),
        st.tuples(st.just("add"), st.sampled_from(FOLDERS)),
    ),
    max_size=3,
)
answers = st.lists(st.sets(st.sampled_from(PATHS), min_size=1), min_size=1, max_size=5)


def _make(root: Path) -> None:
    (root / "sub").mkdir()
    for name in FILES:
        (root / name).write_text(f"x = {name!r}\n")


def _apply(root: Path, change: list[tuple[str, str]], stamp: int) -> set[str]:
    """Apply the changes; the paths whose state they change (a folder: its names)."""
    touched: set[str] = set()
    for kind, where in change:
        path = root / where
        if kind == "rewrite" and path.exists():
            path.write_text(path.read_text() + "y" * (stamp + 1))  # always another length
            touched.add(where)
        elif kind == "remove" and path.exists():
            path.unlink()
            touched |= {where, os.path.dirname(where)}
        elif kind == "add":
            (path / f"new{stamp}_{len(touched)}.py").write_text("")
            touched.add(where)
    return touched


def _work_out(
    root: Path, noted: list[set[str]]
) -> list[tuple[dict[str, list[object] | None], int]]:
    """Each answer's reads, noted inside one span (as the port's module facts are)."""
    out = []
    with listed_once():
        for paths in noted:
            with recorded() as reads:
                for where in sorted(paths):
                    note(str(root / where))
            out.append((reads, span()))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(noted=answers, first=changes, second=changes, order=st.randoms(use_true_random=False))
def test_an_answer_holds_in_a_later_span_exactly_when_nothing_it_noted_changed(
    noted: list[set[str]],
    first: list[tuple[str, str]],
    second: list[tuple[str, str]],
    order: object,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _make(root)
        worked = _work_out(root, noted)
        changed: set[str] = set()
        for stamp, change in enumerate((first, second)):
            changed |= _apply(root, change, stamp)
            asked = [*range(len(worked)), *range(len(worked))]
            order.shuffle(asked)  # type: ignore[attr-defined]
            with listed_once():
                for i in asked:
                    reads, since = worked[i]
                    expected = not (noted[i] & changed)
                    assert still(reads, since) is expected, (noted[i], changed)
                    assert all(same(p, s) for p, s in reads.items()) is expected


def test_an_answer_worked_out_in_the_same_span_is_taken_as_it_is() -> None:
    # Inside one span the tree is taken to hold still: an answer of that span is not
    # checked again (as before this change), whatever happens meanwhile.
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _make(root)
        with listed_once():
            with recorded() as reads:
                note(str(root / "a.py"))
            since = span()
            (root / "a.py").write_text("changed, longer than before\n")
            assert still(reads, since)
        with listed_once():
            assert not still(reads, since)

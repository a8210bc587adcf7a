"""Nested records of what a check read end as if every note went to every open record.

``_listing.note`` and ``_listing.still`` write to the innermost record only; a record
hands what it holds on to the one around it when it ends (``recorded``). The oracle is the
rule written out apart: each note (or each path of a ``still``'s answer) goes to every
record open at that moment, a path keeping the state it had when a record first got it.
Generated: nested records opened and closed, notes of files, answers noted again from
memory, and files rewritten between steps (so a later state differs from an earlier one);
each record's dict, its paths, their order and their states, is the oracle's.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._listing import note, recorded, state, still

FILES = ("a.py", "b.py", "c.py", "d.py")
steps = st.lists(
    st.one_of(
        st.just(("open",)),
        st.just(("close",)),
        st.tuples(st.just("note"), st.sampled_from(FILES)),
        st.tuples(st.just("still"), st.lists(st.sampled_from(FILES), min_size=1, max_size=3)),
        st.tuples(st.just("rewrite"), st.sampled_from(FILES)),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_nested_records_hold_what_every_open_record_got(plan: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name in FILES:
            (root / name).write_text("x", encoding="utf-8")
        paths = {name: os.path.abspath(root / name) for name in FILES}
        with ExitStack() as stack:
            stack.enter_context(recorded())  # the outermost: a check's record
            real: list[dict[str, list[object] | None]] = []
            model: list[dict[str, list[object] | None]] = []
            opened = [stack.enter_context(recorded())]
            model_open = [{}]
            real.append(opened[0])
            model.append(model_open[0])
            closers: list[ExitStack] = []
            for step in plan:
                if step[0] == "open":
                    inner = ExitStack()
                    opened.append(inner.enter_context(recorded()))
                    closers.append(inner)
                    model_open.append({})
                    real.append(opened[-1])
                    model.append(model_open[-1])
                elif step[0] == "close" and closers:
                    closers.pop().close()
                    opened.pop()
                    model_open.pop()
                elif step[0] == "note":
                    path = paths[str(step[1])]
                    seen = state(path)
                    for record in model_open:
                        record.setdefault(path, seen)
                    note(path)
                elif step[0] == "still":
                    reads = {paths[str(n)]: state(paths[str(n)]) for n in step[1]}  # type: ignore[union-attr]
                    for record in model_open:
                        for path, seen in reads.items():
                            record.setdefault(path, seen)
                    assert still(reads, -1)
                elif step[0] == "rewrite":
                    target = root / str(step[1])
                    target.write_text("y" * (len(target.read_text(encoding="utf-8")) + 1))
            while closers:
                closers.pop().close()
        for got, want in zip(real, model, strict=True):
            assert list(got.items()) == list(want.items())

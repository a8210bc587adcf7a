"""TP202 leaves a read under a test that holds only now and then, however it is combined.

Sample L (efficientdet-pytorch's train.py): ``if last_batch or batch_idx %
log_interval == 0:`` with ``last_batch = batch_idx == last_idx`` earlier in the loop.
Generated tests combine atoms with ``and``/``or`` (two levels). The oracle runs the
test itself: every atom is given its value on each of 1,000 iterations (the counter's
own tests by the counter; a flag or a comparison of data, which may hold on any step,
True throughout, the worst case), and the read is reported exactly when the test holds
on more than 5% of the iterations.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

N = 1000
# atom: (its text in the program, its value on iteration i)
ATOMS = {
    "interval": ("i % log_every == 0", lambda i: i % 50 == 0),
    "first": ("i == 0", lambda i: i == 0),
    "last_name": ("last_batch", lambda i: i == N - 1),
    "flag": ("verbose", lambda i: True),
    "hit_name": ("hit", lambda i: True),
}
SETUP = "    last_batch = i == last_idx\n    hit = pred == y\n"

atoms = st.sampled_from(sorted(ATOMS))
tests = st.recursive(
    atoms.map(lambda a: (a,)),
    lambda inner: st.tuples(
        st.sampled_from(["and", "or"]), st.lists(inner, min_size=2, max_size=3)
    ),
    max_leaves=4,
)


def _text(test: tuple) -> str:  # type: ignore[type-arg]
    if len(test) == 1:
        return ATOMS[test[0]][0]
    op, parts = test
    return "(" + f" {op} ".join(_text(p) for p in parts) + ")"


def _holds(test: tuple, i: int) -> bool:  # type: ignore[type-arg]
    if len(test) == 1:
        return bool(ATOMS[test[0]][1](i))
    op, parts = test
    values = [_holds(p, i) for p in parts]
    return all(values) if op == "and" else any(values)


@given(test=tests)
def test_a_read_is_reported_when_its_test_may_hold_on_most_steps(test: tuple) -> None:  # type: ignore[type-arg]
    source = (
        "import torch\n\n"
        "for i, (x, y) in enumerate(loader):\n"
        "    loss = model(x).sum()\n"
        "    pred = loss.argmax()\n" + SETUP + f"    if {_text(test)}:\n"
        "        print(loss.item())\n"
    )
    often = sum(_holds(test, i) for i in range(N)) > N // 20
    found = [f.line for f in check_source(source, select=["TP202"])]
    assert found == ([9] if often else []), source

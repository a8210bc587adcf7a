"""The prefetch queue, with stand-ins for issue and hand-over: order, depth, errors, early exit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.feed._prefetch import prefetched


class Boom(Exception):
    pass


@given(n=st.integers(0, 12), depth=st.integers(1, 4))
def test_prefetch_keeps_order_runs_depth_ahead_and_hands_each_batch_over_once(
    n: int, depth: int
) -> None:
    issued: list[int] = []
    handed: list[int] = []

    def issue(i: int) -> int:
        issued.append(i)
        # Never more than depth + 1 issued and not yet handed over.
        assert len(issued) - len(handed) <= depth + 1
        return i

    def hand_over(i: int) -> int:
        handed.append(i)
        # The next `depth` batches were already issued when this one is handed over.
        assert issued[-1] == min(i + depth, n - 1)
        return i

    assert list(prefetched(range(n), depth, issue, hand_over)) == list(range(n))
    assert issued == handed == list(range(n))


@pytest.mark.parametrize("where", ["source", "issue"])
@given(good=st.integers(0, 6), depth=st.integers(1, 3))
def test_prefetch_raises_the_same_error_at_its_own_position(
    where: str, good: int, depth: int
) -> None:
    error = Boom("batch failed")

    def source() -> Iterator[int]:
        yield from range(good)
        if where == "source":
            raise error
        yield good  # issue fails on this one
        yield good + 1

    def issue(i: int) -> int:
        if where == "issue" and i == good:
            raise error
        return i

    got: list[int] = []
    with pytest.raises(Boom) as info:
        got.extend(prefetched(source(), depth, issue, lambda i: i))
    assert info.value is error
    assert got == list(range(good))


def test_prefetch_abandoned_early_leaves_nothing_for_the_next_pass() -> None:
    data = list(range(10))
    it = prefetched(data, 3, lambda i: i, lambda i: i)
    assert next(it) == 0
    it.close()
    assert list(prefetched(data, 3, lambda i: i, lambda i: i)) == data

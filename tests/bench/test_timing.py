"""Timing statistics on known inputs, and the round-robin timer's bookkeeping."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from torchport.bench import Stats, summarize, time_interleaved
from torchport.bench._timing import quantile, rotating

finite = st.floats(min_value=0.0, max_value=1e3, allow_nan=False)


def test_summarize_known_even_sample() -> None:
    stats = summarize([4.0, 1.0, 3.0, 2.0])
    assert stats.median == 2.5
    assert stats.q1 == 1.75  # numpy's default linear interpolation
    assert stats.q3 == 3.25
    assert stats.iqr == 1.5
    assert stats.minimum == 1.0
    assert stats.n == 4


def test_summarize_known_odd_sample() -> None:
    stats = summarize([10.0, 1.0, 7.0, 3.0, 5.0])
    assert (stats.q1, stats.median, stats.q3) == (3.0, 5.0, 7.0)
    assert stats.iqr == 4.0


def test_summarize_single_sample_has_no_spread() -> None:
    stats = summarize([0.25])
    assert stats == Stats(median=0.25, q1=0.25, q3=0.25, minimum=0.25, n=1)
    assert stats.iqr == 0.0


def test_summarize_rejects_empty() -> None:
    with pytest.raises(ValueError, match="no timing samples"):
        summarize([])


def test_quantile_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match="outside"):
        quantile([1.0, 2.0], 1.5)


@given(st.lists(finite, min_size=1, max_size=50))
def test_summary_is_ordered_and_matches_torch(samples: list[float]) -> None:
    stats = summarize(samples)
    assert min(samples) == stats.minimum <= stats.q1 <= stats.median <= stats.q3 <= max(samples)
    reference = torch.quantile(torch.tensor(samples, dtype=torch.float64), 0.75).item()
    assert math.isclose(stats.q3, reference, rel_tol=1e-9, abs_tol=1e-9)


def test_scaled_keeps_count_and_scales_times() -> None:
    stats = summarize([2.0, 4.0, 6.0]).scaled(0.5)
    assert (stats.minimum, stats.q1, stats.median, stats.q3, stats.n) == (1.0, 1.5, 2.0, 2.5, 3)


def test_time_interleaved_round_robin_skips_warmup() -> None:
    calls: list[tuple[str, int]] = []
    strategies = {
        "a": lambda i: calls.append(("a", i)),
        "b": lambda i: calls.append(("b", i)),
    }
    stats = time_interleaved(strategies, torch.device("cpu"), warmup=2, repeats=3)
    # interleaved a, b, a, b, ... with the round index passed through
    assert calls == [(name, i) for i in range(5) for name in ("a", "b")]
    assert set(stats) == {"a", "b"}
    assert all(s.n == 3 and s.minimum >= 0.0 for s in stats.values())


def test_time_interleaved_inner_calls_per_sample() -> None:
    seen: list[int] = []
    stats = time_interleaved({"x": seen.append}, torch.device("cpu"), warmup=0, repeats=2, inner=3)
    assert seen == [0, 0, 0, 1, 1, 1]
    assert stats["x"].n == 2


@given(st.integers(min_value=2, max_value=5), st.integers(min_value=0, max_value=100))
def test_rotating_never_repeats_an_input_back_to_back(count: int, start: int) -> None:
    inputs = [object() for _ in range(count)]
    fn = rotating(lambda x: x, inputs)
    picked = [fn(i) for i in range(start, start + 2 * count)]
    assert all(a is not b for a, b in itertools.pairwise(picked))
    assert {id(x) for x in picked} == {id(x) for x in inputs}


def test_torch_threads_restores_the_previous_count() -> None:
    from torchport.bench._timing import torch_threads

    session = torch.get_num_threads()  # 1 under the suite's conftest: start from another count
    torch.set_num_threads(2)
    try:
        with pytest.raises(RuntimeError), torch_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("the count comes back even when the block fails")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(session)

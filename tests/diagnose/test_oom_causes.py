"""The one cause an out-of-memory error is, decided from the numbers its message stated.

Messages as each allocator writes them are read in test_oom.py (through ``explain_oom``);
here the numbers are generated, and the oracle states the rules on its own.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.diagnose._oom_causes import OomCase, classify

_GIB = 2**30
# a few round sizes often, so that numbers meet at the boundaries (a request equal to the cap)
_SIZE = st.one_of(
    st.sampled_from([0, 1, _GIB, 2 * _GIB]), st.integers(min_value=0, max_value=256 * _GIB)
)
_KEYS = ("requested", "total", "free", "allowed", "allocated", "reserved_unallocated")
_NUMBERS = st.dictionaries(st.sampled_from([*_KEYS, "this_process"]), _SIZE)
_OTHERS = st.lists(st.tuples(st.integers(min_value=1, max_value=2**22), _SIZE), max_size=3).map(
    tuple
)
_BACKENDS = st.sampled_from(["cuda", "hip", "xpu", "mps", "cpu"])


@given(_BACKENDS, _NUMBERS, _OTHERS)
def test_the_numbers_stated_are_carried_unchanged(
    backend: str, numbers: dict[str, int], others: tuple[tuple[int, int], ...]
) -> None:
    found = classify(backend, None, dict(numbers), others, "the message")
    for key in (*_KEYS, "this_process"):
        assert getattr(found, key) == numbers.get(key)
    assert found.other_processes == others and found.message == "the message"
    assert isinstance(found.case, OomCase) and found.next_step  # one cause, and what to do


@given(_BACKENDS, _NUMBERS, _OTHERS)
def test_a_request_beyond_what_the_process_may_hold_is_too_large_whatever_else_is_said(
    backend: str, numbers: dict[str, int], others: tuple[tuple[int, int], ...]
) -> None:
    # the oracle: the process may hold at most its cap when one is stated, else the device
    limit = numbers["allowed"] if "allowed" in numbers else numbers.get("total")
    too_large = "requested" in numbers and limit is not None and numbers["requested"] > limit
    found = classify(backend, None, dict(numbers), others, "")
    assert (found.case is OomCase.REQUEST_TOO_LARGE) == too_large


@given(
    st.integers(min_value=1, max_value=8 * _GIB),
    st.integers(min_value=1, max_value=8 * _GIB),
    _SIZE,
)
def test_a_process_cap_with_room_left_on_the_device_is_the_cap(
    requested: int, headroom: int, free_extra: int
) -> None:
    allowed = requested + headroom  # the request fits under the cap, and the device has room
    numbers = {"requested": requested, "allowed": allowed, "free": requested + free_extra}
    found = classify("cuda", "cuda:0", numbers, (), "")
    assert found.case is OomCase.PROCESS_LIMIT
    assert "set_per_process_memory_fraction" in found.next_step

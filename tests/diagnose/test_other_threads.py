"""The threads that ran beside an audit: counted, never watched."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.diagnose._other_threads import OtherThreads


def _run_threads(count: int) -> None:
    started = [threading.Thread(target=sum, args=([1, 2],)) for _ in range(count)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()


@settings(deadline=None)  # each example starts real threads: slow on a loaded machine
@given(st.integers(min_value=0, max_value=4), st.integers(min_value=1, max_value=3))
def test_each_thread_started_while_open_is_counted_once(count: int, nested: int) -> None:
    threads = OtherThreads()
    for _ in range(nested):  # audits inside audits share one count
        threads.open()
    try:
        _run_threads(count)
    finally:
        for _ in range(nested):
            threads.close()
    assert threads.started == count
    assert threading.getprofile() is None  # the last close took the hook down
    _run_threads(1)
    assert threads.started == count  # closed: no longer heard


def test_the_calling_thread_is_never_another() -> None:
    threads = OtherThreads()
    assert threading.get_ident() not in threads.alive()

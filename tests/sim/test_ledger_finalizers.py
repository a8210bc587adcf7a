"""The ledger's finalizers never wait for its lock (``sim/_ledger.py``).

The cyclic collector runs finalizers in the middle of whatever allocates, the ledger's own
``charge`` included, which holds the ledger's lock then: a finalizer that took the lock there
waited for itself, and the program hung for good (found in the slow run: a ported training
loop on ``sim`` stopped in ``cross_entropy``, the collector inside ``charge``). Here the
finalizer runs while the lock is held, as the collector runs it, on the one thread; it must
come back, and the bytes it frees must be given back by the ledger's next step.
"""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")

from torchport.sim._ledger import Ledger  # noqa: E402


def _finalize_while_locked(ledger: Ledger, key: int) -> bool:
    """Run the finalizer of ``key`` on a thread holding the lock; whether it came back."""
    done = threading.Event()

    def collector_inside_charge() -> None:
        with ledger._lock:
            ledger._release(key)
        done.set()

    thread = threading.Thread(target=collector_inside_charge, daemon=True)
    thread.start()
    thread.join(timeout=20)
    return done.is_set()


@pytest.mark.parametrize("holders", [1, 2])
def test_a_finalizer_run_inside_the_ledgers_lock_comes_back(holders: int) -> None:
    ledger = Ledger()
    raw = torch.ones(256)
    key = raw.untyped_storage().data_ptr()
    views = [raw.view(16, 16) for _ in range(holders - 1)]
    for tensor in [raw, *views]:
        ledger.charge(tensor)
    assert ledger.figures().allocated == 1024
    assert _finalize_while_locked(ledger, key), "the finalizer waited for the lock it was under"
    # one holder gone: the storage is given back only with its last holder
    assert ledger.figures().allocated == (0 if holders == 1 else 1024)
    if holders == 2:
        assert _finalize_while_locked(ledger, key)
        assert ledger.figures().allocated == 0


def test_the_collector_inside_charge_leaves_the_figures_exact() -> None:
    """Real collections, triggered as often as the interpreter allows, while sim-sized tensors
    are charged and dropped in cycles: the ledger ends where the tensors alive say."""
    import gc

    ledger = Ledger()
    before = gc.get_threshold()
    gc.set_threshold(1, 1, 1)  # a collection at nearly every allocation, charge's included
    try:
        kept = []
        for number in range(200):
            raw = torch.full((8,), float(number))
            ledger.charge(raw)
            cycle: list[object] = [raw]
            cycle.append(cycle)  # freed by the collector, its finalizer inside some charge
            if number % 10 == 0:
                kept.append(raw)
            del raw, cycle
        gc.collect()
    finally:
        gc.set_threshold(*before)
    assert ledger.figures().allocated == sum(t.untyped_storage().nbytes() for t in kept)

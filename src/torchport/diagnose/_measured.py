"""What a device told the audit it did: copies and host waits counted where they happened.

A device that sees its own crossings (the simulated accelerator) publishes each to
:mod:`torchport._crossings`. Where the program ran on such a device, the audit
reports those counts instead of its prediction: a read of a tensor that stayed on
the host is no sync, a ``.to(device)`` of a tensor already there is no copy, and
a list index's host-built index tensor is a copy, each by construction, because
only what crossed was published.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from torchport._crossings import Crossing, CrossingKind
from torchport.diagnose._ops import OpKind

__all__ = ["Crossings", "Measured", "measured"]


class Crossings:
    """Collects the crossings published while an audit block runs (from any thread)."""

    def __init__(self) -> None:
        self.seen: list[Crossing] = []
        self._lock = threading.Lock()

    def __call__(self, crossing: Crossing) -> None:
        with self._lock:
            self.seen.append(crossing)


@dataclass(frozen=True, slots=True)
class Measured:
    """Crossings of one kind at one source line, with how many and how many bytes."""

    kind: str
    label: str
    op: str
    device: str
    file: str
    line: int
    function: str
    count: int
    nbytes: int


def _key(crossing: Crossing) -> tuple[str, str, str, str, str, int, str]:
    if crossing.kind is CrossingKind.SYNC:
        kind, device = OpKind.SYNC.value, crossing.device
    elif crossing.kind is CrossingKind.HOST_TO_DEVICE:
        kind, device = OpKind.TRANSFER.value, f"cpu→{crossing.device}"
    else:
        kind, device = OpKind.TRANSFER.value, f"{crossing.device}→cpu"
    label = crossing.label or crossing.op
    return kind, label, crossing.op, device, crossing.filename, crossing.lineno, crossing.function


def measured(crossings: Iterable[Crossing]) -> list[Measured]:
    """The crossings grouped by kind, op and source line, most bytes then most calls first."""
    groups: dict[tuple[str, str, str, str, str, int, str], list[int]] = {}
    for crossing in crossings:
        totals = groups.setdefault(_key(crossing), [0, 0])
        totals[0] += 1
        totals[1] += crossing.nbytes
    rows = [Measured(*key, count, nbytes) for key, (count, nbytes) in groups.items()]
    rows.sort(key=lambda row: (-row.nbytes, -row.count, row.file, row.line, row.label))
    return rows

"""Instructions one audited event costs, counted by valgrind: a timing that no neighbour moves.

Timings of a single event (``bench_audit_overhead.py``) swing by half on a shared
machine. This script runs one event N times, bare, inside an empty
``TorchDispatchMode`` or inside ``torchport.audit()``; run it under callgrind twice,
with N = 0 and N = 1000, and the difference of the two totals over 1000 is the
event's instruction count, exact to a few instructions:

```
for n in 0 1000; do
  PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
    .venv/bin/python benchmarks/audit_event_instructions.py audit $n mask 2>&1 | grep Collected
done
```

Contexts: ``bare``, ``empty`` (an empty dispatch mode, the floor under audit()),
``audit``. Events: ``mask`` (``x[mask]``), ``item`` (``x.item()``), ``to``
(``x.to(device)`` of a CPU tensor, listed as a copy an accelerator would make).
Each run does five warm-up events first, so both totals include the one-time costs
(first-use imports, caches). About 100 s per run under valgrind.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import torchport as tp


class _Empty(TorchDispatchMode):  # type: ignore[misc]
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def main(context: str, count: int, event: str) -> None:
    torch.set_num_threads(1)
    contexts: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {
        "bare": contextlib.nullcontext,
        "empty": _Empty,
        "audit": tp.audit,
    }
    values = torch.arange(10.0)
    mask = values > 4
    scalar = torch.ones(())
    device = torch.device("cpu")
    events: dict[str, Callable[[], object]] = {
        "mask": lambda: values[mask],
        "item": lambda: scalar.item(),
        "to": lambda: values.to(device),
    }
    run = events[event]
    with contexts[context]():
        for _ in range(5):
            run()
        for _ in range(count):
            run()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])

"""The port's analysis as the port rules reach it: imported when a rule first asks.

The registry imports every rule module, so a rule that imported the port at its
top would load the whole port analysis into every ``check``, though the port
rules (TP5xx) are off by default. These stand-ins import it on first call. The
types are for annotations only (real to the type checker, placeholders at run
time, where ``from __future__ import annotations`` never evaluates them).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchport.check._context import Context

if TYPE_CHECKING:
    from torchport.check.port._batches import BatchMove, BatchPlan
    from torchport.check.port._facts import PortFacts
else:
    BatchMove = BatchPlan = PortFacts = object  # annotations only: never evaluated

__all__ = ["BatchMove", "PortFacts", "batch_plan", "cpu_keys", "is_move", "port_facts"]


def port_facts(ctx: Context) -> PortFacts:
    """:func:`torchport.check.port._facts.port_facts`."""
    from torchport.check.port._facts import port_facts as found

    return found(ctx)


def batch_plan(ctx: Context) -> BatchPlan:
    """:func:`torchport.check.port._batches.batch_plan`."""
    from torchport.check.port._batches import batch_plan as found

    return found(ctx)


def cpu_keys(batch: str, ctx: Context) -> list[str]:
    """:func:`torchport.check.port._collate.cpu_keys`."""
    from torchport.check.port._collate import cpu_keys as found

    return found(batch, ctx)


def is_move(call: ast.AST) -> bool:
    """:func:`torchport.check.port._calls.is_move`."""
    from torchport.check.port._calls import is_move as found

    return found(call)

"""The port's analysis as the port rules reach it: imported when a rule first asks.

The registry imports every rule module, so a rule that imported the port at its
top would load the whole port analysis into every ``check``, though the port
rules (TP5xx) are off by default. These stand-ins import it on first call. The
types are for annotations only (real to the type checker, placeholders at run
time, where ``from __future__ import annotations`` never evaluates them).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable

from torchport.check._context import Context

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._batches import BatchMove, BatchPlan
    from torchport.check.port._facts import PortFacts, PortScope
else:
    BatchMove = BatchPlan = PortFacts = PortScope = object  # annotations only: never evaluated

__all__ = [
    "BatchMove",
    "PortFacts",
    "array_beside_device",
    "batch_plan",
    "cpu_keys",
    "cpu_only_device",
    "creators",
    "host_library",
    "is_move",
    "port_facts",
    "surely_on_device",
]


# Each stand-in imports on its first call and keeps what it imported: rules ask at every
# call node, where an import statement per call cost more than the answer it returns.


@functools.cache
def _port_facts() -> Callable[[Context], PortFacts]:
    from torchport.check.port._facts import port_facts as found

    return found


@functools.cache
def _is_move() -> Callable[[ast.AST], bool]:
    from torchport.check.port._calls import is_move as found

    return found


@functools.cache
def _cpu_only_device() -> Callable[[ast.AST, Callable[[ast.expr], str | None]], bool]:
    from torchport.check.port._calls import cpu_only_device as found

    return found


def cpu_only_device(node: ast.AST, qualname: Callable[[ast.expr], str | None]) -> bool:
    """:func:`torchport.check.port._calls.cpu_only_device`."""
    return _cpu_only_device()(node, qualname)


def port_facts(ctx: Context) -> PortFacts:
    """:func:`torchport.check.port._facts.port_facts`."""
    return _port_facts()(ctx)


def batch_plan(ctx: Context) -> BatchPlan:
    """:func:`torchport.check.port._batches.batch_plan`."""
    from torchport.check.port._batches import batch_plan as found

    return found(ctx)


def cpu_keys(batch: str, ctx: Context) -> list[str]:
    """:func:`torchport.check.port._collate.cpu_keys`."""
    from torchport.check.port._collate import cpu_keys as found

    return found(batch, ctx)


@functools.cache
def _host_library() -> Callable[[str], bool]:
    from torchport.check.port._calls import host_library as found

    return found


def host_library(name: str) -> bool:
    """:func:`torchport.check.port._calls.host_library`."""
    return _host_library()(name)


def array_beside_device(node: ast.AST, scope: PortScope, facts: PortFacts) -> str | None:
    """:func:`torchport.check.port._numpy_arrays.array_beside_device`."""
    from torchport.check.port._numpy_arrays import array_beside_device as found

    return found(node, scope, facts)


def surely_on_device(expr: ast.expr, scope: PortScope, facts: PortFacts) -> bool:
    """:func:`torchport.check.port._every_binding.surely_on_device`."""
    from torchport.check.port._every_binding import surely_on_device as found

    return found(expr, scope, facts)


def is_move(call: ast.AST) -> bool:
    """:func:`torchport.check.port._calls.is_move`."""
    return _is_move()(call)


@functools.cache
def creators() -> tuple[frozenset[str], frozenset[str]]:
    """The port's tensor creators and typed constructors (:mod:`torchport.check.port._calls`)."""
    from torchport.check.port._calls import CREATORS, TYPED_CONSTRUCTORS

    return CREATORS, TYPED_CONSTRUCTORS

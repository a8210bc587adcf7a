"""Device values a function leaves in a name of the module (or of the function around it).

The flow works per scope: ``losses.append(loss)`` in ``train()`` makes ``losses`` a device
value of ``train``'s scope, though the list is the module's (``losses = []`` at the top)
and another function reads it (``plt.plot(losses)`` in ``report()``, numpy refusing the
device tensors in it). So is a module's dict filled there (``history["loss"].append(v)``,
``history.setdefault("loss", []).append(v)``, ``best[name] = v``) and a name a function
declares ``global`` and binds (``global last; last = out``). :func:`share_globals` gives
each such name to the scope that binds it (the module, or for a closure the function
around it), then works the flow out again in the scopes that read it, until nothing
changes (a few rounds at most: each round only adds names).
"""

from __future__ import annotations

import ast

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._device_flow import PortScope
    from torchport.check.port._facts import PortFacts

__all__ = ["share_globals"]

_ROUNDS = 3


def share_globals(facts: PortFacts) -> None:
    """Give the device values functions leave in outer names to the scopes binding them,
    and work the flow out again where those names are read (see the module docstring)."""
    scopes = [s for s in facts.scopes[1:] if not s.internal]
    declared = {id(s): _declared_global(s) for s in scopes}  # once per scope: one scan
    for _ in range(_ROUNDS):
        given: dict[int, tuple[PortScope, set[str]]] = {}
        for scope in scopes:
            for name in list(scope.values):
                owner = _owner(name, scope, declared[id(scope)], facts.module)
                if owner is not None and name not in owner.values and not owner.internal:
                    owner.values.add(name)
                    owner.given.add(name)
                    given.setdefault(id(owner), (owner, set()))[1].add(name)
        if not given:
            return
        dirty: dict[int, PortScope] = {}
        for owner, names in given.values():
            dirty[id(owner)] = owner
            for name in names:
                for load in facts.loads_of(name):
                    reader = facts.scope_of.get(id(load))
                    if reader is not None and not reader.internal and reader is not owner:
                        if owner is facts.module and name in declared.get(id(reader), ()):
                            reader.values.add(name)  # `global last` read where it is bound too
                            reader.given.add(name)
                        dirty[id(reader)] = reader
        for scope in dirty.values():
            facts.flow.run(scope)


def _owner(
    name: str, scope: PortScope, declared: frozenset[str], module: PortScope
) -> PortScope | None:
    """The scope whose ``name`` a device value of ``scope`` is: the module for a name
    declared ``global``; for a name ``scope`` does not bind (``losses.append(v)``), the
    nearest scope around it that does; None for ``scope``'s own."""
    if name in declared:
        return module
    if name in scope.local:
        return None
    outer = scope.outer
    while outer is not None and outer is not module and name not in outer.local:
        outer = outer.outer
    if outer is None or name not in outer.local:
        return None
    return outer


def _declared_global(scope: PortScope) -> frozenset[str]:
    """The names ``scope``'s own ``global`` statements declare."""
    found = [n.names for n in scope.nodes if isinstance(n, ast.Global)]
    return frozenset(name for names in found for name in names)

"""Device values handed to the file's own functions and methods: on the device there too.

``agent.step(model(x))`` with ``def step(self, y): return y * self.w``: ``y`` holds
the model's output inside ``step``, so what meets it there (``self.w``, a tensor
``step`` makes) must be moved or reported, as it would be where the forward ran.
The call sites are the port's (:func:`~torchport.check.port._call_sites.callee`:
functions, nested ones too, and methods called through ``self`` or an instance
whose class the code names); a parameter is a device value in its function once
one call site hands it one (a fixed point: the callee may hand it on). The other way,
a call of a function that returns a device value (``return net(obs)``) is a device
value where it is made (``get_policy(obs) * act``: ``act`` meets the device there).

The flow is flow-insensitive (as for a name bound twice): once a parameter is a
device value, what the other call sites hand it meets what it meets in the
callee, so those arguments are sinks of their callers (moved where they are made,
or reported). A device value handed to a method several of the file's classes
define, the receiver's class unknown, is out of the port's sight: reported
(:func:`~torchport.check.port._escapes.device_escapes`).
"""

from __future__ import annotations

import ast

from torchport.check.port._device_flow import DeviceFlow, PortScope

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = ["OwnCall", "seed_parameters"]

# (the call, the scope it is made in, the callee's parameters it fills, the callee's scope)
OwnCall = tuple[ast.Call, PortScope, list[str], PortScope]

_ROUNDS = 8  # call chains deeper than this are not followed further (a bound on the work)


def seed_parameters(facts: PortFacts, calls: list[OwnCall]) -> None:
    """Make the parameters handed device values device values of their callee (see above)."""
    flow = facts.flow
    calls = [c for c in calls if not c[1].internal and not c[3].internal]
    seeded: set[tuple[int, str]] = set()
    returning: set[int] = set()  # ids of callee scopes that return a device value
    for _ in range(_ROUNDS):
        dirty: dict[int, PortScope] = {}
        for call, scope, params, target in calls:
            for param, arg in _handed(call, params, target):
                if param not in target.values and flow.on_device(arg, scope):
                    target.values.add(param)
                    seeded.add((id(target), param))
                    dirty[id(target)] = target
            if id(target) not in returning and _returns_device(flow, target):
                returning.add(id(target))
            if id(target) in returning and id(call) not in flow.device_calls:
                flow.device_calls.add(id(call))  # what it returns meets what the call meets
                dirty[id(scope)] = scope
        if not dirty:
            break
        for target in dirty.values():
            flow.run(target)
    for call, scope, params, target in calls:
        for param, arg in _handed(call, params, target):
            if (id(target), param) in seeded and not flow.on_device(arg, scope):
                flow.operands.append((arg, scope))
                flow.mark(arg, scope.reach, scope.sink_nodes)


def _returns_device(flow: DeviceFlow, target: PortScope) -> bool:
    """Whether a function returns a device value somewhere (``return net(obs)``).

    Not one returned in a tuple or list (``return loss, rets, lens``): which item of
    the unpacked result is the device value the flow does not tell, and every item
    taken for one would have numpy reads of the others reported (TP522)."""
    return any(
        isinstance(n, ast.Return)
        and n.value is not None
        and not isinstance(n.value, (ast.Tuple, ast.List))
        and flow.on_device(n.value, target)
        for n in target.nodes
    )


def _handed(call: ast.Call, params: list[str], target: PortScope) -> list[tuple[str, ast.expr]]:
    """(parameter, argument) for each argument a call hands a named parameter."""
    pairs: list[tuple[str, ast.expr]] = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break  # the positions after it are not told
        if i < len(params):
            pairs.append((params[i], arg))
    node = target.node
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        a = node.args
        names = {p.arg for p in (*a.args, *a.kwonlyargs)}
        pairs += [(k.arg, k.value) for k in call.keywords if k.arg is not None and k.arg in names]
    return pairs

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

A call of a function that returns only host data (``return losses, accs`` of lists of
``.item()`` floats, a ``.cpu()`` tensor, a number, nothing) is no device value, whatever
it is given (:func:`host_calls`): ``hist = train(model, x)`` then ``plt.plot(hist[0])`` reads
floats. Only what the callee's own code shows is host counts: a value read from an
attribute or a name it does not bind (``self.history``, a module's list) may hold device
values put there elsewhere, so such a return keeps the call a device value.

The flow is flow-insensitive (as for a name bound twice): once a parameter is a
device value, what the other call sites hand it meets what it meets in the
callee, so those arguments are sinks of their callers (moved where they are made,
or reported). A device value handed to a method several of the file's classes
define, the receiver's class unknown, is out of the port's sight: reported
(:func:`~torchport.check.port._escapes.device_escapes`).
"""

from __future__ import annotations

import ast

from torchport.check.port._call_sites import handed
from torchport.check.port._calls import HOST_READS, MOVING_METHODS, library_result
from torchport.check.port._collected import added, collector
from torchport.check.port._device_flow import DeviceFlow, PortScope, names_of
from torchport.check.port._guesses import known_on_device, unpacked
from torchport.check.port._handed_on import device_items

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = ["OwnCall", "host_calls", "run_flow", "seed_parameters"]

# (the call, the scope it is made in, the callee's parameters it fills, the callee's scope)
OwnCall = tuple[ast.Call, PortScope, list[str], PortScope]

_ROUNDS = 8  # call chains deeper than this are not followed further (a bound on the work)
_DEPTH = 4  # local names followed through their bindings, at most this deep
# Builtins whose result is a number, a string or a flag: host data whatever they are given.
_HOST_NUMBERS = frozenset({"len", "float", "int", "str", "bool", "round", "repr", "format"})
# Standard-library modules whose functions make numbers or strings: of host data, host data
# (`time.perf_counter()`, `statistics.median(samples)`, `math.sqrt(n)`, `os.path.join(a, b)`)
_NUMBER_MODULES = frozenset({"time", "math", "statistics", "random", "os.path"})
# Builtins that give a tensor of tensors, and of host data host data (`abs(end - start)`)
_HOST_OF_HOST = frozenset({"abs", "min", "max", "sum", "pow", "divmod", "sorted"})
# Tensor methods giving a tensor where their receiver is: `x.cpu().float()` stays a host copy.
_TENSOR_METHODS = frozenset(
    {"detach", "clone", "float", "double", "half", "long", "int", "contiguous", "view",
     "reshape", "squeeze", "unsqueeze", "flatten"}
)  # fmt: skip


def _handed(
    call: ast.Call, params: list[str], target: PortScope, flow: DeviceFlow
) -> list[tuple[str, ast.expr]]:
    """:func:`~torchport.check.port._call_sites.handed`, syntax only: worked out once per own
    call in a file (the seeding asks it per call each round; timm: 26,000 asks, 6,000 calls)."""
    memo = flow.ctx.memo.setdefault("port.handed", {})
    assert isinstance(memo, dict)
    key = (call, target, tuple(params))  # (nodes and scopes hash by identity)
    found = memo.get(key)
    if found is None:
        found = memo[key] = handed(call, params, target, flow)
    return found


def run_flow(facts: PortFacts, calls: list[OwnCall]) -> bool:
    """Work out every scope's device values, those handed to own functions included; whether
    the file trains raw weights (:meth:`~torchport.check.port._facts.PortFacts.raw_parameters`).

    An own call given a device value whose callee returns only host data (``hist =
    train(model, x)``, lists of floats) is no device value; that is known only once the
    callees' parameters are seeded, after the callers' values were worked out with the call
    taken for one. The flow only adds values, so where such calls are found it is worked out
    once more from the start, with them known (the callers' values then only shrink, so a
    callee judged host stays host).
    """
    flow = facts.flow
    for attempt in range(2):
        raw = False
        for scope in facts.scopes:
            if not scope.internal:
                raw = facts.raw_parameters(scope) or raw
                flow.run(scope)
        seed_parameters(facts, calls)  # device values handed to own functions
        found = host_calls(flow, calls) - flow.host_calls
        if attempt or not found:
            return raw
        flow.host_calls |= found
        flow.operands.clear()  # (the list `facts.operands` is)
        flow.guesses.clear()
        flow.device_calls.clear()
        flow.item_calls.clear()
        for scope in facts.scopes:  # (not `moved`: syntax only, in-place moves included)
            if not scope.internal:
                scope.values.clear()
                scope.given.clear()
                scope.guess_seeds.clear()
                scope.seed_tensors.clear()
                scope.guess_reach.clear()
                scope.guess_nodes.clear()
                scope.reach.clear()
                scope.sink_nodes.clear()
                scope.reach_values.clear()
    return raw


def seed_parameters(facts: PortFacts, calls: list[OwnCall]) -> None:
    """Make the parameters handed device values device values of their callee (see above)."""
    flow = facts.flow
    calls = [c for c in calls if not c[1].internal and not c[3].internal]
    seeded: set[tuple[int, str]] = set()
    returning: set[int] = set()  # ids of callee scopes that return a device value
    returned: dict[int, list[ast.expr]] = {}  # id(callee scope) -> what it may return so
    for _ in range(_ROUNDS):
        dirty: dict[int, PortScope] = {}
        for call, scope, params, target in calls:
            for param, arg in _handed(call, params, target, flow):
                if param not in target.values and _device_handed(flow, arg, scope, target, param):
                    target.values.add(param)
                    target.given.add(param)
                    seeded.add((id(target), param))
                    dirty[id(target)] = target
            if id(target) not in returning and _returns_device(flow, target, returned):
                returning.add(id(target))
            if id(target) in returning and id(call) not in flow.device_calls:
                flow.device_calls.add(id(call))  # what it returns meets what the call meets
                dirty[id(scope)] = scope
            elif id(target) not in returning:  # `return model(x), torch.ones(2)`: by item
                flags = device_items(flow, target)
                if flags is not None and flow.item_calls.get(id(call)) != flags:
                    flow.item_calls[id(call)] = flags
                    dirty[id(scope)] = scope
        for target in _guess_seeds(flow, calls, seeded):
            dirty[id(target)] = target
        if not dirty:
            break
        for target in dirty.values():
            flow.run(target)
    _host_parameters(flow, calls, seeded)
    for call, scope, params, target in calls:
        for param, arg in _handed(call, params, target, flow):
            if (id(target), param) in seeded and not flow.on_device(arg, scope):
                if param in target.guess_seeds:  # its callee moves nothing for it: neither here
                    flow.guesses.append((arg, scope, call))
                    flow.mark(arg, scope.guess_reach, scope.guess_nodes)
                else:
                    flow.operands.append((arg, scope))
                    flow.mark(arg, scope.reach, scope.sink_nodes)


def _device_handed(
    flow: DeviceFlow, arg: ast.expr, scope: PortScope, target: PortScope, param: str
) -> list[ast.expr]:
    """The device values ``arg`` hands ``target``'s ``param``: itself, or the items of a dict
    holding one (``f(d)`` of ``d = {"a": torch.ones(8, 1), "b": model(x)}``, or of a copy of
    it) where ``f`` reads ``param`` only by constant keys (``p["a"]``; not a checkpoint's
    ``state.update(step=...)``). The parameter is then a device value there, and the dict's
    other items meet it, so they are moved where they are made or reported (the sinks)."""
    if flow.on_device(arg, scope):
        return [arg]
    items = flow.items.mapping_items(arg)
    if not items or not _read_by_key(flow, target, param):
        return []
    return [i for i in items if flow.on_device(i, scope)]


def _read_by_key(flow: DeviceFlow, target: PortScope, param: str) -> bool:
    """Whether every read of ``param`` in ``target``'s function is ``param["key"]``, loaded,
    and nothing there binds it again."""
    parent = flow.ctx.scopes.parent
    for node in ast.walk(target.node):
        if not (isinstance(node, ast.Name) and node.id == param):
            continue
        up = parent(node)
        if not (
            isinstance(node.ctx, ast.Load)
            and isinstance(up, ast.Subscript)
            and up.value is node
            and isinstance(up.ctx, ast.Load)
            and isinstance(up.slice, ast.Constant)
            and isinstance(up.slice.value, str)
        ):
            return False
    return True


def _host_parameters(flow: DeviceFlow, calls: list[OwnCall], seeded: set[tuple[int, str]]) -> None:
    """Note the parameters no call hands a device value and some hands host data the port
    cannot place (``norm(image)`` of ``x[i].cpu()`` copies only): what meets their values in
    the helper stays where they are (``_guesses.crossing_moves``); whether as tensors only."""
    host: dict[tuple[int, str], bool] = {}
    tensors: dict[tuple[int, str], bool] = {}
    targets: dict[int, PortScope] = {}
    for call, scope, params, target in calls:
        for param, arg in _handed(call, params, target, flow):
            key = (id(target), param)
            if key in seeded:
                continue
            targets[id(target)] = target
            unplaced = _unplaced(arg, flow, scope) and not _no_tensor(arg, flow, scope, 0)
            host[key] = host.get(key, True) and unplaced  # (`run(fused=False)`: a flag)
            tensors[key] = tensors.get(key, True) and _tensor_copy(arg, flow, scope, 0)
    for key, only in host.items():
        if only:
            targets[key[0]].seed_tensors[key[1]] = tensors[key]


def _no_tensor(arg: ast.expr, flow: DeviceFlow, scope: PortScope, depth: int) -> bool:
    """Whether the caller's code shows ``arg`` is no tensor: a constant, a number read
    (``loss.item()``, ``float(v)``), a numpy value, or a name bound only to such."""
    if isinstance(arg, ast.Constant | ast.JoinedStr | ast.List | ast.Tuple | ast.Dict):
        return True
    if isinstance(arg, ast.BinOp | ast.UnaryOp):
        sides = [arg.left, arg.right] if isinstance(arg, ast.BinOp) else [arg.operand]
        return all(_no_tensor(side, flow, scope, depth) for side in sides)
    if isinstance(arg, ast.Call):
        func = arg.func
        if (flow.ctx.qualname(func) or "").startswith("numpy."):
            return True
        if isinstance(func, ast.Attribute):
            return func.attr in HOST_READS and func.attr != "cpu"  # `.item()`, `.numpy()`
        return isinstance(func, ast.Name) and func.id in _HOST_NUMBERS
    if not isinstance(arg, ast.Name) or depth >= _DEPTH or arg.id not in scope.local:
        return False
    made = scope.values_of(arg.id) if arg.id not in scope.loop_bound else []
    return bool(made) and all(_no_tensor(v, flow, scope, depth + 1) for v in made)


def _guess_seeds(
    flow: DeviceFlow, calls: list[OwnCall], seeded: set[tuple[int, str]]
) -> list[PortScope]:
    """Mark each seeded parameter guessed or not (``_guesses``): guessed where no call site
    hands it a known device value, or one hands it a guessed one, or a value the port cannot
    place (host data the caller's code shows, an item of a loop's variable). The callees
    whose mark changed."""
    known: dict[tuple[int, str], bool] = {}
    unplaced: dict[tuple[int, str], bool] = {}
    untold: set[tuple[int, str]] = set()  # handed what may be no tensor: no `.device`?
    numbers: set[tuple[int, str]] = set()  # handed a number: what meets it there, anywhere
    targets: dict[int, PortScope] = {}
    for call, scope, params, target in calls:
        for param, arg in _handed(call, params, target, flow):
            key = (id(target), param)
            if key not in seeded:
                continue
            targets[id(target)] = target
            handed = _device_handed(flow, arg, scope, target, param)
            device = bool(handed)
            sure = any(known_on_device(flow, v, scope) for v in handed)
            known[key] = known.get(key, False) or sure
            # a guessed device value handed on is a guess there too
            unplaced[key] = unplaced.get(key, False) or (
                not sure if device else _unplaced(arg, flow, scope)
            )
            if not sure and not _tensor_copy(arg, flow, scope, 0):
                untold.add(key)
                if _no_tensor(arg, flow, scope, 0):
                    numbers.add(key)
    changed: dict[int, PortScope] = {}
    for key, is_known in known.items():
        target = targets[key[0]]
        guess = not is_known or unplaced[key]
        if guess and key not in numbers:  # (`_guesses.meeting_moves`: `.device` of tensors)
            target.seed_tensors[key[1]] = key not in untold
        else:
            target.seed_tensors.pop(key[1], None)
        if guess != (key[1] in target.guess_seeds):
            (target.guess_seeds.add if guess else target.guess_seeds.discard)(key[1])
            changed[key[0]] = target
    return list(changed.values())


def _unplaced(arg: ast.expr, flow: DeviceFlow, scope: PortScope, depth: int = 0) -> bool:
    """Host data by the caller's own code, or an item read out of a loop's variable (or a
    name bound only to such, ``image = item[0]``, or a comprehension's item of host data)."""
    base = arg
    while isinstance(base, ast.Subscript | ast.Attribute):
        base = base.value
    if isinstance(base, ast.Name) and base.id in scope.loop_bound:
        return True
    if _host(arg, flow, scope, _own_self(scope), 0):
        return True
    if not isinstance(arg, ast.Name) or depth >= _DEPTH:
        return False
    if any(  # `k` of `for k in kept`, a comprehension of host copies
        _unplaced(held, flow, scope, depth + 1)
        for held in scope.items_of(arg.id, comprehended=True)
    ):
        return True
    if arg.id not in scope.local:
        return False
    bindings = [(t, v) for t, v in scope.assigns if any(arg.id in names_of(n) for n in t)]
    return bool(bindings) and all(  # (`c, image, n = kept[j]`: an item of a record, unpacked)
        unpacked(t, v, scope) or _unplaced(v, flow, scope, depth + 1) for t, v in bindings
    )


def _tensor_copy(arg: ast.expr, flow: DeviceFlow, scope: PortScope, depth: int) -> bool:
    """Whether the caller's code shows ``arg`` is a tensor on the host: a ``.cpu()`` copy
    (``x[i].cpu()``, ``out.detach().cpu().float()``, an item of one), a name bound only to
    such, or an item of a list made here of only such (``for k in kept``)."""
    if depth >= _DEPTH:
        return False
    if isinstance(arg, ast.Subscript):
        return _tensor_copy(arg.value, flow, scope, depth + 1)
    if isinstance(arg, ast.Call):
        func = arg.func
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr == "cpu" or flow.to_cpu(arg, scope):
            return True
        return func.attr in _TENSOR_METHODS and _tensor_copy(func.value, flow, scope, depth + 1)
    if not isinstance(arg, ast.Name) or arg.id not in scope.local:
        return False
    loops = scope.items_of(arg.id, comprehended=False)
    if loops:  # an item: of lists of copies
        return all(_copies(i, flow, scope, depth + 1) for i in loops)
    made = scope.values_of(arg.id)
    return bool(made) and all(_tensor_copy(v, flow, scope, depth + 1) for v in made)


def _copies(held: ast.expr, flow: DeviceFlow, scope: PortScope, depth: int) -> bool:
    """A list made here whose every item is a ``.cpu()`` copy (``[x[i].cpu() for i in
    ...]``, or ``kept = []`` then ``kept.append(x[i].cpu())``)."""
    if isinstance(held, ast.ListComp | ast.GeneratorExp):
        return _tensor_copy(held.elt, flow, scope, depth)
    if isinstance(held, ast.Subscript) and isinstance(held.slice, ast.Slice):
        held = held.value  # `kept[:3]`
    if not isinstance(held, ast.Name) or depth >= _DEPTH or held.id not in scope.local:
        return False
    made = scope.values_of(held.id)
    if not made or held.id in scope.loop_bound:
        return False
    if not all(_empty(v) or _copies(v, flow, scope, depth + 1) for v in made):
        return False
    return all(
        all(_tensor_copy(a, flow, scope, depth + 1) for a in added(node))
        for node in scope.nodes
        if isinstance(node, ast.Call | ast.Assign | ast.AugAssign)
        and collector(node, scope, flow.module) == held.id
    )


def _returns_device(
    flow: DeviceFlow, target: PortScope, returned: dict[int, list[ast.expr]]
) -> bool:
    """Whether a function returns a device value somewhere (``return net(obs)``).

    Not one returned in a tuple or list (``return loss, rets, lens``): which item of
    the unpacked result is the device value the flow does not tell, and every item
    taken for one would have numpy reads of the others reported (TP522). ``returned``: the
    values each callee returns so, found once (asked per call site and round)."""
    values = returned.get(id(target))
    if values is None:
        values = returned[id(target)] = [
            n.value
            for n in target.nodes
            if isinstance(n, ast.Return)
            and n.value is not None
            and not isinstance(n.value, (ast.Tuple, ast.List))
        ]
    return any(flow.on_device(v, target) for v in values)


def host_calls(flow: DeviceFlow, calls: list[OwnCall]) -> set[int]:
    """The ids of own calls given a device value whose callee returns only host data (see the
    module docstring); asked once the parameters are seeded (:func:`seed_parameters`)."""
    found: set[int] = set()
    answers: dict[int, bool] = {}
    for call, scope, params, target in calls:
        if target.internal or id(call) in flow.device_calls:
            continue
        known = answers.get(id(target))
        if known is None:
            known = answers[id(target)] = _returns_host(flow, target)
        if known and any(
            flow.on_device(arg, scope) for _, arg in _handed(call, params, target, flow)
        ):
            found.add(id(call))
    return found


def _returns_host(flow: DeviceFlow, target: PortScope) -> bool:
    """Whether every value ``target`` returns is host data its own code shows (no generator)."""
    node = target.node
    if not isinstance(node, ast.FunctionDef) or node.name == "__init__":
        return False  # (`Batch(x=out)` runs `__init__`, and gives the object holding `out`)
    returns = []
    for n in target.nodes:
        if isinstance(n, ast.Yield | ast.YieldFrom | ast.Await | ast.Global | ast.Nonlocal):
            return False
        if isinstance(n, ast.Return) and n.value is not None:
            returns.append(n.value)
    own = _own_self(target)
    return all(_host(v, flow, target, own, 0) for v in returns)


def _own_self(target: PortScope) -> str | None:
    """A method's first parameter (``self``): what it holds the method does not show."""
    node = target.node
    if target.cls is None or not isinstance(node, ast.FunctionDef):
        return None
    first = [*node.args.posonlyargs, *node.args.args]
    return first[0].arg if first else None


def _host(expr: ast.expr, flow: DeviceFlow, scope: PortScope, own: str | None, depth: int) -> bool:
    """Whether ``expr`` is host data by what ``scope``'s own code shows."""
    if isinstance(expr, ast.Constant | ast.JoinedStr):
        return True
    if isinstance(expr, ast.Tuple | ast.List | ast.Set):
        return all(_host(e, flow, scope, own, depth) for e in expr.elts)
    if isinstance(expr, ast.Dict):
        return all(_host(v, flow, scope, own, depth) for v in expr.values)
    if flow.on_device(expr, scope):
        return False
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in HOST_READS and func.attr != "cpu":
            return True  # `loss.item()`, `out.tolist()`: a number, a list of them
        if flow.to_cpu(expr, scope) or (isinstance(func, ast.Attribute) and func.attr == "cpu"):
            return True
        name = flow.ctx.qualname(func) or ""
        if name.startswith("numpy."):
            return True  # `np.round(arr, 2)`: numpy refuses a device tensor, so `arr` is host
        given = [*expr.args, *(k.value for k in expr.keywords)]
        if (name.rpartition(".")[0] in _NUMBER_MODULES and library_result(name) is False) or (
            isinstance(func, ast.Name) and func.id in _HOST_OF_HOST and func.id not in scope.local
        ):  # (not `random.choice`, which hands back what it was given)
            return all(_host(a, flow, scope, own, depth) for a in given)
        if isinstance(func, ast.Attribute) and func.attr not in MOVING_METHODS:
            # `arr.argmax(axis=1)`, `t.cpu().view(-1)`: a method of host data stays on the host
            return _host(func.value, flow, scope, own, depth)
        return isinstance(func, ast.Name) and func.id in _HOST_NUMBERS
    if isinstance(expr, ast.Name):
        return _host_name(expr.id, flow, scope, own, depth)
    if isinstance(expr, ast.BinOp):  # `correct / total` of two numbers
        return all(_host(side, flow, scope, own, depth) for side in (expr.left, expr.right))
    if isinstance(expr, ast.UnaryOp):
        return _host(expr.operand, flow, scope, own, depth)
    if isinstance(expr, ast.Subscript):  # `errors[:4]` of a list of `.cpu()` copies: host too
        return _host(expr.value, flow, scope, own, depth)
    if isinstance(expr, ast.ListComp | ast.GeneratorExp):  # `[x[i].cpu() for i in ...]`
        return _host(expr.elt, flow, scope, own, depth)
    return False  # an attribute, an item of what is not shown: where it comes from is not


def _host_name(name: str, flow: DeviceFlow, scope: PortScope, own: str | None, depth: int) -> bool:
    """A name ``scope`` binds (not a parameter, not a loop's) to host data only, or to a list
    or dict made empty in place, which the flow makes a device value once one goes in."""
    if depth >= _DEPTH or name not in scope.local or name in scope.loop_bound or name == own:
        return False
    values = scope.values_of(name)
    if not values:
        return False  # a parameter, a `with ... as` target, an import: not shown
    if not all(_empty(v) or _host(v, flow, scope, own, depth + 1) for v in values):
        return False
    for node in scope.nodes:  # what else binds it or goes into it: host data too
        if isinstance(node, ast.NamedExpr) and node.target.id == name:
            return False
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            if node.target.id == name and not _host(node.value, flow, scope, own, depth + 1):
                return False
        elif (
            isinstance(node, ast.Call | ast.Assign | ast.AugAssign)
            and collector(node, scope, flow.module) == name
            and not all(_host(a, flow, scope, own, depth + 1) for a in added(node))
        ):
            return False
    return True


def _empty(value: ast.expr) -> bool:
    """``[]``, ``{}``, ``[0] * n``, ``list()``, ``dict()``, ``defaultdict(list)``."""
    if isinstance(value, ast.List | ast.Dict):
        return not (value.elts if isinstance(value, ast.List) else value.keys)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        side = value.left if isinstance(value.left, ast.List) else value.right
        return isinstance(side, ast.List) and all(isinstance(e, ast.Constant) for e in side.elts)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and not value.keywords:
        made = value.func.id
        return (made in ("list", "dict") and not value.args) or (
            made == "defaultdict" and len(value.args) <= 1
        )
    return False

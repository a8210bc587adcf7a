"""Device values the flow only guesses: what meets only those is reported, never moved.

The flow is flow-insensitive: a value is a device value once one path makes it one. Two
such values are guesses, and a port that moves what meets them turns a program that runs
into one that breaks (issue 31):

* a parameter that some callers hand a value the port cannot place on the device (a
  ``.cpu()`` copy, an item of a list of them, by what the caller's code shows: a value
  ``_call_flow`` reads as host data, or an item read out of a loop's variable), or that
  no caller hands a known device value (``norm(image)`` called from the program's device
  path and from its host path: the constant ``norm`` subtracts must stay where it is);
* an item unpacked from a container (``conf, image, label = errors[i]``, ``for a, b in
  pairs``, ``image = record[1]`` of a loop's record): the flow does not follow positions,
  so a record mixing a device value and a ``.cpu()`` copy makes every item a device value.

The invariant: the port moves a tensor to meet a value only where a value known to be on
the device is met there. Where the device operands of a meeting are only guessed ones, the
other operands are marked apart (``PortScope.guess_reach``/``guess_nodes``, not the sinks
every fix reads): nothing is moved for them, and TP503 reports a tensor made there, naming
the meeting (:func:`guess_message`).

One guess the port closes: a helper whose one guess is a parameter (``norm(image)``, handed
the model's input by ``norm(x)`` and ``x[i].cpu()`` copies by ``norm(k)``), where the port
owns the placement. What meets the parameter's values there must work on both paths, so a
tensor the port would move for them is moved at the meeting, to the parameter's device
(``image * STD.to(image.device)``: a no-op on the device path, a copy of a small tensor on
the host path), when every guessed meeting it reaches is such a one (:func:`meeting_moves`);
so is a tensor already on the device (placed by the port in an earlier round, or by the
program) where it meets them (:func:`crossing_moves`). ``getattr(image, "device", "cpu")``
where a caller may hand something else than a tensor (``PortScope.seed_tensors``).
"""

from __future__ import annotations

import ast

from torchport.check.port._calls import CREATORS, TYPED_CONSTRUCTORS, is_move
from torchport.check.port._iterated import ITERATES

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context
    from torchport.check._rule import Edit
    from torchport.check.port._device_flow import DeviceFlow, PortScope
    from torchport.check.port._models import QualName

_MADE = CREATORS | TYPED_CONSTRUCTORS

__all__ = [
    "crossing_moves",
    "guess_message",
    "guessed_values",
    "guessing",
    "known_on_device",
    "meeting_fix",
    "meeting_moves",
    "meets_known",
    "seeded",
    "share_with_module",
    "unpacked",
]


def seeded(ctx: Context, scopes: list[PortScope]) -> bool:
    """Whether a scope of the file has parameters seeded with host data or guesses
    (``PortScope.seed_tensors``, settled when the file's facts are made): once per file."""
    kept = ctx.memo.get("guesses.seeded")
    if not (isinstance(kept, tuple) and kept[0] is scopes):
        kept = ctx.memo["guesses.seeded"] = (scopes, any(s.seed_tensors for s in scopes))
    return bool(kept[1])


def unpacked(targets: list[ast.expr], value: ast.expr, scope: PortScope) -> bool:
    """Whether ``targets = value`` (or ``for targets in value``) reads items out of a record
    by position: a tuple target, or a name given a constant index of a loop's variable."""
    if isinstance(value, ast.Subscript):
        if isinstance(value.slice, ast.Slice):
            return False  # a slice: still the container, not an item of it
        base = value.value
        if not any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
            held = base.id if isinstance(base, ast.Name) else None
            return isinstance(value.slice, ast.Constant) and held in scope.loop_bound
    elif isinstance(value, ast.Name):
        if not any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
            return False
        base = value
    else:
        return False  # `out, h = model(x)`: a call's own result, not a container's item
    while isinstance(base, ast.Subscript):
        base = base.value
    if not isinstance(base, ast.Name):
        return True  # `self.records[i]`: where the records come from is not shown here
    made = scope.values_of(base.id) if base.id not in scope.loop_bound else []
    # `outs = model(x)` then `h, c = outs[1]`: a forward's own outputs are on the device
    return not made or not all(isinstance(v, ast.Call) for v in made)


def guessing(flow: DeviceFlow, scope: PortScope) -> bool:
    """Whether ``scope`` holds a guess: a guessed parameter or an unpacked item."""
    if scope.guess_seeds:
        return True
    if any(unpacked(t, v, scope) for t, v in scope.assigns):
        return True
    return any(
        unpacked([target], held, scope)
        for n in scope.nodes
        if isinstance(n, ITERATES)
        for target, held in flow.taken(n, scope)
    )


def guessed_values(flow: DeviceFlow, scope: PortScope) -> set[str]:
    """The names of ``scope``'s device values that are only guessed (its values short of
    those known: the given ones but the guessed parameters, and what follows from them
    without unpacking items)."""
    full = scope.values
    known = scope.given - scope.guess_seeds
    scope.values = known
    try:
        flow.fixed_point(scope, known, unpack=False)
    finally:
        scope.values = full
    return full - known


def known_on_device(flow: DeviceFlow, expr: ast.expr, scope: PortScope) -> bool:
    """Whether ``expr`` is a device value in ``scope`` leaving its guessed values out."""
    if not scope.guessed:
        return flow.on_device(expr, scope)
    full = scope.values
    scope.values = full - scope.guessed
    try:
        return flow.on_device(expr, scope)
    finally:
        scope.values = full


def meets_known(flow: DeviceFlow, node: ast.AST, scope: PortScope) -> bool:
    """Whether ``node`` combines a known device value (or a model) with its other operands."""
    full = scope.values
    scope.values = full - scope.guessed
    try:
        return bool(flow.operands_of(node, scope))
    finally:
        scope.values = full


def guess_message(flow: DeviceFlow, made: ast.AST, names: set[str]) -> str:
    """TP503's message for a tensor that meets only guessed device values: the meeting
    (its own, where it meets one as it is made: ``t * torch.ones(3)``; else the first one
    that reads one of ``names``, the names the tensor is bound to)."""
    meetings = [m for o, _, m in flow.guesses if o is made]
    meetings += [m for o, _, m in flow.guesses if names & {n.id for n in _names(o)}]
    meeting = meetings[0] if meetings else (flow.guesses[0][2] if flow.guesses else made)
    text = ast.unparse(meeting)
    text = text if len(text) <= 60 else text[:57] + "..."
    loose = flow.loose.get(id(meeting))  # a lambda whose calls the port does not see
    if loose:
        return f"this tensor meets, at `{text}`, {loose}"
    return (
        f"this tensor meets, at `{text}`, a value only some of the program's paths put on "
        "the device (a parameter some callers give host data, or an item unpacked from a "
        "record that may mix device values and host copies): the port does not move it; "
        "move it with `.to(x.device)` where it meets a tensor `x`, or keep both on one device"
    )


def _names(expr: ast.AST) -> list[ast.Name]:
    return [n for n in ast.walk(expr) if isinstance(n, ast.Name)]


def share_with_module(
    flow: DeviceFlow, scopes: list[PortScope], scope_of: dict[int, PortScope]
) -> None:
    """Spread the module-level names functions' meetings reach to the module: those of
    known meetings to its reach, those of guessed ones to its guessed reach; and a
    parameter's default that meets only guessed values (:func:`_guessed_defaults`) to the
    guessed reach of the scope that makes it."""
    module = scopes[0]
    for scope in scopes[1:]:
        module.reach |= {n for n in scope.reach if n not in scope.local}
        module.guess_reach |= {n for n in scope.guess_reach if n not in scope.local}
    holders = {id(module): module}
    for scope in scopes[1:]:
        for param, default, meeting in _guessed_defaults(flow, scope):
            why = _default_message(scope, param, meeting)
            flow.defaults.update((id(n), why) for n in ast.walk(default))
            holder = scope_of.get(id(default))  # (None: a method's, made in its class body)
            if holder is not None:  # what its names hold is reported where it is made too
                flow.mark(default, holder.guess_reach, holder.guess_nodes)
                holders[id(holder)] = holder
    flow.propagate(module)
    for holder in holders.values():
        flow.propagate(holder, guess=True)


def _guessed_defaults(flow: DeviceFlow, scope: PortScope) -> list[tuple[str, ast.expr, ast.AST]]:
    """The defaults of ``scope``'s parameters that meet only guessed device values there, each
    with a meeting of the function's guesses (``def f(t, w=torch.ones(2))`` handed the model's
    output and a ``.cpu()`` copy: ``w`` meets ``t`` only; the flow moves nothing for it, and
    the batch move of ``w`` (TP502) is written only for a parameter that meets a known device
    value, so the default is reported where it is made, never moved to ``device``: the host
    call would meet it there). Issue 31."""
    node = scope.node
    if scope.internal or not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return []
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True))
    pairs += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
    meetings = [m for _, s, m in flow.guesses if s is scope]
    return [
        (param.arg, default, meetings[0] if meetings else default)
        for param, default in pairs
        if param.arg in scope.guess_reach and param.arg not in scope.reach | scope.moved
    ]


def _default_message(scope: PortScope, param: str, meeting: ast.AST) -> str:
    """TP503's message for the default of ``param`` that meets only guessed values at
    ``meeting`` (:func:`_guessed_defaults`)."""
    text = ast.unparse(meeting)
    text = text if len(text) <= 60 else text[:57] + "..."
    name = getattr(scope.node, "name", "?")
    return (
        f"this tensor is the default of `{param}`, which meets, at `{text}`, a value only some "
        f"calls of `{name}` put on the device (others hand it host data): the port does not "
        f"move it; move it with `.to(x.device)` where it meets a tensor `x`, or keep both on "
        "one device"
    )


def meeting_moves(
    flow: DeviceFlow, made: ast.AST, made_in: PortScope, names: set[str]
) -> tuple[list[tuple[ast.expr, str, PortScope]], bool]:
    """The guessed meetings the tensor ``made`` (in ``made_in``, bound to ``names``) reaches
    that a move to a guessed parameter's device closes: (the operand, the device to move it to,
    the helper) for each; and whether every guessed meeting it reaches is one of those."""
    found: list[tuple[ast.expr, str, PortScope]] = []
    complete = True
    seen: set[int] = set()
    for operand, scope, _ in flow.guesses:
        if id(operand) in seen or not _reaches(flow, operand, scope, made, made_in, names):
            continue
        seen.add(id(operand))
        param = _guessed_parameter(scope)
        if _direct(operand, scope, made, made_in, names, flow) and param is not None:
            found.append((operand, param[1], scope))
        else:
            complete = False
    if found and isinstance(made, ast.Call) and _weight(made, made_in, names):
        return [], False  # a weight trained by hand: its copy is no constant (reported)
    return found, complete


def meeting_fix(
    ctx: Context, moves: list[tuple[ast.expr, str, PortScope]]
) -> tuple[tuple[Edit, ...], str]:
    """The edits of ``moves`` (:func:`meeting_moves`, :func:`crossing_moves`) and a message
    naming the first one's helper and why."""
    edits = tuple(e for o, d, _ in moves for e in ctx.append_call(o, f".to({d})"))
    if not moves:
        return edits, ""
    operand, device, helper = moves[0]
    name = getattr(helper.node, "name", "?")
    held = next(iter(helper.seed_tensors), "?")  # (its one parameter: `_guessed_parameter`)
    return edits, (
        f"`{name}` is handed host data by some callers (a `.cpu()` copy, an item of a list "
        f"of them) where `{held}` meets this tensor: the port moves `{ast.unparse(operand)}` "
        f"to `{device}` where they meet, so the device path and the host path both run"
    )


def crossing_moves(
    flow: DeviceFlow, scopes: list[PortScope], made: ast.AST, made_in: PortScope, names: set[str]
) -> list[tuple[ast.expr, str, PortScope]]:
    """Where the tensor ``made`` (in ``made_in``, bound to ``names``), on the device, meets a
    value of a guessed parameter in its helper (``image * STD + MEAN``, ``MEAN`` made with
    ``device=device``; ``(image - MEAN.to(image.device)) / STD``, which the flow takes for a
    known device value): (the operand, the device to move it to, the helper) for each. On
    the parameter's device path the move is a no-op; on its host path it puts the tensor
    back on the host, where the program made it."""
    if not isinstance(made, ast.Call) or (flow.ctx.qualname(made.func) or "") not in _MADE:
        return []  # (a torch creator: not `STD.to(image.device)`, a call on the device)
    if _weight(made, made_in, names):
        return []  # a weight trained by hand: its copy is no constant (reported as before)
    found: list[tuple[ast.expr, str, PortScope]] = []
    for scope in scopes:
        param = _guessed_parameter(scope) if scope.seed_tensors else None
        if param is None:
            continue
        held, device = param
        guessed = held in scope.guess_seeds
        derived = scope.guessed if guessed else _derived(scope, held, flow.ctx.qualname)
        for node in scope.nodes:
            if isinstance(node, ast.BinOp):
                sides = [node.left, node.right]
            elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
                sides = [node.left, node.comparators[0]]
            else:
                continue
            for mine, other in (sides, sides[::-1]):
                if (
                    not is_move(mine)
                    and _direct(mine, scope, made, made_in, names, flow)
                    and known_on_device(flow, mine, scope)
                    and (flow.on_device(other, scope) or not guessed)
                    and _computed(other, derived, flow.ctx.qualname)
                ):
                    found.append((mine, device, scope))
    return found


def _weight(made: ast.Call, made_in: PortScope, names: set[str]) -> bool:
    """Whether ``made`` (bound to ``names`` in ``made_in``) may be a weight trained by hand:
    ``requires_grad=True``, or ``requires_grad`` named on one of ``names`` there
    (``w.requires_grad_()``, ``w.requires_grad = True``, ``w = torch.zeros(2).requires_grad_()``).
    """
    if any(k.arg == "requires_grad" for k in made.keywords):
        return True
    for targets, value in made_in.assigns:  # `w = torch.zeros(2).requires_grad_()`
        if names & {n for t in targets for n in _target_names(t)} and any(
            isinstance(n, ast.Attribute) and n.attr.startswith("requires_grad")
            for n in ast.walk(value)
        ):
            return True
    return any(
        isinstance(n, ast.Attribute)
        and n.attr.startswith("requires_grad")
        and isinstance(n.value, ast.Name)
        and n.value.id in names
        for n in made_in.nodes
    )


def _direct(
    operand: ast.expr,
    scope: PortScope,
    made: ast.AST,
    made_in: PortScope,
    names: set[str],
    flow: DeviceFlow,
) -> bool:
    """Whether ``operand`` (in ``scope``) is the tensor ``made`` or a read of its name."""
    return operand is made or (
        isinstance(operand, ast.Name)
        and operand.id in names
        and (scope is made_in or (made_in is flow.module and operand.id not in scope.local))
    )


def _guessed_parameter(scope: PortScope) -> tuple[str, str] | None:
    """Where the helper's one parameter the port cannot place is a guess seed, or handed
    only host data (``PortScope.seed_tensors``), never rebound, and no item is unpacked from
    a record there: (it, the device to move to: ``image.device``, or ``getattr(image,
    "device", "cpu")`` where some caller may hand a number or an array)."""
    if len(scope.seed_tensors) != 1 or not scope.guess_seeds <= set(scope.seed_tensors):
        return None
    ((param, tensors),) = scope.seed_tensors.items()
    if scope.values_of(param) or param in scope.loop_bound:
        return None  # rebound: what it holds there is not what the callers hand
    a = getattr(scope.node, "args", None)
    if param in {getattr(getattr(a, k, None), "arg", None) for k in ("vararg", "kwarg")}:
        return None  # `*ts`, `**kw`: a tuple, a dict: no `.device`
    if any(unpacked(t, v, scope) for t, v in scope.assigns) or any(
        isinstance(n, ITERATES) and unpacked([n.target], n.iter, scope) for n in scope.nodes
    ):
        return None
    return param, f"{param}.device" if tensors else f'getattr({param}, "device", "cpu")'


def _derived(scope: PortScope, param: str, qualname: QualName) -> set[str]:
    """``param`` and the names ``scope`` binds to tensors computed from it (a fixed point
    over :func:`_computed`: not what a call of anything else than a tensor method or a torch
    function returns, ``optimizer = Adam(..., fused=fused)``)."""
    names = {param}
    changed = True
    while changed:
        changed = False
        for targets, value in scope.assigns:
            bound = {n for t in targets for n in _target_names(t)} - names
            if bound and _computed(value, names, qualname):
                names |= bound
                changed = True
    return names


def _computed(expr: ast.expr, names: set[str], qualname: QualName) -> bool:
    """Whether ``expr`` is a tensor computed from ``names``: one of them, arithmetic, an item,
    a tensor method of one (``image.float()``), or a torch function given one (``torch.exp(x)``)."""
    if isinstance(expr, ast.Name):
        return expr.id in names
    if isinstance(expr, ast.BinOp):
        return _computed(expr.left, names, qualname) or _computed(expr.right, names, qualname)
    if isinstance(expr, ast.UnaryOp):
        return _computed(expr.operand, names, qualname)
    if isinstance(expr, ast.Subscript):
        return _computed(expr.value, names, qualname)
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute):
        return False
    if (qualname(expr.func) or "").startswith("torch."):
        return any(_computed(a, names, qualname) for a in expr.args)
    return _computed(expr.func.value, names, qualname)


def _reaches(
    flow: DeviceFlow,
    operand: ast.expr,
    scope: PortScope,
    made: ast.AST,
    made_in: PortScope,
    names: set[str],
) -> bool:
    """Whether ``operand`` (in ``scope``) holds the tensor ``made``: through the bindings of
    ``scope`` and then of the module (as ``propagate`` and ``share_with_module`` spread)."""
    reach: set[str] = set()
    ids: set[int] = set()
    flow.mark(operand, reach, ids)
    for where in (scope, flow.module) if scope is not flow.module else (scope,):
        if where is not scope:
            reach = {n for n in reach if n not in scope.local}
        changed = True
        while changed:
            changed = False
            for targets, value in where.assigns:
                bound = [n for t in targets for n in _target_names(t)]
                if any(n in reach and n not in where.moved for n in bound) and id(value) not in ids:
                    flow.mark(value, reach, ids)
                    changed = True
        if id(made) in ids or (where is made_in and reach & names):
            return True
    return False


def _target_names(target: ast.expr) -> list[str]:
    """The names an assignment target binds (``_device_flow.names_of``, which imports this
    module)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for elt in target.elts for n in _target_names(elt)]
    return _target_names(target.value) if isinstance(target, ast.Starred) else []

"""What a loop does each iteration, for the rule on host reads in loops (TP202).

Whether a read runs every iteration (not under ``if step % N``), whether the
iteration queues device work before it, whether the loop itself depends on
the value read (a stop test) or ends on what it computes (a decoding loop), and
whether the code streams its results (where a read per step is the point).
Also, for TP203, whether a loop's variable is rebound in the body before a read.
"""

from __future__ import annotations

import ast
import weakref

from torchport.check._context import Context
from torchport.check._match import in_tests, probably_module, probably_tensor
from torchport.check.rules._torch_code import binds_torch

__all__ = [
    "decides_the_loop",
    "every_iteration",
    "graph_features",
    "launches_device_work",
    "read_on_host",
    "rebound_in_the_body",
    "stops_on_what_it_computes",
    "streams",
]

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# Calls that queue device work each iteration (besides model calls and torch functions).
_WORK = frozenset({"backward", "step", "forward", "generate", "sample"})
_NO_WORK = ("torch.cuda.", "torch.no_grad", "torch.device", "torch.is_tensor", "torch.Size",
            "torch.tensor", "torch.as_tensor", "torch.from_numpy")  # fmt: skip


def read_on_host(node: ast.Call, receiver: ast.expr, ctx: Context) -> bool:
    """Whether ``receiver.cpu()`` copies a tensor to read it: ``.cpu().numpy()`` or a tensor."""
    parent = ctx.parent
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return parent.attr in ("numpy", "tolist", "item")
    return probably_tensor(receiver, ctx) and not probably_module(receiver, ctx)


def launches_device_work(loop: ast.AST | None, ctx: Context) -> bool:
    """Whether each iteration of ``loop`` queues device work before reading.

    A model or loss call, ``backward()``, an optimizer ``step()``, or a torch
    function. A loop that only reads results computed before it waits once, at
    its first read; the rest are copies.
    """
    if isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        todo: list[ast.AST] = list(loop.body)
    elif isinstance(loop, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        todo = [loop.elt]
    elif isinstance(loop, ast.DictComp):
        todo = [loop.key, loop.value]
    else:
        return False
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _WORK:
                return True
            name = ctx.qualname(func)
            if name is not None and name.startswith("torch.") and not name.startswith(_NO_WORK):
                return True
            if name is None and probably_module(func, ctx):
                return True  # `model(x)`, `criterion(out, y)`, `self.net(x)`
        todo.extend(ast.iter_child_nodes(node))
    return False


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _runs_an_inner_loop(loop: ast.AST) -> bool:
    """Whether ``loop``'s body holds another loop (outside nested functions and classes)."""
    todo: list[ast.AST] = list(getattr(loop, "body", ()))
    while todo:
        node = todo.pop()
        if isinstance(node, _LOOPS):
            return True
        if not isinstance(node, _SCOPES):
            todo.extend(
                child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)
            )
    return False


def every_iteration(node: ast.Call, ctx: Context) -> bool:
    """In a loop's hot path, not under ``if step % N ...`` (reading every N steps is the advice).

    A read in a loop whose body runs an inner loop happens once per outer
    iteration (an epoch summary), which is not what the rule is about.
    """
    loop = ctx.loop_of(node)
    if loop is None or (isinstance(loop, _LOOPS) and _runs_an_inner_loop(loop)):
        return False
    counters = _counters(loop)
    for outer in reversed(ctx.ancestors):
        if outer is loop:
            return True
        if isinstance(outer, ast.If) and _rarely(outer.test, counters, ctx):
            return False
    return True


def _counters(loop: ast.AST) -> frozenset[str]:
    """The step counter a ``for`` loop binds: ``i`` of ``for i in range(...)`` or of
    ``for i, x in enumerate(...)``. Not the items themselves (``for name, p in
    model.named_parameters(): if name in decay:`` may hold on most iterations)."""
    if not isinstance(loop, ast.For | ast.AsyncFor) or not isinstance(loop.iter, ast.Call):
        return frozenset()
    called = getattr(loop.iter.func, "id", None)
    target = loop.target
    if called == "enumerate" and isinstance(target, ast.Tuple) and target.elts:
        target = target.elts[0]
    elif called != "range":
        return frozenset()
    return frozenset({target.id}) if isinstance(target, ast.Name) else frozenset()


def _rarely(test: ast.expr, counters: frozenset[str], ctx: Context) -> bool:
    """Whether ``test`` holds only now and then: a conjunct does (``step % 20 == 0 and
    debug``), every disjunct does (``last_batch or batch_idx % log_interval == 0``), or
    it is a name bound to a test of the loop's counter that does (``last_batch =
    batch_idx == last_idx``; not ``hit = pred == y``, which may hold every step)."""
    if isinstance(test, ast.BoolOp):
        parts = (_rarely(value, counters, ctx) for value in test.values)
        return any(parts) if isinstance(test.op, ast.And) else all(parts)
    if isinstance(test, ast.Name):
        bound = ctx.value_of(test)
        return (
            isinstance(bound, ast.Compare)
            and _now_and_then(bound, counters)
            and any(isinstance(n, ast.Name) and n.id in counters for n in ast.walk(bound))
        )
    return _now_and_then(test, counters)


def _now_and_then(test: ast.expr, counters: frozenset[str]) -> bool:
    """``step % N == 0`` (every N steps), ``i == 0`` or ``step is last`` (once), or a
    ``range``/``enumerate`` step counter among chosen steps (``if i in np.linspace(...):``).
    """
    if not isinstance(test, ast.Compare):
        return False
    if (
        isinstance(test.left, ast.Name)
        and test.left.id in counters
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.In)
    ):
        return True
    sides = [test.left, *test.comparators]
    if any(isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mod) for s in sides):
        return True
    return isinstance(test.ops[0], (ast.Eq, ast.Is))  # `if i == 0:`: once, not every iteration


def decides_the_loop(node: ast.Call, ctx: Context) -> bool:
    """Whether the value read is tested by an ``if``/``while`` inside the loop.

    ``if token.item() in stop_tokens: break``: the next iteration depends on the
    value, so it must be read now; nothing can wait until after the loop. Also
    through the one name it is assigned to (``top = s.max().item()``, ``if top <
    best:``).
    """
    loop = ctx.loop_of(node)
    child: ast.AST = node
    for outer in reversed(ctx.ancestors):
        if outer is loop:
            return _tested_through_a_name(ctx.parent, loop)
        if isinstance(outer, (ast.If, ast.While, ast.IfExp)) and child is outer.test:
            return True
        child = outer
    return False


def _tested_through_a_name(stmt: ast.AST | None, loop: ast.AST | None) -> bool:
    """``best = scores.max().item()`` then ``if best < top:`` in the same loop."""
    if not isinstance(stmt, ast.Assign) or loop is None:
        return False
    tested = _facts(loop)[1]
    return any(isinstance(t, ast.Name) and t.id in tested for t in stmt.targets)


def streams(ctx: Context) -> bool:
    """Whether the read sits in a generator that yields inside the loop: streaming per step."""
    loop = ctx.loop_of(ctx.ancestors[-1]) if ctx.ancestors else None
    return loop is not None and any(
        isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(loop)
    )


_HOST_INDEX_CALLS = frozenset({"range", "int", "slice"})


def indexes_on_host(node: ast.Call, ctx: Context) -> bool:
    """Whether the value read indexes a host container or sizes a host loop, now.

    ``classes[pred.item()]``, ``i = pred.item()`` then ``words.append(vocab[i])``,
    ``range(n.item())``: Python needs the number this iteration; accumulating on
    the device cannot stand in for it. Follows one assignment to a name, and
    only its reads inside the same loop.
    """
    if _used_as_index(node, ctx.parent):
        return True
    stmt = ctx.parent
    loop = ctx.loop_of(node)
    if not (
        isinstance(stmt, ast.Assign)
        and stmt.value is node
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and loop is not None
    ):
        return False
    scopes = ctx.scopes
    name = stmt.targets[0].id
    first, last = loop.lineno, getattr(loop, "end_lineno", None) or loop.lineno  # type: ignore[attr-defined]
    scope = scopes.resolve(name, stmt.targets[0])
    return any(
        first <= read.lineno <= last and _used_as_index(read, scopes.parent(read))
        for read in scopes.reads_of(name, scope)
    )


def _used_as_index(value: ast.AST, parent: ast.AST | None) -> bool:
    if isinstance(parent, ast.Subscript):
        return parent.slice is value
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name):
        return parent.func.id in _HOST_INDEX_CALLS and value in parent.args
    return False


def stops_on_what_it_computes(loop: ast.AST | None) -> bool:
    """Whether the loop ends on a value its body computes: it waits every iteration anyway.

    A ``break`` or ``return`` under a test of a name the body binds from a call or
    an index (beam search: ``k -= len(complete)`` then ``if k == 0: break``; a
    generation loop's ``done = ...``) needs that value before the next iteration,
    so the iteration waits for the device whatever else it reads; a further read
    costs its copy, not a wait. A counter (``step += 1``, ``step = epoch * n + i``)
    is not such a value: a training loop that stops after N steps never waits.
    """
    return loop is not None and _facts(loop)[0]


# Per loop, once (every read in a loop asks): whether it stops on what it computes, and
# the names its `if`/`while` tests read.
_FACTS: weakref.WeakKeyDictionary[ast.AST, tuple[bool, frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)


def _facts(loop: ast.AST) -> tuple[bool, frozenset[str]]:
    found = _FACTS.get(loop)
    if found is not None:
        return found
    computed: set[str] = set()
    tests: list[ast.expr] = []
    exits: list[ast.expr] = [loop.test] if isinstance(loop, ast.While) else []
    for node in ast.walk(loop):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            if any(isinstance(n, (ast.Call, ast.Subscript)) for n in ast.walk(node.value)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                computed.update(
                    n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)
                )
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            tests.append(node.test)
            if isinstance(node, ast.If) and any(
                isinstance(s, (ast.Break, ast.Return)) for s in node.body
            ):
                exits.append(node.test)

    def read(exprs: list[ast.expr]) -> set[str]:
        return {n.id for e in exprs for n in ast.walk(e) if isinstance(n, ast.Name)}

    stops = isinstance(loop, _LOOPS) and bool(read(exits) & computed)
    found = (stops, frozenset(read(tests)))
    _FACTS[loop] = found
    return found


def nothing_new_to_wait_for(node: ast.Call, value: ast.expr, ctx: Context) -> bool:
    """A read of a result already computed, in a loop that launches no device work."""
    computed_here = isinstance(value, ast.Call)  # `x.sum().item()`: an op, then a read
    return not computed_here and not launches_device_work(ctx.loop_of(node), ctx)


def the_wait_is_needed(node: ast.Call, method: str, ctx: Context) -> bool:
    """The loop needs the value now, or reading each step is the point."""
    if decides_the_loop(node, ctx) or streams(ctx) or in_tests(ctx):
        return True
    if handed_to_an_environment(node, ctx):
        return True  # `envs.step(action.cpu().numpy())`: the environment needs it now
    if method != "item":
        from torchport.check.rules._host_drawing import drawn_on_the_host  # on first use

        if drawn_on_the_host(node, ctx):
            return True  # `img = x.cpu().numpy()` then `cv2.rectangle(img, ...)`: drawn now
    if stops_on_what_it_computes(ctx.loop_of(node)):
        return True  # a decoding loop waits every iteration to decide whether to go on
    if method != "item":
        return False
    # `vocab[pred.item()]`; `n = quota - counts[i].item()` then `x = model.sample(n)`
    from torchport.check.rules._sizing_reads import sizes_the_next_call  # on first use

    return indexes_on_host(node, ctx) or sizes_the_next_call(node, ctx)


def handed_to_an_environment(node: ast.Call, ctx: Context) -> bool:
    """The value read is an argument of ``.step(...)`` (``envs.step(action.cpu().numpy())``).

    An environment steps on host values: the read is its input, needed this iteration.
    Only reads whose result goes straight in (through ``.numpy()``, ``.squeeze()``,
    indexing), not one used to compute another argument.
    """
    child: ast.AST = node
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, ast.Call):
            if outer.func is not child and any(a is child for a in outer.args):
                func = outer.func
                return isinstance(func, ast.Attribute) and func.attr == "step"
            if outer.func is not child:
                return False
        elif not (
            (isinstance(outer, ast.Attribute) and outer.value is child)
            or (isinstance(outer, ast.Subscript) and outer.value is child)
        ):
            return False
        child = outer
    return False


def prints_a_tensor_every_iteration(node: ast.Call, func: ast.expr, ctx: Context) -> bool:
    """``print(tensor)`` in every iteration of a loop that launches device work."""
    return (
        isinstance(func, ast.Name)
        and func.id == "print"
        and any(probably_tensor(a, ctx) for a in node.args)
        and every_iteration(node, ctx)
        and launches_device_work(ctx.loop_of(node), ctx)
        and binds_torch(ctx)
    )


def not_a_device_value(receiver: ast.expr, ctx: Context) -> bool:
    """``row.values`` (pandas: a tensor's ``values`` is a method), or code named for the CPU."""
    if isinstance(receiver, ast.Attribute) and receiver.attr == "values":
        return True
    return any(
        isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef)
        and (outer.name.endswith("_cpu") or "_cpu_" in outer.name)
        for outer in ctx.ancestors
    )


def rebound_in_the_body(root: ast.Name, loop: ast.For | ast.AsyncFor, ctx: Context) -> bool:
    """Whether, on every path from the loop's binding to ``root``, ``root``'s name is rebound.

    ``x = x.to(device)`` (then ``x.to(device)`` again: a copy on the device, a no-op),
    ``x = augment(x)`` (a new host tensor nobody pinned): neither is the loader's
    batch, so ``non_blocking`` gains nothing there. A rebinding on one branch only
    leaves the move reported: it may still be the batch.
    """
    node: ast.AST = root
    parent = ctx.scopes.parent(node)
    while parent is not None and node is not loop:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and any(s is node for s in block):
                before = block[: next(i for i, s in enumerate(block) if s is node)]
                if any(_surely_binds(stmt, root.id) for stmt in before):
                    return True
        node, parent = parent, ctx.scopes.parent(parent)
    return False


def _surely_binds(stmt: ast.stmt, name: str) -> bool:
    """Whether running ``stmt`` always binds ``name`` (an assignment, or both arms of an ``if``)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
        targets = [stmt.target]
    elif isinstance(stmt, ast.If):
        return all(any(_surely_binds(s, name) for s in arm) for arm in (stmt.body, stmt.orelse))
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        return any(_surely_binds(s, name) for s in stmt.body)
    else:
        return False
    return any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name
        for t in targets
        for n in ast.walk(t)
    )


# A DGL graph's feature stores: `g.ndata["feat"]`, `g.edata["w"]` (TP203).
_GRAPH_STORES = frozenset({"ndata", "edata", "srcdata", "dstdata"})


def graph_features(expr: ast.expr) -> bool:
    """Whether ``expr`` reads a graph's feature store (``batch_graphs.ndata['feat']``).

    A loader's ``pin_memory`` pins the tensors of a batch, not those a ``DGLGraph``
    holds: ``non_blocking=True`` overlaps nothing for them.
    """
    while isinstance(expr, (ast.Subscript, ast.Attribute, ast.Call)):
        if isinstance(expr, ast.Attribute) and expr.attr in _GRAPH_STORES:
            return True
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return False

"""Where the port loses track: a model it cannot follow, data the code keeps on the CPU.

The port finds a model's forwards by the names that hold it (see
:mod:`torchport.check.port._facts`). A model put into a list, a tuple, a set or a
dict (``models = {"a": model}``, ``for m in [model]:``) or bound into a
``functools.partial``, or handed to a method several of the file's classes
define (the receiver's class unknown), is called later under a name the port
does not know holds a model, so the tensors it meets there are neither moved nor reported. Such a
place is reported instead (TP523), rather than ending a port with "0 findings
left" and data on the CPU.

Followed, so not reported: a list (or the name bound to it) whose every read is a loop
whose target at its position is known to be a model (``nets = [a, b]``, ``for net, opt in
zip(nets, opts)``: :mod:`~torchport.check.port._loop_items`), ``len``/``in`` or an
``.append``; a model ``.append``ed to a list a loop of the file iterates, read some other
way too, is reported as a display is.

Left out: a container that builds a model itself (``nn.ModuleList([model])``,
``nn.Sequential(*[...])``: its forwards are known), and a tuple returned or
unpacked at once (``return model, optimizer``; ``a, b = model, head``), which the
port's call sites and bindings follow.

The code's own placements on the CPU are reported too (:func:`cpu_placements`):
a value that meets the model and is moved or made there on purpose
(``x.to("cpu")``, ``torch.ones(3, device=dev)`` with ``dev = "cpu"``, a parameter
``device="cpu"``) is the author's choice, which the port does not overrule, and
it would meet the model on the accelerator.
"""

from __future__ import annotations

import ast

from torchport.check.port._call_sites import partial_target
from torchport.check.port._device_flow import PortScope
from torchport.check.port._facts import PortFacts
from torchport.check.port._given_devices import cpu_here
from torchport.check.port._loop_items import loop_target, named_items
from torchport.check.port._workers import idle_worker

__all__ = ["cpu_placements", "device_escapes", "model_escapes", "sparse_inputs"]

# Calls that make a sparse (non-strided) tensor: the port moves what goes into them,
# but whether the accelerator takes them (MPS has no sparse kernels; many ops are
# missing elsewhere) only a run can say, so each one that meets the model is said.
_SPARSE = frozenset(
    {"torch.sparse_coo_tensor", "torch.sparse_csr_tensor", "torch.sparse_csc_tensor",
     "torch.sparse_bsr_tensor", "torch.sparse_bsc_tensor", "torch.sparse_compressed_tensor",
     "torch.sparse.FloatTensor", "torch.sparse.LongTensor"}
)  # fmt: skip
_TO_SPARSE = frozenset({"to_sparse", "to_sparse_csr", "to_sparse_csc", "to_sparse_coo"})

_PARTIALS = frozenset({"functools.partial", "functools.partialmethod"})


def sparse_inputs(facts: PortFacts) -> list[ast.Call]:
    """Sparse tensors made where they meet the model or its outputs (reported, TP523)."""
    found: list[ast.Call] = []
    if not facts.has_models:
        return found
    qualname = facts.ctx.qualname
    for scope in facts.scopes:
        if scope.internal:
            continue
        marked = scope.sink_nodes | scope.reach_values
        for node in scope.nodes:
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            sparse = qualname(func) in _SPARSE or (
                isinstance(func, ast.Attribute) and func.attr in _TO_SPARSE
            )
            if sparse and (
                id(node) in marked
                or any(id(a) in marked for a in node.args)
                or facts.on_device(node, scope)  # made from tensors the port put there
            ):
                found.append(node)
    return found


def model_escapes(facts: PortFacts) -> list[tuple[ast.expr, str]]:
    """``(model expression, where it goes)`` for each place a model leaves the port's sight."""
    found: list[tuple[ast.expr, str]] = []
    if not facts.has_models:
        return found
    qualname = facts.ctx.qualname
    for scope in facts.scopes:
        if scope.internal:
            continue
        for node in scope.nodes:
            if isinstance(node, ast.Call) and qualname(node.func) in _PARTIALS:
                if _followed_partial(node, facts):
                    continue  # `f = functools.partial(step, model)` only called: followed
                where = "`functools.partial`"
                items = [*node.args[1:], *(k.value for k in node.keywords)]
            elif isinstance(node, ast.Call) and id(node) in facts.unresolved_calls:
                assert isinstance(node.func, ast.Attribute)
                where = f"`.{node.func.attr}()`, a method several classes of the file define"
                items = [*node.args, *(k.value for k in node.keywords)]
            elif isinstance(node, (ast.List, ast.Tuple)) and not isinstance(node.ctx, ast.Load):
                continue  # `for a, b in ...`, `a, b = ...`: names bound, no container made
            elif isinstance(node, (ast.List, ast.Set)) or (
                isinstance(node, ast.Tuple) and not _unpacked(node, facts)
            ):
                where = f"a {type(node).__name__.lower()}"
                items = [e.value if isinstance(e, ast.Starred) else e for e in node.elts]
            elif isinstance(node, ast.Dict):
                where = "a dict"
                items = list(node.values)
            elif isinstance(node, ast.Call):
                found += [(m, "a list") for m in _appended_models(node, facts, scope)]
                continue
            else:
                continue
            if isinstance(node, (ast.List, ast.Set, ast.Tuple, ast.Dict)) and (
                _builds_model(node, facts, scope)
                or _only_called_back(node, facts, scope)
                or _only_looped_over(node, facts)
                or _worker_arguments(node, facts, scope)
            ):
                continue
            found += [(item, where) for item in items if facts.builds_model(item, scope)]
    return found


_OTHER_MODULE = "another module of the project defines it, which this file's port does not follow"


def device_escapes(facts: PortFacts) -> list[tuple[ast.expr, str, str]]:
    """``(device value, method, why)`` for each device value handed to a method the port
    cannot follow: one several of the file's classes define, the receiver's class not told
    (``obj.apply(model(x))``: which ``apply`` runs is unknown), one of a class another
    module of the project defines (that module's to port), or a function of another
    project module that makes CPU tensors or numpy reads (``utils.shift(model(x))`` with
    ``def shift(y): return y + torch.ones(2)``: that module is ported on its own, its
    parameters not known to hold device values)."""
    found: list[tuple[ast.expr, str, str]] = []
    project = facts.project
    if not (facts.unresolved_calls or project.plain_classes or project.cpu_functions) and not (
        project.modules
    ):
        return found
    for scope in facts.scopes:
        if scope.internal:
            continue
        for node in scope.nodes:
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name):
                if (
                    func.id not in project.cpu_functions and func.id not in project.tensor_functions
                ) or facts.ctx.scopes.resolve(func.id, func) is not facts.ctx.scopes.module:
                    continue  # (a name bound in a function is not the import)
                where = f"`{func.id}()`"
                why = _OTHER_MODULE
            elif not isinstance(func, ast.Attribute):
                continue
            elif id(node) in facts.unresolved_calls:
                where = f"`.{func.attr}()`"
                why = "several classes of the file define it; which one runs here is not told"
            elif (owner := _project_class(facts, func.value)) is not None:
                where = f"`{owner}.{func.attr}()`"
                why = "its class is another module's, which this file's port does not follow"
            elif _project_cpu_function(facts, func):
                where = f"`{ast.unparse(func)}()`"
                why = _OTHER_MODULE
            else:
                continue
            found += [
                (arg, where, why)
                for arg in [*node.args, *(k.value for k in node.keywords)]
                if facts.on_device(arg, scope) and not facts.builds_model(arg, scope)
            ]
    return found


def _project_cpu_function(facts: PortFacts, func: ast.Attribute) -> bool:
    """``utils.shift`` after ``import utils``: a function of another project module that
    makes CPU tensors (or reads one into numpy) in its body."""
    if not facts.project.modules:
        return False
    found = facts.project.lookup(func)
    return found is not None and found[0] in ("cpu_function", "tensor_function")


def _project_class(facts: PortFacts, receiver: ast.expr) -> str | None:
    """The class another module of the project defines (no model) that ``receiver`` is made
    from: ``Agent()``, or a name every binding of which is ``Agent(...)``. Its methods are
    that module's to port; what a device value meets there, this file's port cannot see."""
    values: list[ast.expr] = [receiver]
    if isinstance(receiver, ast.Name):
        bindings = facts.ctx.scopes.bindings(receiver.id, receiver)
        if not bindings or any(b.value is None for b in bindings):
            return None
        values = [b.value for b in bindings if b.value is not None]
    names = set()
    for value in values:
        if not isinstance(value, ast.Call):
            return None
        found = facts.project.lookup(value.func)
        if found is None or found[0] != "plain_class":
            return None
        names.add(found[1])
    return names.pop() if len(names) == 1 else None


def _followed_partial(node: ast.Call, facts: PortFacts) -> bool:
    """``f = functools.partial(step, model)`` of a function of the file, with every read of
    ``f`` a call: the port follows ``step`` with ``model`` in its parameter, and what ``f``
    is called with into the rest (``_call_sites.partial_target``)."""
    if partial_target(facts, node) is None:
        return False
    scopes = facts.ctx.scopes
    stmt = scopes.parent(node)
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return False
    name = stmt.targets[0]
    if len(scopes.bindings(name.id, name)) != 1:
        return False
    bound = scopes.resolve(name.id, name)
    reads = [r for r in scopes.loads_of(name.id) if scopes.resolve(name.id, r) is bound]
    for read in reads:
        call = scopes.parent(read)
        if not (isinstance(call, ast.Call) and call.func is read):
            return False
    return bool(reads)


def _only_called_back(node: ast.expr, facts: PortFacts, scope: PortScope) -> bool:
    """A literal whose models are only taken back out to be called: ``for m in [model]:``
    with every read of ``m`` a call, or ``models = {"a": model}`` with every read of
    ``models`` a call of an item (``models["a"](x)``), every item a call may take a model.
    Those calls are forwards the flow follows (their inputs are moved); anything else done
    with it is out of sight, and so is a call of an item that is no model (``for f in
    [model, host_fn]: f(x)``: what ``host_fn`` returns may be on the CPU)."""
    scopes = facts.ctx.scopes
    parent = scopes.parent(node)
    if isinstance(parent, (ast.For, ast.AsyncFor)) and parent.iter is node:
        target = parent.target
        if not isinstance(target, ast.Name):
            return False
        name, item = target.id, False
    elif (
        isinstance(parent, ast.Assign)
        and parent.value is node
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    ):
        target, name, item = parent.targets[0], parent.targets[0].id, True
    else:
        return False
    if len(scopes.bindings(name, target)) != 1:
        return False
    bound = scopes.resolve(name, target)
    # (any order: every read is asked)
    reads = [r for r in facts.loads_of(name) if scopes.resolve(name, r) is bound]
    for read in reads:
        callee: ast.expr = read
        called = scopes.parent(read)
        if item:  # `models["a"](x)`
            if not (isinstance(called, ast.Subscript) and called.value is read):
                return False
            callee, called = called, scopes.parent(called)
        if not (isinstance(called, ast.Call) and called.func is callee):
            return False
        taken = _items_taken(node, callee.slice if isinstance(callee, ast.Subscript) else None)
        if not all(facts.builds_model(v, scope) for v in taken):
            return False  # `for f in [model, host_fn]: f(x)`: what `host_fn` gives is unknown
    return bool(reads)


def _items_taken(literal: ast.expr, index: ast.expr | None) -> list[ast.expr]:
    """The items of ``literal`` a read may take: the item a constant ``index`` names
    (``pair[0]``, ``pair[-1]``, ``models["a"]``), else every item (a loop, an index not
    told)."""
    if isinstance(literal, ast.Dict):
        if isinstance(index, ast.Constant):
            for key, value in zip(literal.keys, literal.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == index.value:
                    return [value]
        return list(literal.values)  # (a `**other` entry: no key, its value kept)
    items: list[ast.expr] = getattr(literal, "elts", [])
    if (
        isinstance(index, ast.UnaryOp)
        and isinstance(index.op, ast.USub)
        and isinstance(index.operand, ast.Constant)
        and isinstance(index.operand.value, int)
    ):
        index = ast.Constant(-index.operand.value)  # `pair[-1]`
    if (
        isinstance(index, ast.Constant)
        and isinstance(index.value, int)
        and not any(isinstance(e, ast.Starred) for e in items)
        and -len(items) <= index.value < len(items)
    ):
        return [items[index.value]]
    return items


def _only_looped_over(node: ast.expr, facts: PortFacts) -> bool:
    """A literal (or a name bound to it alone) read only by loops whose target at its
    position the port knows is a model (``nets = [a, b]``, ``for net, opt in zip(nets,
    opts): net(x)``: :mod:`~torchport.check.port._loop_items`), by ``len``/``in``, or
    added to with ``.append``/``.insert``/``.extend``: each forward there is followed."""
    scopes = facts.ctx.scopes
    parent = scopes.parent(node)
    if (
        isinstance(parent, ast.Assign)
        and parent.value is node
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    ):
        return _list_followed(parent.targets[0], facts)
    return _reads_followed([node], facts)


def _list_followed(name: ast.Name, facts: PortFacts) -> bool:
    """Every read of the list ``name`` names is one :func:`_reads_followed` allows."""
    scopes = facts.ctx.scopes
    if named_items(scopes, name, strict=True, loads=facts.loads_of) is None:
        return False  # handed on, or items put in some other way
    bound = scopes.resolve(name.id, name)
    return _reads_followed(
        [r for r in facts.loads_of(name.id) if scopes.resolve(name.id, r) is bound], facts
    )


def _reads_followed(reads: list[ast.expr], facts: PortFacts) -> bool:
    scopes = facts.ctx.scopes
    looped = False
    for read in reads:
        holder = scopes.parent(read)
        if isinstance(holder, ast.Attribute) and holder.attr in ("append", "insert", "extend"):
            continue  # (named_items took what goes in: a loop target is a model only if
            # every item is one)
        if isinstance(holder, ast.Compare) or (
            isinstance(holder, ast.Call) and getattr(holder.func, "id", None) == "len"
        ):
            continue  # (`len(nets)`, `m in nets`: named_items allowed only those)
        target = loop_target(scopes, read)
        if target is None or not facts.holds_model(
            target, facts.scope_of.get(id(target), facts.module)
        ):
            return False
        looped = True
    return looped


def _appended_models(node: ast.Call, facts: PortFacts, scope: PortScope) -> list[ast.expr]:
    """The models ``node`` (``nets.append(net)``, ``.insert``, ``.extend([...])``) puts in
    a list a loop of the file iterates, whose reads the port does not all follow
    (:func:`_list_followed`: ``run_all(nets)`` too). A list no loop reads (``layers`` of
    ``nn.Sequential(*layers)``, one returned) is left as before (not reported)."""
    func = node.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr in ("append", "insert", "extend")
        and isinstance(func.value, ast.Name)
    ):
        return []
    added = node.args[-1:] if func.attr != "extend" else node.args[:1]
    if added and func.attr == "extend" and isinstance(added[0], (ast.List, ast.Tuple)):
        added = list(added[0].elts)
    models = [a for a in added if facts.builds_model(a, scope)]
    if not models:
        return []
    scopes = facts.ctx.scopes
    name = func.value
    bound = scopes.resolve(name.id, name)
    reads = [r for r in facts.loads_of(name.id) if scopes.resolve(name.id, r) is bound]
    if not any(loop_target(scopes, r) is not None for r in reads):
        return []  # (a list no loop of the file takes its models out of: left as before)
    found = scopes.bindings(name.id, name)
    followed = len(found) == 1 and isinstance(found[0].node, ast.Name)
    return [] if followed and _list_followed(found[0].node, facts) else models  # type: ignore[arg-type]


def _worker_arguments(node: ast.expr, facts: PortFacts, scope: PortScope) -> bool:
    """``args=(shared_model, ...)`` of a ``Process`` whose target uses each model it is
    handed only for its weights (:func:`~torchport.check.port._workers.idle_worker`)."""
    keyword = facts.parents.get(id(node))
    if not isinstance(keyword, ast.keyword) or keyword.arg != "args":
        return False
    call = facts.parents.get(id(keyword))
    return isinstance(call, ast.Call) and idle_worker(
        facts.ctx, call, lambda e: facts.builds_model(e, scope)
    )


def _unpacked(node: ast.Tuple, facts: PortFacts) -> bool:
    """A tuple returned or assigned to a tuple of names (``a, b = model, head``)."""
    parent = facts.parents.get(id(node))
    if isinstance(parent, ast.Return):
        return True
    return isinstance(parent, ast.Assign) and all(
        isinstance(t, (ast.Tuple, ast.List)) for t in parent.targets
    )


def _builds_model(node: ast.expr, facts: PortFacts, scope: object) -> bool:
    """Whether the call holding ``node`` (``nn.ModuleList([...])``) makes a model of it."""
    parent = facts.parents.get(id(node))
    if isinstance(parent, ast.Starred):
        parent = facts.parents.get(id(parent))
    return isinstance(parent, ast.Call) and facts.builds_model(parent, scope)  # type: ignore[arg-type]


def cpu_placements(facts: PortFacts) -> list[ast.Call]:
    """Calls that move or make a value on the CPU where the value meets the model."""
    found: list[ast.Call] = []
    cpu = cpu_here(facts)
    for scope in facts.scopes:
        if scope.internal:
            continue
        meets = scope.sink_nodes | scope.reach_values
        for node in scope.nodes:
            if not (isinstance(node, ast.Call) and id(node) in meets):
                continue
            target = node.args[0] if facts.to_cpu(node, scope) and node.args else None
            targets = [k.value for k in node.keywords if k.arg == "device"]
            targets = [target] if target is not None else targets
            if any(cpu(t, scope) and not facts.device_name.adopted(t) for t in targets):
                found.append(node)  # (not a parameter every caller hands a device: theirs)
    return found

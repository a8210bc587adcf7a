"""Where the batches of a file come from, and how each one is moved: the port's batch plan.

A batch is what a loop takes from a loader (or a tensor, or a list of tensors),
what ``next(iter(loader))`` returns, or a tensor a function is given. Only a
value the port knows is one (:mod:`torchport.check.port._kinds`) is moved; one
of unknown kind that reaches the model is reported (a parameter of a function
called from elsewhere, a loop over something the port cannot see into), and
one that is no tensor (a float, a string, a class) is left alone.
:func:`batch_plan` decides, for every batch that reaches the model (see
:mod:`torchport.check.port._facts`), how it moves:

* a tensor bound by the loop or by an assignment (``for x, y in loader``,
  ``inputs, labels = data``, ``x, y = next(it)``) is rebound right after it:
  ``x, y = x.to(device), y.to(device)``;
* a dict batch (``model(**batch)``, ``batch["ids"]`` next to ``model(batch)``)
  is rebuilt with its tensors moved;
* a container used only through its elements (``batch[0]``, ``batch["x"]``,
  ``batch.text``) has each element moved where it meets the model;
* a batch whose structure cannot be told (a whole ``batch`` also indexed by
  number; objects from a custom ``collate_fn`` with no ``.to``) is reported,
  never half-moved.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from torchport.check._context import Context
from torchport.check.port._calls import (
    HOST_READS,
    META_ATTRS,
    cpu_parameters,
    is_move,
)
from torchport.check.port._collate import collate_returning
from torchport.check.port._elements import position_kind
from torchport.check.port._facts import PortFacts, PortScope, port_facts
from torchport.check.port._kinds import Kind, ValueKinds, value_kinds
from torchport.check.port._module_functions import only_made_into_tensors
from torchport.check.port._object_parameters import ObjectParameters
from torchport.check.port._parameters import hands_back
from torchport.check.port._text_values import given_text

__all__ = ["BatchMove", "BatchPlan", "batch_plan"]

# What a batch name is moved as when the port knows its kind.
_MOVED = frozenset({Kind.TENSOR, Kind.BATCH})
_LEFT = frozenset({Kind.DEVICE, Kind.MODEL, Kind.LOADER, Kind.OTHER, Kind.NUMPY})
# A parameter one call site gives a number (a string, None) and another a device tensor: each
# call's value is left as it is (their join is UNKNOWN: no one kind holds both)
_NUMBER_OR_DEVICE = frozenset({Kind.OTHER, Kind.DEVICE})
# ... or a number and a numpy value (`scale(2.0)`, `scale(a.sum())`): no tensor to move; an
# array there that meets a device tensor is TP522's (`port/_numpy_arrays`)
_NUMBER_OR_NUMPY = frozenset({Kind.OTHER, Kind.NUMPY})


@dataclass
class BatchMove:
    """Names a statement binds that must move right after it (at a loop: first in its body)."""

    anchor: ast.stmt
    tensors: list[str] = field(default_factory=list)
    dicts: list[str] = field(default_factory=list)
    loader: bool = True  # from a loader: the copy may be non_blocking


@dataclass
class BatchPlan:
    """Every batch move of one file, by anchor statement, and what cannot be moved."""

    moves: dict[int, BatchMove] = field(default_factory=dict)
    elements: list[ast.expr] = field(default_factory=list)  # `batch[0]`-like nodes to move
    # (id of the node, name) -> (where to report, why): one finding per name
    unportable: dict[tuple[int, str], tuple[ast.AST, str]] = field(default_factory=dict)
    # ids of the parameters every read of which shows an object (`ObjectParameters`)
    objects: set[int] = field(default_factory=set)
    # the test behind `objects`, for a parameter of the file's function anywhere
    # (`_update_networks(args, ...)` whose `args` reaches no model): set by the planner
    object_test: ObjectParameters | None = None
    # (id of the binding statement, loop or function, name): every name the plan moves
    # or reports, so that nothing else reports it again
    covered: set[tuple[int, str]] = field(default_factory=set)


class _Planner:
    def __init__(self, facts: PortFacts) -> None:
        self.facts = facts
        self.ctx: Context = facts.ctx
        self.kinds: ValueKinds = value_kinds(facts)
        self.plan = BatchPlan()
        self.objects = ObjectParameters(facts)
        self.plan.object_test = self.objects

    def run(self) -> BatchPlan:
        if not self.facts.active:
            return self.plan
        for scope in self.facts.scopes:
            if scope.internal or not scope.reach:
                continue
            containers: set[str] = set()
            for node in scope.nodes:
                if isinstance(node, (ast.For, ast.AsyncFor)):
                    self._loop(node, scope, containers)
            if isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                containers |= self._unpacked_params(scope.node, scope)
            for node in scope.nodes:
                if isinstance(node, ast.Assign):
                    self._assign(node, scope, containers)
            if isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._params(scope.node, scope, containers)
            if containers:
                self._elements(scope, containers)
        return self.plan

    def _params(
        self,
        func: ast.FunctionDef | ast.AsyncFunctionDef,
        scope: PortScope,
        containers: set[str],
    ) -> None:
        """Tensors a function is given that reach its model: moved first thing in its body.

        Only parameters known to hold tensors (annotated ``torch.Tensor``, or given
        one by every call site in the file); one of unknown kind is reported, one
        that holds no tensor (a float, a string, a class) is left alone.
        """
        a = func.args
        move = BatchMove(func, loader=False)
        kept: tuple[str, ...] | None = None  # handed to `pack_padded_sequence`'s lengths: stay
        for param in (*a.posonlyargs, *a.args, *a.kwonlyargs):
            name = param.arg
            if name not in scope.reach or name in scope.moved or name in scope.models:
                continue
            if kept is None:
                kept = cpu_parameters(func, self.ctx)
            if name in kept:
                continue
            kind = self.kinds.callers.parameter(param)
            if kind in _LEFT:
                continue
            if kind is Kind.UNKNOWN and self.objects.holds_object(param, func):
                self.plan.objects.add(id(param))
                continue
            if kind is Kind.UNKNOWN and self._no_tensor_given(param, scope):
                continue  # `torch.tensor(s, dtype=...)`: that tensor is moved (or reported)
            if kind is Kind.UNKNOWN and self.kinds.callers.given(param) in (
                _NUMBER_OR_DEVICE,
                _NUMBER_OR_NUMPY,
            ):
                continue  # `forward(5)`, `forward(X)` of a tensor on the device: nothing to move
            self.plan.covered.add((id(func), name))
            if kind in _MOVED:
                usage = "tensor" if kind is Kind.TENSOR else self._kind(name, scope.nodes)
                self._sort(func, move, name, usage, "argument", containers)
            elif self.kinds.callers.never_called(func):
                continue  # called nowhere in its repository: it is never given anything
            else:
                why = self.kinds.callers.unknown(func, name)
                self.plan.unportable[(id(param), name)] = (param, why)
        if move.tensors or move.dicts:
            self.plan.moves[id(func)] = move

    def _no_tensor_given(self, param: ast.arg, scope: PortScope) -> bool:
        """Whether every read of ``param`` that sees the parameter itself is the data a torch
        creator makes a new tensor of (``s = torch.unsqueeze(torch.tensor(s, dtype=...), 0)``
        before ``self.policy(s)``): what meets the model is that tensor, which TP503 moves
        where it is made (or reports); the argument is never the value to move. Or every call
        site of the file hands it text (``_text_values.given_text``, n31an)."""
        parents = self.facts.parents
        made = only_made_into_tensors(self.ctx, param, scope.nodes, lambda n: parents.get(id(n)))
        return made or given_text(param, self.facts, self.kinds.callers)

    def _unpacked_params(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, scope: PortScope
    ) -> set[str]:
        """Parameters a function unpacks into what reaches its model (``x, y = batch``).

        ``def train_step(model, batch): x, y = batch; model(x)`` is given its batch
        by a caller (the loop is elsewhere): the names it unpacks move as a loop's do.
        """
        a = func.args
        params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)} - {"self", "cls"}
        return {
            node.value.id
            for node in scope.nodes
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id in params
            and node.value.id in scope.reach
            and node.value.id not in scope.moved
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
        }

    def _sort(
        self,
        node: ast.stmt,
        move: BatchMove,
        name: str,
        kind: str,
        what: str,
        containers: set[str],
    ) -> None:
        """File ``name`` by kind: a container to unpack, a dict or tensor to move, or unknown."""
        if kind == "container":
            containers.add(name)
        elif kind == "dict":
            move.dicts.append(name)
        elif kind == "tensor":
            move.tensors.append(name)
        else:
            where: ast.AST = node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                where = next(p for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg == name)
            self.plan.unportable[(id(node), name)] = (
                where,
                f"cannot tell whether the {what} `{name}` is a tensor or a list of "
                f"tensors: move it to `device` yourself",
            )

    # ------------------------------------------------------------ how each one moves

    def _loop(self, loop: ast.For | ast.AsyncFor, scope: PortScope, containers: set[str]) -> None:
        targets = _name_nodes(loop.target)
        wanted = [n for n in targets if n.id in scope.reach and n.id not in scope.moved]
        if not wanted:
            return
        move = BatchMove(loop)
        body = [n for stmt in loop.body for n in ast.walk(stmt)]
        objects = collate_returning(self.facts, self.ctx, loop, scope, with_to=False)
        for node in wanted:
            name = node.id
            known = self.kinds.unpacking.target(node)
            if known in _LEFT:
                continue
            self.plan.covered.add((id(loop), name))
            if known not in _MOVED:
                source = _short(loop.iter)
                self.plan.unportable[(id(loop), name)] = (
                    loop.target,
                    f"cannot tell whether `{name}`, taken from `{source}`, is a tensor (the "
                    f"port moves only what it knows is one): move it to `device` yourself",
                )
                continue
            kind = "tensor" if known is Kind.TENSOR else self._kind(name, body)
            if kind == "container" and self.kinds.unpacking.unpacks_item(node):
                kind = "tensor"  # `for x, lengths in loader`: the fields of a batch are tensors
            if kind == "container":
                containers.add(name)
            elif kind == "dict":
                move.dicts.append(name)
            elif kind == "tensor" and objects is None:
                move.tensors.append(name)
                # A collate_fn's own objects get their own `.to(device)`, no more.
                move.loader = move.loader and not collate_returning(
                    self.facts, self.ctx, loop, scope, with_to=True
                )
            else:
                why = (
                    f"`{name}` is built by the custom collate_fn `{objects}`, which returns "
                    f"objects with no `.to()`: give them a `.to(device)` method or move their "
                    f"tensors to `device` yourself"
                    if objects is not None
                    else f"cannot tell whether the batch `{name}` is a tensor or a list of "
                    f"tensors: move it to `device` yourself"
                )
                self.plan.unportable[(id(loop), name)] = (loop.target, why)
        if move.tensors or move.dicts:
            self.plan.moves[id(loop)] = move

    def _assign(self, node: ast.Assign, scope: PortScope, containers: set[str]) -> None:
        """``x, y = next(it)`` and ``inputs, labels = batch``: the names move right after."""
        value = node.value
        from_next = isinstance(value, ast.Call) and (
            (isinstance(value.func, ast.Name) and value.func.id == "next")
            or (isinstance(value.func, ast.Attribute) and value.func.attr in ("next", "__next__"))
        )
        unpacks = isinstance(value, ast.Name) and value.id in containers
        target = node.targets[0]
        # `x, y = make_data()` of a function of the file returning tuples: per position
        returned = (
            self.kinds.callers.returned_items(value.func)
            if isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and isinstance(target, ast.Tuple)
            else None
        )
        if len(node.targets) != 1 or not (from_next or unpacks or returned is not None):
            return
        if unpacks and not isinstance(target, ast.Tuple):
            return
        wanted = [n for n in _name_nodes(target) if n.id in scope.reach and n.id not in scope.moved]
        if not wanted:
            return
        move = BatchMove(node, loader=from_next or unpacks)
        for name_node in wanted:
            name = name_node.id
            known = (
                position_kind(target, name_node, returned)  # type: ignore[arg-type]
                if isinstance(returned, tuple)
                else self.kinds.unpacking.target(name_node)
            )
            if known in _LEFT or (returned is not None and known not in _MOVED):
                continue  # (not sure of a helper's item: where it meets the model says so)
            self.plan.covered.add((id(node), name))
            if known not in _MOVED:
                self.plan.unportable[(id(node), name)] = (
                    node,
                    f"cannot tell whether `{name}`, taken from `{_short(value)}`, is a "
                    f"tensor (the port moves only what it knows is one): move it to "
                    f"`device` yourself",
                )
                continue
            kind = "tensor" if unpacks or known is Kind.TENSOR else self._kind(name, scope.nodes)
            self._sort(node, move, name, kind, "batch", containers)
        if move.tensors or move.dicts:
            self.plan.moves[id(node)] = move

    def _kind(self, name: str, nodes: list[ast.AST], seen: frozenset[int] = frozenset()) -> str:
        """'tensor', 'dict', 'container' (used through elements only) or 'unknown'.

        A batch handed whole to a function of the file is used as that function
        uses its parameter: ``train_step(model, batch)`` whose body unpacks
        ``x, y = batch`` uses it as a container (the function moves what it
        unpacks), so the caller must not call ``batch.to(device)`` on a list.
        """
        parents = self.facts.parents
        whole = tensor = dict_like = indexed = opaque = False
        for node in nodes:
            if not (
                isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
            ):
                continue
            if self._element_rebound(node):
                continue  # after `batch = batch[0]`: the element's use, not the batch's
            parent = parents.get(id(node))
            passed = self._passed_as(node, parent, seen)
            if passed is not None:
                if passed == "container":
                    continue
                whole = True
                tensor = tensor or passed == "tensor"
                dict_like = dict_like or passed == "dict"
                indexed = indexed or passed == "unknown"
                continue
            if isinstance(parent, ast.Subscript) and parent.value is node:
                outer = parents.get(id(parent))
                if isinstance(outer, ast.keyword) and outer.arg is None:
                    return "unknown"  # `**batch["extra"]`: nested dicts, moved only in part
                index = parent.slice
                if isinstance(index, ast.Constant) and isinstance(index.value, str):
                    dict_like = True
                else:
                    indexed = True
            elif isinstance(parent, ast.Attribute) and parent.value is node:
                call = parents.get(id(parent))
                if parent.attr in ("items", "keys", "values"):
                    dict_like = True
                elif parent.attr in META_ATTRS or parent.attr in HOST_READS:
                    tensor = True
                elif isinstance(call, ast.Call) and call.func is parent:
                    whole = tensor = True  # a method of the batch itself: x.view(...)
            elif isinstance(parent, ast.keyword) and parent.arg is None:
                whole = dict_like = True
            elif isinstance(parent, ast.Assign) and isinstance(parent.targets[0], ast.Tuple):
                pass  # unpacked: moved where it is unpacked
            else:
                whole = True
                opaque = opaque or self._opaque_use(node, parent)
        if dict_like:
            return "dict"  # moved whole: every tensor value, the others kept
        if not whole:
            return "container"
        if opaque and not tensor:
            return "unknown"  # `step(model, *batch)`, `t.step(batch)`: may be a list
        return "unknown" if indexed and not tensor else "tensor"

    def _opaque_use(self, node: ast.Name, parent: ast.AST | None) -> bool:
        """Whether a whole use says nothing of the batch being a tensor or a list.

        ``*batch`` takes it apart; a method of an object (``trainer.step(batch)``)
        or a lambda may take a list: ``batch.to(device)`` there may call ``.to``
        on a list. A name called with it (``loss_func(out, yb)``) is taken for a
        function of tensors, as a loss is; a function of the file is followed
        (:meth:`_passed_as`).
        """
        if isinstance(parent, ast.Starred):
            return True
        if isinstance(parent, ast.keyword) and parent.arg is not None:
            parent = self.facts.parents.get(id(parent))
        if not isinstance(parent, ast.Call) or parent.func is node:
            return False
        func = parent.func
        scope = self.facts.scope_of.get(id(node)) or self.facts.module
        if self.kinds.of(func) is Kind.MODEL or self.facts.forward(parent, scope):
            return False
        if isinstance(func, ast.Name):
            return isinstance(self.ctx.value_of(func), ast.Lambda)
        name = self.ctx.qualname(func) or ""
        if name == "torch" or name.startswith("torch."):
            return False
        return isinstance(func, ast.Attribute) and not self._module(func.value)

    def _module(self, expr: ast.expr) -> bool:
        """Whether ``expr`` is rooted at an import (``np.`` in ``np.stack``), not a value."""
        root = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and self.ctx.qualname(root) is not None

    def _passed_as(
        self, node: ast.Name, parent: ast.AST | None, seen: frozenset[int]
    ) -> str | None:
        """How a file function uses ``node`` passed to it as an argument, or None if not one."""
        if isinstance(parent, ast.keyword) and parent.arg is not None:
            parent = self.facts.parents.get(id(parent))
        if not isinstance(parent, ast.Call) or parent.func is node:
            return None
        func = self.facts.functions.get(getattr(parent.func, "id", ""))
        if func is None or id(func) in seen:
            return None
        a = func.args
        positional = [*a.posonlyargs, *a.args]
        param: ast.arg | None = None
        if node in parent.args:
            index = parent.args.index(node)
            if any(isinstance(arg, ast.Starred) for arg in parent.args[:index]):
                return None
            param = positional[index] if index < len(positional) else None
        else:
            keyword = next((k for k in parent.keywords if k.value is node), None)
            if keyword is not None and keyword.arg is not None:
                named = (*a.args, *a.kwonlyargs)
                param = next((p for p in named if p.arg == keyword.arg), None)
        if param is None:
            return None
        scope = self.facts.scope_of_function(func)
        kind = self._kind(param.arg, scope.nodes, seen | {id(func)})
        if kind == "container" and (scope.internal or hands_back(func, param.arg)):
            # `def unpack(batch): return batch[0], batch[1]`: the function hands the
            # elements back rather than feeding them to the model, so nothing there
            # moves them: the caller's batch is one the port cannot place.
            return "unknown"
        return kind

    def _element_rebound(self, use: ast.Name) -> bool:
        """Whether ``use`` reads the name rebound to its own element (``batch = batch[0]``)."""
        found = self.ctx.scopes.reaching(use.id, use)
        value = found.value if found is not None else None
        return (
            isinstance(value, ast.Subscript)
            and isinstance(value.value, ast.Name)
            and value.value.id == use.id
        )

    def _elements(self, scope: PortScope, containers: set[str]) -> None:
        parents = self.facts.parents
        for node in scope.nodes:
            if not isinstance(node, (ast.Subscript, ast.Attribute)):
                continue
            value = node.value
            if not (isinstance(value, ast.Name) and value.id in containers):
                continue
            if not isinstance(node.ctx, ast.Load):
                continue
            key = id(node)
            if key not in scope.sink_nodes and key not in scope.reach_values:
                continue
            parent = parents.get(key)
            method = isinstance(parent, ast.Call) and parent.func is node
            if isinstance(node, ast.Attribute) and (node.attr in META_ATTRS or method):
                continue
            if isinstance(parent, ast.Attribute) and is_move(parents.get(id(parent), parent)):
                continue
            self.plan.elements.append(node)


def _name_nodes(target: ast.expr) -> list[ast.Name]:
    """Names a loop or assignment target binds (starred and attribute targets left out)."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _name_nodes(elt)]
    return []


def _short(expr: ast.expr) -> str:
    text = ast.unparse(expr)
    return text if len(text) <= 40 else text[:37] + "..."


def batch_plan(ctx: Context) -> BatchPlan:
    """The batch plan of the file ``ctx`` walks (computed once per walk)."""
    found = ctx.memo.get("port.batches")
    if found is None:
        found = ctx.memo["port.batches"] = _Planner(port_facts(ctx)).run()
    assert isinstance(found, BatchPlan)
    return found

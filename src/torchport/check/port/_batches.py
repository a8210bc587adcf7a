"""Where the batches of a file come from, and how each one is moved: the port's batch plan.

A batch is what a loop takes from a loader (or any iterable of tensors) or what
``next(...)`` returns. :func:`batch_plan` decides, for every batch that
reaches the model (see :mod:`torchport.check.port._facts`), how it moves:

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
from torchport.check.port._calls import HOST_READS, META_ATTRS, is_move
from torchport.check.port._facts import PortFacts, PortScope, port_facts

__all__ = ["BatchMove", "BatchPlan", "batch_plan"]

_NOT_BATCHES = frozenset({"range", "len", "reversed", "sorted", "open", "str", "map", "filter"})
_NOT_BATCH_QUALNAMES = frozenset({"os.listdir", "glob.glob", "os.walk", "itertools.product"})
_NOT_BATCH_METHODS = frozenset(
    {"items", "keys", "values", "parameters", "named_parameters", "children", "modules",
     "named_modules", "named_children", "readlines", "iterdir", "glob", "split", "splitlines"}
)  # fmt: skip
_ITER_WRAPPERS = frozenset({"tqdm", "iter", "islice", "trange", "cycle"})
_LITERALS = (
    ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Constant, ast.JoinedStr, ast.ListComp,
    ast.SetComp, ast.DictComp,
)  # fmt: skip
_DATALOADER = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
# Uses of a name that show it holds a tensor.
_TENSOR_USES = frozenset(
    {"size", "shape", "view", "reshape", "unsqueeze", "squeeze", "permute", "transpose",
     "float", "long", "half", "double", "contiguous", "dim", "ndim", "dtype", "flatten"}
)  # fmt: skip


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
    unportable: dict[int, tuple[ast.stmt, str]] = field(default_factory=dict)  # id -> (node, why)


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


class _Planner:
    def __init__(self, facts: PortFacts) -> None:
        self.facts = facts
        self.ctx: Context = facts.ctx
        self.plan = BatchPlan()

    def run(self) -> BatchPlan:
        for scope in self.facts.scopes:
            if scope.module_method or not scope.reach:
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

        Only parameters that are plainly tensors (a direct argument of the model, or
        used with a tensor method); a copy of a tensor already on the device is free.
        """
        a = func.args
        names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        wanted = [
            n
            for n in names
            if n not in ("self", "cls")
            and n in scope.reach
            and n not in scope.moved
            and n not in scope.models
        ]
        if not wanted:
            return
        move = BatchMove(func, loader=False)
        for name in wanted:
            if self._tensor_evidence(name, scope):
                kind = self._kind(name, scope.nodes)
                self._sort(func, move, name, kind, "argument", containers)
        if move.tensors or move.dicts:
            self.plan.moves[id(func)] = move

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
            self.plan.unportable[id(node)] = (
                node,
                f"cannot tell whether the {what} `{name}` is a tensor or a list of "
                f"tensors: move it to `device` yourself",
            )

    def _tensor_evidence(self, name: str, scope: PortScope) -> bool:
        parents = self.facts.parents
        for node in scope.nodes:
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            parent = parents.get(id(node))
            if isinstance(parent, ast.Attribute) and parent.attr in _TENSOR_USES:
                return True
            if isinstance(parent, ast.keyword):
                parent = parents.get(id(parent))
            if (
                isinstance(parent, ast.Call)
                and parent.func is not node
                and isinstance(parent.func, (ast.Name, ast.Attribute))
                and self.facts.holds_model(parent.func, scope)
            ):
                return True  # `model(x)`: a direct argument of the model itself
        return False

    # ------------------------------------------------------------ where batches come from

    def _batch_target(self, loop: ast.For | ast.AsyncFor, scope: PortScope) -> ast.expr | None:
        """The part of the loop's target that binds batches (after ``enumerate``'s index)."""
        it: ast.expr = loop.iter
        skip_first = False
        for _ in range(4):
            if not isinstance(it, ast.Call) or not it.args:
                break
            name = _call_name(it)
            if name == "enumerate" and not skip_first:
                skip_first, it = True, it.args[0]
            elif name in _ITER_WRAPPERS:
                it = it.args[0]
            else:
                break
        if not self._batchy(it, scope):
            return None
        target = loop.target
        if skip_first:
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                return None
            target = target.elts[1]
        return target

    def _batchy(self, it: ast.expr, scope: PortScope) -> bool:
        """Whether a loop's iterable may yield tensors (not a range, a literal, dict items)."""
        if isinstance(it, _LITERALS) or self.facts.builds_model(it, scope):
            return False
        if isinstance(it, ast.Call):
            name = _call_name(it)
            if name == "zip":
                return all(self._batchy(a, scope) for a in it.args)
            if name in _NOT_BATCHES or self.ctx.qualname(it.func) in _NOT_BATCH_QUALNAMES:
                return False
            if isinstance(it.func, ast.Attribute) and it.func.attr in _NOT_BATCH_METHODS:
                return False
        root = it
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            if self.facts.holds_model(root, scope):
                return False  # `for layer in model.layers`
            root = root.value
        if isinstance(root, ast.Name) and self.facts.holds_model(root, scope):
            return False
        return not (isinstance(it, ast.Name) and self._bound_to_literal(it.id, scope))

    def _bound_to_literal(self, name: str, scope: PortScope) -> bool:
        values = [
            v
            for targets, v in self.facts.assignments(scope)
            if any(isinstance(t, ast.Name) and t.id == name for t in targets)
        ]
        return bool(values) and all(
            isinstance(v, _LITERALS) or (isinstance(v, ast.Call) and _call_name(v) in _NOT_BATCHES)
            for v in values
        )

    # ------------------------------------------------------------ how each one moves

    def _loop(self, loop: ast.For | ast.AsyncFor, scope: PortScope, containers: set[str]) -> None:
        target = self._batch_target(loop, scope)
        names = _plain_names(target) if target is not None else []
        if not names:
            return
        wanted = [n for n in names if n in scope.reach and n not in scope.moved]
        if not wanted:
            return
        move = BatchMove(loop)
        body = [n for stmt in loop.body for n in ast.walk(stmt)]
        objects = self._collate_objects(loop, scope)
        unpacked = not isinstance(target, ast.Name)
        for name in wanted:
            kind = self._kind(name, body)
            if kind == "container" and unpacked:
                kind = "tensor"  # `for x, lengths in loader`: the fields of a batch are tensors
            if kind == "container":
                containers.add(name)
            elif kind == "dict":
                move.dicts.append(name)
            elif kind == "tensor" and objects is None:
                move.tensors.append(name)
                # A collate_fn's own objects get their own `.to(device)`, no more.
                move.loader = move.loader and not self._collate_has_to(loop, scope)
            else:
                why = (
                    f"`{name}` is built by the custom collate_fn `{objects}`, which returns "
                    f"objects with no `.to()`: give them a `.to(device)` method or move their "
                    f"tensors to `device` yourself"
                    if objects is not None
                    else f"cannot tell whether the batch `{name}` is a tensor or a list of "
                    f"tensors: move it to `device` yourself"
                )
                self.plan.unportable[id(loop)] = (loop, why)
        if move.tensors or move.dicts:
            self.plan.moves[id(loop)] = move

    def _assign(self, node: ast.Assign, scope: PortScope, containers: set[str]) -> None:
        value = node.value
        from_next = isinstance(value, ast.Call) and _call_name(value) == "next"
        unpacks = isinstance(value, ast.Name) and value.id in containers
        if len(node.targets) != 1 or not (from_next or unpacks):
            return
        target = node.targets[0]
        if unpacks and not isinstance(target, ast.Tuple):
            return
        names = _plain_names(target)
        wanted = [n for n in names if n in scope.reach and n not in scope.moved]
        if not wanted:
            return
        move = BatchMove(node)
        for name in wanted:
            kind = "tensor" if unpacks else self._kind(name, scope.nodes)
            self._sort(node, move, name, kind, "batch", containers)
        if move.tensors or move.dicts:
            self.plan.moves[id(node)] = move

    def _kind(self, name: str, nodes: list[ast.AST]) -> str:
        """'tensor', 'dict', 'container' (used through elements only) or 'unknown'."""
        parents = self.facts.parents
        whole = tensor = dict_like = indexed = False
        for node in nodes:
            if not (
                isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
            ):
                continue
            parent = parents.get(id(node))
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
        if dict_like:
            return "dict"  # moved whole: every tensor value, the others kept
        if not whole:
            return "container"
        return "unknown" if indexed and not tensor else "tensor"

    def _collate_objects(self, loop: ast.For | ast.AsyncFor, scope: PortScope) -> str | None:
        """The custom collate_fn of the loop's DataLoader when it returns objects with no .to()."""
        return self._collate(loop, scope, with_to=False)

    def _collate_has_to(self, loop: ast.For | ast.AsyncFor, scope: PortScope) -> bool:
        """Whether the loop's collate_fn returns objects of a class of the file that has .to()."""
        return self._collate(loop, scope, with_to=True) is not None

    def _collate(
        self, loop: ast.For | ast.AsyncFor, scope: PortScope, *, with_to: bool
    ) -> str | None:
        it = loop.iter
        while isinstance(it, ast.Call) and it.args and _call_name(it) in {"enumerate", "tqdm"}:
            it = it.args[0]
        if not isinstance(it, ast.Name):
            return None
        facts = self.facts
        for where in (scope, facts.module):
            for targets, value in facts.assignments(where):
                if not any(isinstance(t, ast.Name) and t.id == it.id for t in targets):
                    continue
                if (
                    not isinstance(value, ast.Call)
                    or self.ctx.qualname(value.func) not in _DATALOADER
                ):
                    continue
                collate = next((k.value for k in value.keywords if k.arg == "collate_fn"), None)
                func = facts.functions.get(getattr(collate, "id", ""))
                if func is not None and self._returns_objects(func, with_to=with_to):
                    return func.name
        return None

    def _returns_objects(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, *, with_to: bool
    ) -> bool:
        classes = self.facts.known.classdefs
        for node in ast.walk(func):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
                name = _call_name(node.value)
                cls = classes.get(name)
                has_to = cls is not None and any(
                    isinstance(m, ast.FunctionDef) and m.name == "to" for m in cls.body
                )
                if cls is not None and has_to is with_to:
                    return True
        return False

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


def _plain_names(target: ast.expr) -> list[str]:
    """Names a loop or assignment target binds (starred and attribute targets left out)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _plain_names(elt)]
    return []


_CACHE: list[tuple[PortFacts, BatchPlan]] = []


def batch_plan(ctx: Context) -> BatchPlan:
    """The batch plan of the file ``ctx`` walks (computed once per walk)."""
    facts = port_facts(ctx)
    if _CACHE and _CACHE[0][0] is facts:
        return _CACHE[0][1]
    plan = _Planner(facts).run()
    _CACHE[:] = [(facts, plan)]
    return plan

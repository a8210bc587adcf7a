"""What ``torchport port`` knows about one file: models, batches, and what meets the model.

Porting is knowing which names hold models, which tensors meet the model, and
where those tensors come from. :func:`port_facts` works it out once per file
(cached on the walk's :class:`~torchport.check._context.Context`), per scope
(the module body and each function, nested ones too), flow-insensitively:

* **models**: names (and ``self.attr`` of non-module classes) bound to a model
  expression (see :mod:`torchport.check.port._models`), parameters that call
  sites in the file pass a model to, or parameters named like one (``model``);
* **device values**: what a forward returns, and everything computed from it
  (``out``, ``loss``, ``pred = out.argmax(1)``) up to a host read (``.item()``);
* **sinks**: expressions that meet the model or a device value: a forward's
  arguments, and the other operands of a call, operator or comparison that has
  a device value among its operands (``criterion(out, y)``, ``pred == y``);
* **reach**: names whose value ends in a sink, directly or through
  assignments (``x = batch["x"]`` then ``model(x)``).

The TP5xx rules then move what reaches a sink at its source: the batch where a
loop binds it (:mod:`torchport.check.port._batches`), the tensor where a
factory builds it, the model where it is constructed. The methods of a class a
library drives (an ``nn.Module``, an optimizer, a ``Dataset``, any class with
an imported base) are library internals, not the script's loops: the port
moves nothing there (its tensors follow the module's inputs; TP504 makes them
on the input's device). A file that imports no torch at all is no PyTorch
program: it gets no facts, and nothing is ported there. The one ``device``
name every fix of a port uses is chosen here too (:meth:`PortFacts.device_at`).

One object, made of parts each in its own module: the device values, sinks and
reach are its :class:`~torchport.check.port._device_flow.DeviceFlow` (which asks
it what a model is), the device name its
:class:`~torchport.check.port._device_name.DeviceName`, captured tensors
:func:`~torchport.check.port._captures.mark_captured`.
"""

from __future__ import annotations

import ast
import bisect
import re
import weakref

from torchport.check._context import Context
from torchport.check._rule import Edit
from torchport.check.port._call_sites import callee, methods_by_name
from torchport.check.port._calls import cpu_only_device, grad_leaf
from torchport.check.port._captures import mark_captured
from torchport.check.port._choices import deliberate_cpu, own_placement
from torchport.check.port._device_flow import MOVES, NOT_FORWARD, DeviceFlow, PortScope, names_of
from torchport.check.port._device_name import DeviceName
from torchport.check.port._models import ModelKnowledge, library_driven
from torchport.check.port._project import own_tensor_functions, project_imports

__all__ = ["PortFacts", "PortScope", "port_facts"]

_MODEL_PARAM = re.compile(
    r"(^|_)(model|net|network|encoder|decoder|classifier|policy|critic|actor|generator"
    r"|discriminator)s?($|_|\d)",
    re.IGNORECASE,
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SKIP_FIELDS = frozenset({"ctx", "op", "ops"})


def _with_targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in node.items if i.optional_vars is not None]
    return []


class PortFacts:
    """The port's facts about one file (see the module docstring)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        tree = ctx.tree
        self.parents: dict[int, ast.AST] = {}
        self.classdefs: list[ast.ClassDef] = []
        self.scope_of: dict[int, PortScope] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.class_models: dict[int, set[str]] = {}  # id(ClassDef) -> {"self.model", ...}
        # id(ClassDef) -> the attributes it sets to modules it builds (rules/_module_tensors)
        self.class_submodules: dict[int, frozenset[str]] = {}
        # Calls of a method several of the file's classes define, receiver unknown.
        self.unresolved_calls: set[int] = set()
        self.module = PortScope(tree)
        self.scopes: list[PortScope] = [self.module]
        # Device values, sinks and reach; it asks this object what a model is (through
        # a weak reference: no cycle for the collector once the walk lets go of the facts).
        self.flow = DeviceFlow(ctx, weakref.proxy(self), self.module)
        # Expressions that meet the model or a device value directly, and their scope.
        self.operands = self.flow.operands
        self._function_scopes: dict[int, PortScope] = {}
        self.device_name = DeviceName(ctx)  # the one device name the port's fixes use
        self._blocks: dict[int, tuple[list[ast.stmt], int]] | None = None
        self._names: dict[str, list[tuple[int, int]]] | None = None
        # Gathered by the structure walk (_collect), so that the port needs no second walk
        # of the file for them (the scope map's node index): every name's places, the
        # imports, the moves that may name a device by number.
        self._name_spots: dict[str, list[tuple[int, int]]] = {}
        self._imports: list[ast.AST] = []
        self._moves: list[ast.Call] = []
        self.has_models = self.cpu_device_pending = False
        self.own_placement: ast.Call | None = None
        # A file with no torch in it is no PyTorch program: nothing to port there.
        # The project's own modules this file imports (`from model import Net`).
        self.project = project_imports(ctx)
        # (An import of torch spells "torch": a text without it needs no walk.)
        self.active = ("torch" in ctx.source and _imports_torch(tree)) or bool(self.project)
        self.known = ModelKnowledge([], ctx.qualname)
        self.tensor_functions: set[str] = set()
        if not self.active:
            return  # no scopes, no models, no operands: every port rule finds nothing
        self._collect(tree)
        self.known = ModelKnowledge(self.classdefs, ctx.qualname, self.project.lookup)
        # Functions (the file's own, or a project module's) whose result is a CPU tensor.
        self.tensor_functions = own_tensor_functions(ctx)
        extended = library_driven(self._imports, self.classdefs, ctx.qualname)
        for scope in self.scopes[1:]:  # outer scopes come first: their flag is known
            scope.module_method = scope.cls is not None and scope.cls.name in self.known.classes
            scope.internal = (
                scope.module_method
                or (scope.cls is not None and scope.cls.name in extended)
                or (scope.outer is not None and scope.outer.internal)
            )
        self._find_models()
        raw = False
        for scope in self.scopes:
            if not scope.internal:
                raw = self._raw_parameters(scope) or raw
                self.flow.run(scope)
        for scope in self.scopes:
            if not scope.internal:
                mark_captured(self, scope)
        for scope in self.scopes[1:]:  # what a lambda or closure captured reaches there too
            if not scope.internal:
                self.flow.propagate(scope)
        # Module-level names that functions feed to the model reach it too.
        for scope in self.scopes[1:]:
            self.module.reach |= {n for n in scope.reach if n not in scope.local}
        self.flow.propagate(self.module)
        self.has_models = (
            raw
            or bool(self.class_models)
            or any(s.models for s in self.scopes if not s.module_method)
        )
        # A `device = torch.device("cpu")` is rebound first (TP507); the moves wait a round,
        # so that they use that name instead of defining a second device.
        self.cpu_device_pending = any(
            isinstance(value, ast.Call)
            and isinstance(stmt := self.parents.get(id(value), value), ast.Assign)
            and cpu_only_device(stmt, ctx.qualname)
            and not deliberate_cpu(stmt, ctx)
            for s in self.scopes
            for _, value in s.assigns
        )
        # `model.to(rank)`: the program places its model per process; a move the port
        # wrote to "the accelerator" would land elsewhere, so its moves are reported.
        placements = [c for c in self._moves if own_placement((c,)) is not None]
        self.own_placement = placements[0] if len(placements) == 1 else None
        if len(placements) > 1:  # messages name the first in `ast.walk` order
            self.own_placement = own_placement(ctx.scopes.nodes_of(ast.Call))

    def block_of(self, stmt: ast.AST) -> tuple[list[ast.stmt], int] | None:
        """The block (``body``, ``orelse``, ``finalbody``) holding ``stmt``, and its index there."""
        if self._blocks is None:
            self._blocks = {}
            # Statements only: no expression holds a block, so they need not be walked.
            stack: list[ast.AST] = [self.ctx.tree]
            while stack:
                node = stack.pop()
                for field_name in ("body", "orelse", "finalbody", "handlers", "cases"):
                    block = getattr(node, field_name, None)
                    if not isinstance(block, list):
                        continue
                    for i, s in enumerate(block):
                        if field_name in ("body", "orelse", "finalbody"):
                            self._blocks[id(s)] = (block, i)
                        stack.append(s)
        return self._blocks.get(id(stmt))

    def mentions_between(self, name: str, first: ast.AST, last: ast.AST) -> bool:
        """Whether ``name`` appears after ``first`` ends and before ``last`` starts.

        Every name's places are indexed once per file (this is asked per loop).
        """
        if self._names is None:
            self._names = {k: sorted(v) for k, v in self._name_spots.items()}
        spots = self._names.get(name, [])
        after = (first.end_lineno or 0, first.end_col_offset or 0)  # type: ignore[attr-defined]
        before = (last.lineno, last.col_offset)  # type: ignore[attr-defined]
        return bisect.bisect_left(spots, before) > bisect.bisect_right(spots, after)

    def device_at(self, node: ast.AST) -> tuple[str, tuple[Edit, ...]] | None:
        """The file's one device name usable at ``node`` and the edits defining it.

        None (no fix here) while a CPU ``device`` waits to be rebound, where the
        program places its model itself, or where the name is not usable
        (:class:`~torchport.check.port._device_name.DeviceName`).
        """
        if self.cpu_device_pending or self.own_placement is not None:
            return None
        return self.device_name.at(node)

    # ------------------------------------------------------------ structure

    def _collect(self, tree: ast.Module) -> None:
        """One walk: parents, scopes, the nodes of each, assignments and local names."""
        # (node, its scope or None inside a class body); a class body is no scope of
        # ours, but the methods in it are.
        stack: list[tuple[ast.AST, PortScope | None]] = [(tree, self.module)]
        parents, scope_of = self.parents, self.scope_of
        fields_of: dict[type, tuple[str, ...]] = {}
        node_class = ast.AST
        while stack:
            node, scope = stack.pop()
            cls = type(node)
            self._note(node, cls)
            if scope is not None:
                scope.nodes.append(node)
                scope_of[id(node)] = scope
                if cls is ast.Name:
                    if node.ctx.__class__ is ast.Store:  # type: ignore[attr-defined]
                        scope.local.add(node.id)  # type: ignore[attr-defined]
                    continue
                if cls is ast.Assign:
                    scope.assigns.append((node.targets, node.value))  # type: ignore[attr-defined]
                elif cls is ast.AnnAssign or cls is ast.NamedExpr:
                    if node.value is not None:  # type: ignore[attr-defined]
                        scope.assigns.append(([node.target], node.value))  # type: ignore[attr-defined]
                elif cls in (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith):
                    for target in _with_targets(node):
                        scope.loop_bound.update(names_of(target))
                elif cls is ast.Import or cls is ast.ImportFrom:
                    for alias in node.names:  # type: ignore[attr-defined]
                        scope.local.add((alias.asname or alias.name).partition(".")[0])
            fields = fields_of.get(cls)
            if fields is None:
                fields = fields_of[cls] = tuple(f for f in cls._fields if f not in _SKIP_FIELDS)
            for field_name in fields:
                value = getattr(node, field_name, None)
                for child in value if value.__class__ is list else (value,):
                    if not isinstance(child, node_class):
                        continue
                    parents[id(child)] = node
                    if isinstance(child, _FUNCTIONS):
                        self._enter_function(child, node, scope, stack)
                    elif isinstance(child, ast.ClassDef):
                        self.classdefs.append(child)
                        if scope is not None:
                            scope.local.add(child.name)
                        stack.append((child, None))
                    else:
                        stack.append((child, scope))

    def _note(self, node: ast.AST, cls: type) -> None:
        """Record a name's place, an import, or a move (see ``_name_spots``)."""
        if cls is ast.Name:
            spot = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
            self._name_spots.setdefault(node.id, []).append(spot)  # type: ignore[attr-defined]
        elif cls is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if func.__class__ is ast.Attribute and func.attr in ("to", "cuda"):
                self._moves.append(node)  # type: ignore[arg-type]
        elif cls is ast.Import or cls is ast.ImportFrom:
            self._imports.append(node)

    def _enter_function(
        self,
        func: ast.FunctionDef | ast.AsyncFunctionDef,
        node: ast.AST,
        scope: PortScope | None,
        stack: list[tuple[ast.AST, PortScope | None]],
    ) -> None:
        inner = PortScope(func, cls=node if isinstance(node, ast.ClassDef) else None, outer=scope)
        if isinstance(node, ast.Module):
            self.functions[func.name] = func
        self.scopes.append(inner)
        if scope is not None:
            scope.nodes.append(func)
            scope.local.add(func.name)
            self.scope_of[id(func)] = scope
        defaults = [d for d in func.args.kw_defaults if d is not None]
        for part in (*func.decorator_list, *func.args.defaults, *defaults):
            self.parents[id(part)] = func
            stack.append((part, scope))
        for stmt in func.body:
            self.parents[id(stmt)] = func
            if isinstance(stmt, _FUNCTIONS):
                self._enter_function(stmt, func, inner, stack)  # a nested function: a scope
            elif isinstance(stmt, ast.ClassDef):
                self.classdefs.append(stmt)
                inner.local.add(stmt.name)
                stack.append((stmt, None))
            else:
                stack.append((stmt, inner))
        a = func.args
        for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
            if p is not None:
                inner.local.add(p.arg)
        # Annotations and type parameters are in no scope of ours, but their names and
        # calls are the file's: noted as the walk notes every other node.
        notes = [p.annotation for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                 if p is not None and p.annotation is not None]  # fmt: skip
        notes += [func.returns] if func.returns is not None else []
        notes += getattr(func, "type_params", [])
        for note in notes:
            for n in ast.walk(note):
                self._note(n, type(n))

    def bindings(self, name: str, scope: PortScope) -> list[ast.expr] | None:
        """The values assigned to ``name`` where ``scope`` reads it (None: a parameter, a loop)."""
        where = scope
        if name not in scope.local:
            where = self.module
        elif isinstance(scope.node, _FUNCTIONS):
            a = scope.node.args
            params = (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
            if any(p is not None and p.arg == name for p in params):
                return None
        if name in where.loop_bound:
            return None
        return where.values_of(name)

    def on_device(self, expr: ast.expr, scope: PortScope) -> bool:
        """Whether ``expr`` is a device value in ``scope`` (:meth:`DeviceFlow.on_device`)."""
        return self.flow.on_device(expr, scope)

    def to_cpu(self, call: ast.expr, scope: PortScope) -> bool:
        """Whether ``call`` is ``x.to(<the CPU>)`` (:meth:`DeviceFlow.to_cpu`)."""
        return self.flow.to_cpu(call, scope)

    def names_cpu(self, expr: ast.expr, scope: PortScope) -> bool:
        """Whether a device expression is the CPU (:meth:`DeviceFlow.names_cpu`)."""
        return self.flow.names_cpu(expr, scope)

    # ------------------------------------------------------------ models

    def holds_model(self, expr: ast.expr, scope: PortScope) -> bool:
        """Whether a name or ``self.attr`` holds a model in ``scope``."""
        if isinstance(expr, ast.Name):
            if expr.id in scope.models:
                return True
            return expr.id not in scope.local and expr.id in self.module.models
        if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
            return False
        owner = expr.value.id
        if owner == "self" and scope.cls is not None:
            return expr.attr in self.class_models.get(id(scope.cls), ())
        if not self.class_models or owner in scope.models:
            return False
        # `trainer.model` where `trainer = Trainer(...)` and Trainer sets `self.model`
        for value in self.bindings(owner, scope) or ():
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                cls = self.known.classdefs.get(value.func.id)
                if cls is not None and expr.attr in self.class_models.get(id(cls), ()):
                    return True
        return False

    def builds_model(self, expr: ast.expr, scope: PortScope) -> bool:
        """Whether ``expr`` evaluates to a model in ``scope``."""
        return self.known.builds(expr, lambda e: self.holds_model(e, scope))

    def _find_models(self) -> None:
        for _ in range(3):  # factories, call sites and bindings feed each other
            for scope in self.scopes:
                if not scope.module_method:
                    self._scope_models(scope)
            self._params_from_calls()
            for name, func in self.functions.items():
                scope = self.scope_of_function(func)
                if any(
                    isinstance(n, ast.Return)
                    and n.value is not None
                    and self.builds_model(n.value, scope)
                    for n in scope.nodes
                ):
                    self.known.factories.add(name)

    def cpu_tensor_call(self, call: ast.AST) -> bool:
        """``make_mask(n)``: a call of a function (this file's or a project module's)
        whose every return is a tensor made on the CPU."""
        if not isinstance(call, ast.Call):
            return False
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.tensor_functions:
            return self.ctx.scopes.resolve(func.id, func) is self.ctx.scopes.module
        found = self.project.lookup(func)
        return found is not None and found[0] == "tensor_function"

    def _raw_parameters(self, scope: PortScope) -> bool:
        """Seed a hand-trained model: tensors made with ``requires_grad=True`` are the weights.

        ``w = torch.randn(4, 2, requires_grad=True)`` trained by hand (no ``nn.Module``)
        is a model as much as ``nn.Linear`` is: it is a device value (what meets it
        is moved), and its factory is moved (TP503 keeps it a leaf).
        """
        found = False
        for targets, value in scope.assigns:
            made = grad_leaf(value, self.ctx.qualname)
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if made is None or not names:
                continue
            scope.values.update(names)
            scope.sink_nodes.add(id(made))
            found = True
        return found

    def scope_of_function(self, func: ast.AST) -> PortScope:
        """The scope a function's body runs in."""
        found = self._function_scopes.get(id(func))
        if found is None:
            self._function_scopes = {id(s.node): s for s in self.scopes}
            found = self._function_scopes[id(func)]
        return found

    def _scope_models(self, scope: PortScope) -> None:
        node = scope.node
        if isinstance(node, _FUNCTIONS):
            a = node.args
            for p in (*a.posonlyargs, *a.args, *a.kwonlyargs):
                if _MODEL_PARAM.search(p.arg):
                    scope.models.add(p.arg)
        changed = True
        while changed:
            changed = False
            for targets, value in scope.assigns:
                if not self.builds_model(value, scope):
                    continue
                for target in targets:
                    if isinstance(target, ast.Name) and target.id not in scope.models:
                        scope.models.add(target.id)
                        changed = True
                    elif (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                        and scope.cls is not None
                    ):
                        found = self.class_models.setdefault(id(scope.cls), set())
                        if target.attr not in found:
                            found.add(target.attr)
                            changed = True
        for n in scope.nodes:
            func = getattr(n, "func", None)
            if (
                isinstance(n, ast.Call)
                and isinstance(func, ast.Attribute)
                and func.attr in MOVES
                and isinstance(func.value, ast.Name)
                and isinstance(self.parents.get(id(n)), ast.Expr)
            ):
                # `model.to(device)` as a statement moves a module in place; `y = x.to(d)`
                # leaves `x` where it was (a tensor's move returns a new tensor).
                scope.moved.add(func.value.id)

    def _params_from_calls(self) -> None:
        methods = methods_by_name(self.scopes)
        for scope in self.scopes:
            if scope.module_method:
                continue
            for node in scope.nodes:
                if not isinstance(node, ast.Call):
                    continue
                found = callee(self, node, scope, methods)
                if found is None:
                    continue
                func, bound = found
                params = [*func.args.posonlyargs, *func.args.args][bound:]
                target = self.scope_of_function(func)
                for i, arg in enumerate(node.args):
                    if i < len(params) and self.builds_model(arg, scope):
                        target.models.add(params[i].arg)
                for kw in node.keywords:
                    if kw.arg is not None and self.builds_model(kw.value, scope):
                        target.models.add(kw.arg)

    def forward(self, call: ast.Call, scope: PortScope) -> bool:
        """Whether ``call`` runs a model (``model(x)``, ``self.net(x)``, ``model.generate(x)``)."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in NOT_FORWARD:
            return False
        root = func
        while isinstance(root, ast.Attribute) and not self.holds_model(root, scope):
            root = root.value
        return isinstance(root, (ast.Name, ast.Attribute)) and self.holds_model(root, scope)


def port_facts(ctx: Context) -> PortFacts:
    """The facts of the file ``ctx`` walks, computed on the first call and reused after."""
    found = ctx.memo.get("port.facts")
    if found is None:
        found = ctx.memo["port.facts"] = PortFacts(ctx)
    assert isinstance(found, PortFacts)
    return found


def _imports_torch(tree: ast.Module) -> bool:
    """Whether the file imports torch (or anything from it) anywhere.

    A walk that stops at the first torch import (near the top, where imports are),
    not the scope map's node index: a file with no torch needs no index.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name == "torch" or a.name.startswith("torch.") for a in node.names):
                return True
        elif (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and node.module
            and (node.module == "torch" or node.module.startswith("torch."))
        ):
            return True
    return False

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
it what a model is), the device name its :class:`~torchport.check.port._device_name.DeviceName`,
captured tensors :func:`~torchport.check.port._captures.mark_captured`, the file's shape
(parents, scopes, names' places) its walk, :class:`~torchport.check.port._structure.FileStructure`.
"""

from __future__ import annotations

import ast
import re
import weakref

from torchport.check._context import Context
from torchport.check._rule import Edit
from torchport.check.port._call_flow import OwnCall, run_flow
from torchport.check.port._call_sites import callees, methods_by_name
from torchport.check.port._calls import cpu_only_device
from torchport.check.port._captures import grad_leaves, mark_captured, mark_weights_made_later
from torchport.check.port._choices import deliberate_cpu, flag_placement, own_placement
from torchport.check.port._device_flow import MOVES, NOT_FORWARD, DeviceFlow, PortScope
from torchport.check.port._device_name import DeviceName
from torchport.check.port._global_values import share_globals
from torchport.check.port._guesses import share_with_module
from torchport.check.port._instances import HostMethods, converted_inputs
from torchport.check.port._lambda_factories import lambda_factory_returns, spelled_factories
from torchport.check.port._lambdas import followed_lambdas
from torchport.check.port._loop_items import loop_candidates, mark_loop_models
from torchport.check.port._models import ModelKnowledge, library_driven
from torchport.check.port._module_functions import own_tensor_functions
from torchport.check.port._project_view import project_of
from torchport.check.port._structure import FileStructure

__all__ = ["PortFacts", "PortScope", "port_facts"]

_MODEL_PARAM = re.compile(
    r"(^|_)(model|net|network|encoder|decoder|classifier|policy|critic|actor|generator"
    r"|discriminator)s?($|_|\d)",
    re.IGNORECASE,
)
# Words that make a model word name a setting of one (`lr_actor`, `policy_noise`,
# `model_path`, `n_critics`, `actor_hidden_dim`): no parameter so named is a model.
_SETTING_WORDS = frozenset(
    {"lr", "learning", "rate", "path", "dir", "file", "filename", "name", "type", "kind",
     "dim", "dims", "size", "sizes", "hidden", "units", "width", "depth", "num",
     "n", "noise", "freq", "frequency", "steps", "std", "clip", "coef", "decay", "eps",
     "tau", "gamma", "config", "cfg", "kwargs", "args", "arch", "id", "idx", "index",
     "count", "epochs", "iters", "mode", "url", "checkpoint", "ckpt", "update", "delay"}
)  # fmt: skip
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class PortFacts:
    """The port's facts about one file (see the module docstring)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        tree = ctx.tree
        self.class_models: dict[int, set[str]] = {}  # id(ClassDef) -> {"self.model", ...}
        # id(ClassDef) -> the attributes it sets to modules it builds (rules/_module_tensors)
        self.class_submodules: dict[int, frozenset[str]] = {}
        # Calls of a method several of the file's classes define, receiver unknown.
        self.unresolved_calls: set[int] = set()
        self.module = PortScope(tree)
        # Device values, sinks and reach; it asks this object what a model is (through
        # a weak reference: no cycle for the collector once the walk lets go of the facts).
        self.flow = DeviceFlow(ctx, weakref.proxy(self), self.module)
        # Expressions that meet the model or a device value directly, and their scope.
        self.operands = self.flow.operands
        self._function_scopes: dict[int, PortScope] = {}
        self._own_calls: list[OwnCall] = []  # calls of the file's functions (_find_models)
        # Method names of the file's classes that return only numpy or numbers, by class.
        self._host_methods: HostMethods | None = None
        self.device_name = DeviceName(ctx)  # the one device name the port's fixes use
        self.has_models = self.cpu_device_pending = False
        self.own_placement: ast.Call | None = None
        # A file with no torch in it is no PyTorch program: nothing to port there.
        # The project's own modules this file imports (`from model import Net`).
        self.project = project_of(ctx)  # the fix's project view too
        # (An import of torch spells "torch": a text without it needs no walk; torch's names
        # reached through the project's compat module do not: `from compat import L`.)
        self.active = (
            ("torch" in ctx.source and _imports_torch(tree))
            or bool(self.project)
            or ctx.has_project_torch
        )
        self.known = ModelKnowledge([], ctx.qualname)
        self.tensor_functions: set[str] = set()
        # Parents, scopes and their nodes, every name's places, the imports, the moves:
        # one walk, only for a PyTorch program (no scopes: every port rule finds nothing).
        self.structure = FileStructure(tree, self.module, walk=self.active)
        self.parents = self.structure.parents
        self.classdefs = self.structure.classdefs
        self.scope_of = self.structure.scope_of
        self.functions = self.structure.functions
        self.scopes = self.structure.scopes
        if not self.active:
            return
        self.known = ModelKnowledge(self.classdefs, ctx.qualname, self.project.lookup, ctx.tree)
        # Functions (the file's own, or a project module's) whose result is a CPU tensor.
        self.tensor_functions = own_tensor_functions(ctx)
        extended = library_driven(self.structure.imports, self.classdefs, ctx.qualname)
        for scope in self.scopes[1:]:  # outer scopes come first: their flag is known
            scope.module_method = scope.cls is not None and scope.cls.name in self.known.classes
            scope.internal = (
                scope.module_method
                or (scope.cls is not None and scope.cls.name in extended)
                or (scope.outer is not None and scope.outer.internal)
            )
        self._find_models()
        # What the program's own device choices govern (`DeviceName.kept_for`): its call graph.
        self.device_name.calls = [(c[1].node, c[3].node) for c in self._own_calls]
        structure = self.structure
        self.flow.followed = followed_lambdas(structure.lambdas, structure.names, self.parents)
        raw = run_flow(self, self._own_calls)  # (hand-trained weights: raw_parameters)
        share_globals(self)  # and those functions leave in the module's names
        for scope in self.scopes:
            if not scope.internal:
                mark_captured(self, scope)
        for scope in self.scopes[1:]:  # what a lambda or closure captured reaches there too
            if not scope.internal:
                self.flow.propagate(scope)
        # Module-level names that functions feed to the model reach it too (and guesses).
        share_with_module(self.flow, self.scopes, self.scope_of)
        self.has_models = (
            raw
            or bool(self.class_models)
            or any(s.models for s in self.scopes if not s.module_method)
        )
        # A CPU `device` is rebound first (TP507); the moves wait a round to use that name.
        self.cpu_device_pending = any(
            isinstance(value, ast.Call)
            and isinstance(stmt := self.parents.get(id(value), value), ast.Assign)
            and cpu_only_device(stmt, ctx.qualname)
            and not deliberate_cpu(stmt, ctx)
            for s in self.scopes
            for _, value in s.assigns
        )
        # `model.to(rank)`: the program's placement; the port's moves are reported.
        placements = [c for c in self.structure.moves if own_placement((c,)) is not None]
        self.own_placement = placements[0] if len(placements) == 1 else None
        if len(placements) > 1:  # messages name the first in `ast.walk` order
            self.own_placement = own_placement(ctx.scopes.nodes_of(ast.Call))
        if self.own_placement is None:  # `if use_cuda: model.cuda()`: CUDA or the CPU
            self.own_placement = flag_placement(self, ctx)

    def device_at(self, node: ast.AST) -> tuple[str, tuple[Edit, ...]] | None:
        """The file's one device name usable at ``node`` and the edits defining it.

        None (no fix here) while a CPU ``device`` waits to be rebound, where the
        program places its model itself, or where the name is not usable
        (:class:`~torchport.check.port._device_name.DeviceName`).
        """
        if self.cpu_device_pending or self.own_placement is not None:
            return None
        return self.device_name.at(node)

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
            # A free name is the enclosing function's (a closure's `net` of `def train():
            # net = mlp(...); def get_policy(obs): return net(obs)`), up to the module.
            inner: PortScope | None = scope
            while inner is not None and inner is not self.module:
                if expr.id in inner.models:
                    return True
                if expr.id in inner.local:
                    return False
                inner = inner.outer
            return expr.id in self.module.models
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

    def loads_of(self, name: str) -> list[ast.Name]:
        """Every read of ``name`` in the file, in no promised order: the structure's (its walk
        saw every name) when it walked the file; the scope map's node index otherwise."""
        if self.structure.walked:
            return self.structure.loads_of(name)
        return self.ctx.scopes.loads_of(name)

    def builds_model(self, expr: ast.expr, scope: PortScope) -> bool:
        """Whether ``expr`` evaluates to a model in ``scope``."""
        return self.known.builds(expr, lambda e: self.holds_model(e, scope))

    def _find_models(self) -> None:
        # What the rounds read but never change, gathered once: the names a statement
        # moves in place, the calls of the file's own functions, the factories' returns.
        searched = [s for s in self.scopes if not s.module_method]
        for scope in searched:
            self._moved_in_place(scope)
        calls = self._own_calls = self._calls_of_own_functions()
        returns = []
        for name, func in self.functions.items():
            scope = self.scope_of_function(func)
            values = [
                n.value for n in scope.nodes if isinstance(n, ast.Return) and n.value is not None
            ]
            returns.append((name, scope, values))
        returns += self._inner_factory_returns() + lambda_factory_returns(self)
        returns += spelled_factories(self)  # `Net = functools.partial(_Net)`: known.spelled
        # `for net in zip(nets, ...)`: a target of listed models is one
        loops = loop_candidates(self.ctx.scopes, searched, self.loads_of, self.scope_of)
        # Factories, call sites and bindings feed each other: up to three rounds. Each
        # round is a function of what is known (every set here only grows), so a round
        # that adds nothing ends it: the next would see the same and add nothing too.
        for _ in range(3):
            known = self._models_known()
            for scope in searched:
                self._scope_models(scope)
            mark_loop_models(self.ctx.scopes, loops, self.builds_model)
            self._params_from_calls(calls)
            for name, scope, values in returns:
                if any(self.builds_model(value, scope) for value in values):
                    self.known.factories.add(name)
            if self._models_known() == known:
                return

    def _inner_factory_returns(self) -> list[tuple[str, PortScope, list[ast.expr]]]:
        """``(name, scope, returned values)`` of the file's other plain functions that may
        be model factories: one defined in a function, or under a module-level ``if`` or
        ``try`` (``def main(): def build(): return nn.Linear(4, 2)``; ``net = build()``
        was moved inside ``build`` and its input left on the CPU, "0 left"). Only a name
        no other function or class of the file defines: the factories are known by name."""
        inner = [
            s
            for s in self.scopes
            if isinstance(s.node, ast.FunctionDef | ast.AsyncFunctionDef)
            and s.cls is None
            and not s.internal
            and self.functions.get(s.node.name) is not s.node
        ]
        found: list[tuple[str, PortScope, list[ast.expr]]] = []
        if not inner:
            return found
        defined = self.structure.definitions()  # (no index of the tree built for it)
        for scope in inner:
            node = scope.node
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if defined.get(node.name, 0) != 1 or node.name in self.functions:
                continue
            values = [
                n.value for n in scope.nodes if isinstance(n, ast.Return) and n.value is not None
            ]
            found.append((node.name, scope, values))
        return found

    def _models_known(self) -> tuple[int, int, int, int]:
        """How much :meth:`_find_models` knows (its sets only grow: equal sizes, equal sets)."""
        return (
            sum(len(s.models) + len(s.moved) for s in self.scopes),
            sum(len(found) for found in self.class_models.values()),
            len(self.class_models),
            len(self.known.factories) + len(self.unresolved_calls),
        )

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

    def raw_parameters(self, scope: PortScope) -> bool:
        """Seed a hand-trained model: tensors made with ``requires_grad=True`` are the weights.

        ``w = torch.randn(4, 2, requires_grad=True)`` trained by hand (no ``nn.Module``)
        is a model as much as ``nn.Linear`` is: it is a device value (what meets it
        is moved), and its factory is moved (TP503 keeps it a leaf).
        """
        found = False
        for names, made in grad_leaves(scope, self.ctx.qualname):
            scope.give(names)
            scope.sink_nodes.add(id(made))
            found = True
        return mark_weights_made_later(self, scope) or found  # `w.requires_grad = True`

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
            for p in _model_parameters(node.args):
                scope.models.add(p)
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

    def _moved_in_place(self, scope: PortScope) -> None:
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

    def _calls_of_own_functions(self) -> list[OwnCall]:
        """Each call of the file's own functions: (call, its scope, parameters, callee's scope)."""
        methods = methods_by_name(self.scopes)
        found: list[OwnCall] = []
        for scope in self.scopes:
            if scope.module_method:
                continue
            for node in scope.nodes:
                if not isinstance(node, ast.Call):
                    continue
                for func, bound in callees(self, node, scope, methods):
                    params = [p.arg for p in [*func.args.posonlyargs, *func.args.args]]
                    params = ["", *params] if bound < 0 else params[bound:]  # a partial's
                    found.append((node, scope, params, self.scope_of_function(func)))
        return found

    def _params_from_calls(self, calls: list[OwnCall]) -> None:
        for node, scope, params, target in calls:
            for i, arg in enumerate(node.args):
                if i < len(params) and self.builds_model(arg, scope):
                    target.models.add(params[i])
            for kw in node.keywords:
                if kw.arg is not None and self.builds_model(kw.value, scope):
                    target.models.add(kw.arg)

    def forward(self, call: ast.Call, scope: PortScope) -> bool:
        """Whether ``call`` runs a model (``model(x)``, ``self.net(x)``, ``model.generate(x)``)."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in NOT_FORWARD:
            return False
        if isinstance(func, ast.Attribute) and self.gives_host_values(func):
            return False
        if isinstance(func, ast.Call):  # `nn.Linear(3, 2)(x)`: built and run in one expression
            return self.builds_model(func, scope)
        root = func
        while isinstance(root, ast.Attribute) and not self.holds_model(root, scope):
            root = root.value
        return isinstance(root, (ast.Name, ast.Attribute)) and self.holds_model(root, scope)

    def converted_inputs(self, call: ast.Call) -> tuple[int, ...]:
        """The positions of ``call``'s arguments the model it runs makes its own tensor of
        (:func:`~torchport.check.port._instances.converted_inputs`)."""
        return converted_inputs(self.ctx, self.project, call)

    def gives_host_values(self, func: ast.Attribute) -> bool:
        """Whether ``func`` (``ac.step``) is a plain method of the file's own class that
        returns only host values (:class:`~torchport.check.port._instances.HostMethods`)."""
        if self._host_methods is None:
            self._host_methods = HostMethods(self.ctx, self.classdefs)
        return self._host_methods.gives_host_values(func)


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


def _model_parameters(args: ast.arguments) -> list[str]:
    """The parameters a function's names say are models (``net``, ``actor``, ``models``).

    Not one whose name joins a model word with a setting's (``lr_actor``,
    ``policy_noise``, ``model_path``), nor one whose default is a number, a string or
    a bool (``actor=0.3``): a model is no literal.
    """
    positional = [*args.posonlyargs, *args.args]
    defaults: dict[str, ast.expr | None] = dict.fromkeys(p.arg for p in positional)
    for p, d in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
        defaults[p.arg] = d
    for p, kw in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        defaults[p.arg] = kw
    found = []
    for name, default in defaults.items():
        if not _MODEL_PARAM.search(name):
            continue
        if _SETTING_WORDS.intersection(name.lower().split("_")):
            continue
        if isinstance(default, ast.Constant) and default.value is not None:
            continue
        found.append(name)
    return found

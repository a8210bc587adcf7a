"""Where each value that meets the model comes from, and which port rule answers for it.

The port's promise: every tensor that meets the model (or a value computed from it) is
moved, or reported; never "0 findings left" with data on the CPU. For each such value (an
operand, see :mod:`torchport.check.port._facts`) this module follows the value back to the
places that made it, stopping at what is surely on the device (moved, made with
``device=``, a forward's output) or surely no tensor (a number, a string, a model), and
sorts the places left:

* answered elsewhere: a torch factory the fix rules move (TP503), a batch, an
  argument or a loop variable the batch plan moves or reports (TP502/TP520);
* made by another library (``transforms.ToTensor()(img)``, ``scaler.transform(x)``): TP521;
* anything else (a function's result, the project's own modules' and classes' methods
  too, ``torch.load(...)``, ``self.data``, a ``with`` target): TP523 reports those.

A value a port rule converts and moves is that rule's: ``torch.tensor(scaler.transform(x))``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchport.check._context import Context
from torchport.check.port._batches import BatchPlan, batch_plan
from torchport.check.port._calls import (
    CREATORS,
    TYPED_CONSTRUCTORS,
    VARIABLE,
    cpu_arguments,
    handed_arguments,
    is_move,
    moved_beside,
)
from torchport.check.port._class_factories import object_factory, record_class
from torchport.check.port._environment_objects import an_environment
from torchport.check.port._facts import PortFacts, PortScope, port_facts
from torchport.check.port._kinds import Kind, ValueKinds, value_kinds
from torchport.check.port._lambdas import loose_where
from torchport.check.port._script_placement import ScriptPlacement, step_scalar
from torchport.check.port._tensor_attributes import TENSOR_ATTRIBUTES
from torchport.check.semantic import Binding, BindingKind

__all__ = ["Origin", "Origins", "origins"]

_FINE = frozenset({Kind.DEVICE, Kind.OTHER, Kind.MODEL, Kind.LOADER, Kind.NUMPY})
# Kinds whose attributes and items are data they keep, not values on their own device.
_HOLDERS = frozenset({Kind.LOADER, Kind.OTHER})
_SETTINGS = frozenset({Kind.OTHER, Kind.LIBRARY, Kind.LOADER, Kind.NUMPY})  # `fabric.device`
# Builtins made of what they are given: of tensors a tensor where they are (`round(100 * p, 4)`)
_MADE_OF_INPUTS = frozenset({"list", "tuple", "set", "sorted", "reversed", "round", "min", "max",
                             "abs", "sum", "pow"})  # fmt: skip
_CALLS_DEEP = 3  # calls of the file's functions followed into, each with what it hands


@dataclass(frozen=True, slots=True)
class Origin:
    """A place that made a value which meets the model, and that no fix moves."""

    node: ast.AST  # (one finding per node: a binding's own, whichever read reached it)
    what: str  # for messages: "`load_batch()`", "`self.data`"
    library: bool  # made by another library (TP521), else by code the port cannot follow


class Origins:
    """The unanswered origins of each operand of one file (see the module docstring)."""

    def __init__(self, facts: PortFacts, kinds: ValueKinds, plan: BatchPlan) -> None:
        self.facts = facts
        self.kinds = kinds
        self.plan = plan
        self.ctx: Context = facts.ctx
        self.scopes = facts.ctx.scopes
        self.elements = {id(e) for e in plan.elements}
        self._memo: dict[int, list[Origin] | None] = {}
        self._bound: dict[int, list[Origin] | None] = {}  # id(binding) -> its origins
        self._calling: dict[int, ast.Call] = {}  # id(function) -> the call followed into it
        self.placement = ScriptPlacement(facts)

    def operands(self) -> list[tuple[ast.expr, list[Origin]]]:
        """Each operand that meets the model with the origins no rule moves (may be empty),
        in source order (of operands sharing an origin, the rules report the first).

        The receiver of a method call is left out (``logger.log(out)``: the logger
        is no data to move; what meets it is the argument), and so are the parts
        a model is built from (``nn.Sequential(norm, nn.Linear(2, 2))``).
        """
        seen: set[int] = set()
        out = []
        parents = self.facts.parents
        for operand, _ in self.facts.operands:
            if id(operand) in seen:
                continue
            seen.add(id(operand))
            parent = parents.get(id(operand))
            if isinstance(parent, ast.Attribute) and parent.value is operand:
                call = parents.get(id(parent))
                if isinstance(call, ast.Call) and call.func is parent:
                    continue
            if isinstance(parent, ast.keyword):
                parent = parents.get(id(parent))
            if isinstance(parent, ast.Call) and (
                self.facts.known.constructor(parent) or self.facts.known.wrapper(parent)
            ):
                continue  # `nn.Sequential(norm, nn.Linear(...))`: parts of a model, not data
            if isinstance(parent, ast.Call) and self._to_an_object(operand, parent):
                continue  # `train(model, memory)` where `train` reads `memory.sample(n)`
            out.append((operand, self.of(operand)))
        out.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
        return out

    def _to_an_object(self, operand: ast.expr, call: ast.Call) -> bool:
        """Whether ``operand`` is passed to a parameter of a function of the file that only
        uses it as an object (the batch plan's ``objects``): what it meets there is what
        its methods return, followed (and reported) where that meets the model. A parameter
        that reaches no model there is asked the same test (``_update_networks(args, ...)``)."""
        func = call.func
        if not isinstance(func, ast.Name) or any(isinstance(a, ast.Starred) for a in call.args):
            return False
        found = self.scopes.bindings(func.id, func)
        node = found[0].node if len(found) == 1 else None
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        args, param, test = node.args, None, self.plan.object_test
        if operand in call.args:
            positional = [*args.posonlyargs, *args.args]
            index = call.args.index(operand)
            param = positional[index] if index < len(positional) else None
        else:
            word = next((k.arg for k in call.keywords if k.value is operand), None)
            param = next((p for p in (*args.args, *args.kwonlyargs) if p.arg == word), None)
        if param is None:
            return False
        return id(param) in self.plan.objects or bool(test and test.holds_object(param, node))

    def of(self, expr: ast.expr) -> list[Origin]:
        key = id(expr)
        if key in self._memo:
            return self._memo[key] or []  # None: being followed (a cycle adds nothing)
        self._memo[key] = None
        if self._project_tensor(expr):
            what = f"`{ast.unparse(expr)}` (a CPU tensor another module of the project makes)"
            found = [Origin(expr, what, library=False)]
        elif an_environment(expr, self.ctx):
            found = []  # `gym.make(...)`, `make_env()`: an environment object, no tensor
        else:
            found = self._of(expr) if self.kinds.of(expr) not in _FINE else []
        self._memo[key] = found
        return found

    def _of(self, expr: ast.expr) -> list[Origin]:
        if id(expr) in self.elements:
            return []  # `batch[0]`: the plan moves it where it is
        if isinstance(expr, ast.Name):
            return self._name(expr)
        if isinstance(expr, ast.Call):
            made = not expr.args and getattr(expr.func, "id", "") == "dict"  # `dict(a=x)`'s items
            if made and self.ctx.qualname(expr.func) is None:
                return [o for k in expr.keywords for o in self.of(k.value)]
            return self._call(expr)
        if isinstance(expr, ast.Attribute):
            value = expr.value
            setting = self._instance_setting(expr)
            if setting is not None:
                return setting  # `cfg.lr` of `cfg = Config()`: what the class holds
            own = isinstance(value, ast.Name) and value.id == "self"
            held_by_class = self.kinds.attributes.file_class(value) is not None
            if held_by_class or self.kinds.of(value) in _HOLDERS:
                # `Cfg.x`, `train_ds.tensors`, `Pairs(2).x`: data a class, a dataset or
                # a loader keeps, on the CPU; not "where the holder lives"
                return [self._origin(expr)]
            if not own and not self._module(value):
                return self.of(value)  # `x.data`, `batch.text`: where `x` lives
            return [self._origin(expr)]
        if isinstance(expr, (ast.Subscript, ast.Starred)):
            items = self.facts.flow.items.of(expr)
            if items is not None:  # `d["a"]` of `d = dict(a=torch.zeros(2), ...)`
                return [o for e in items for o in self.of(e)]
            if self.kinds.of(expr.value) in _HOLDERS:
                return [self._origin(expr)]  # `train_ds[0]`: an item a dataset makes
            return self.of(expr.value)
        if isinstance(expr, ast.NamedExpr):
            return self.of(expr.value)
        children = [c for c in ast.iter_child_nodes(expr) if isinstance(c, ast.expr)]
        if isinstance(expr, ast.IfExp):  # `a if cuda.is_available() else b`: a or b, never the test
            children = [expr.body, expr.orelse]
        if isinstance(expr, (ast.BinOp, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.IfExp)):
            return [o for c in children for o in self.of(c)]
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            return [o for c in children for o in self.of(c)]
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.of(expr.elt)
        if isinstance(expr, ast.DictComp):
            return self.of(expr.value)
        return [self._origin(expr)]

    def _instance_setting(self, expr: ast.Attribute) -> list[Origin] | None:
        """``cfg.lr`` where ``cfg = Config()`` and ``Config`` is a class of the file. A setting
        the class body binds to no tensor (a number, a string) is fine; any other is the
        attribute's own origin (``cfg.data``), not ``Config()``. None: not such a read."""
        value = expr.value
        if not isinstance(value, ast.Name):
            return None
        found = self.scopes.bindings(value.id, value)
        bound = found[0].value if len(found) == 1 else None
        if not isinstance(bound, ast.Call) or bound.args or bound.keywords:
            return None
        cls = self.kinds.attributes.file_class(bound.func)
        if cls is None or self.facts.known.classes.intersection({cls.name}):
            return None
        if self.kinds.attributes.class_attribute(cls, expr.attr) in _FINE:
            return []
        return [self._origin(expr)]

    def _project_tensor(self, expr: ast.expr) -> bool:
        """``SCALE`` after ``from model import SCALE``: a module-level CPU tensor of the project
        (the port does not rebind another module's name; it reports the read)."""
        if not isinstance(expr, (ast.Name, ast.Attribute)):
            return False
        found = self.facts.project.lookup(expr)
        return found is not None and found[0] == "tensor"

    def _name(self, name: ast.Name) -> list[Origin]:
        if self._moved_where_passed(name):
            return []  # `step(model, xb)` where `step` moves its `xb` first thing
        found = self.kinds.reaching.may_reach(name)  # (and a rebound parameter's own: n31an)
        found = found + [b for b in self.kinds.reaching.reaching_parameters(name) if b not in found]
        if not found:
            return [Origin(name, f"`{name.id}`", library=False)]
        if any(self.placement.with_the_model(b) for b in found):
            return []  # `if args.cuda: model.cuda(); X = X.cuda()`: the script's placement
        out: list[Origin] = []
        for b in found:
            if self.kinds.binding(b) in _FINE or step_scalar(self.ctx, b):
                continue
            out += self._binding(b, name)
        return out

    def _moved_where_passed(self, name: ast.Name) -> bool:
        """Whether ``name`` is an argument of a function of the file that moves that parameter."""
        parent = self.facts.parents.get(id(name))
        keyword = parent.arg if isinstance(parent, ast.keyword) else None
        if keyword is not None:
            parent = self.facts.parents.get(id(parent))
        if not isinstance(parent, ast.Call) or not isinstance(parent.func, ast.Name):
            return False
        func = self.facts.functions.get(parent.func.id)
        if func is None:
            return False
        move = self.plan.moves.get(id(func))
        moved = set(self.facts.scope_of_function(func).moved)  # `xb = xb.to(device)` in it
        if move is not None:
            moved |= {*move.tensors, *move.dicts}
        if keyword is None:
            if name not in parent.args or any(isinstance(a, ast.Starred) for a in parent.args):
                return False
            positional = [*func.args.posonlyargs, *func.args.args]
            index = parent.args.index(name)
            keyword = positional[index].arg if index < len(positional) else None
        if keyword is None:
            return False
        return keyword in moved or self._elements_moved(func, keyword)

    def _elements_moved(self, func: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> bool:
        """Whether ``func`` reads ``param`` only through elements that are moved there.

        ``batch[0]`` the batch plan moves, ``batch[0].to(device)`` the code moves, or
        ``x, y = batch`` with ``x`` and ``y`` moved (by the plan or the code).
        """
        parents = self.facts.parents
        reads = [
            n
            for n in ast.walk(func)
            if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load)
        ]
        scope = self.facts.scope_of_function(func)
        for read in reads:
            element = parents.get(id(read))
            if isinstance(element, ast.Assign) and element.value is read:  # `x, y = batch`
                planned = self.plan.moves.get(id(element))
                moved = set(scope.moved) | set(planned.tensors if planned else ())
                names = [
                    n.id for t in element.targets for n in ast.walk(t) if isinstance(n, ast.Name)
                ]
                if not names or not set(names) <= moved:
                    return False
                continue
            if not isinstance(element, (ast.Subscript, ast.Attribute)) or element.value is not read:
                return False
            above = parents.get(id(element))
            moved_here = isinstance(above, ast.Attribute) and is_move(parents.get(id(above), above))
            if id(element) not in self.elements and not moved_here:
                return False
        return bool(reads)

    def _binding(self, b: Binding, name: ast.Name) -> list[Origin]:
        """The origins of what one binding binds (once per binding, whatever reads it)."""
        key = id(b)
        if key in self._bound:
            return self._bound[key] or []  # None: being followed
        self._bound[key] = None
        found = self._binding_origins(b, name)
        self._bound[key] = found
        return found

    def _binding_origins(self, b: Binding, name: ast.Name) -> list[Origin]:
        if b.value is not None:
            return self.of(b.value)
        anchor = self._anchor(b)
        if anchor is not None and (id(anchor), b.name) in self.plan.covered:
            return []  # the batch plan moves it, or reports it (TP502 / TP520)
        if b.kind is BindingKind.AUGMENTED:
            holder = self.scopes.parent(b.node)
            if isinstance(holder, ast.AugAssign):
                return self.of(holder.value)
        if b.kind is BindingKind.PARAMETER and isinstance(anchor, ast.FunctionDef):
            return self._arguments(anchor, b, name)
        if b.kind is BindingKind.PARAMETER and isinstance(anchor, ast.Lambda):  # a loose one's
            where = (
                f"`{name.id}`, the parameter of a lambda {loose_where(anchor, self.facts.parents)}"
            )
            return [Origin(b.node, where, library=False)]
        if isinstance(anchor, ast.comprehension):  # its own name: no `x = x.to(device)` moves it
            batch = self.kinds.of(anchor.iter) is Kind.LOADER or self.kinds.binding(b) is Kind.BATCH
            where = f"`{name.id}`, a batch taken in a comprehension"  # (moved at loops alone)
            return [Origin(b.node, where, library=False)] if batch else self.of(anchor.iter)
        if self._moved_by_code(b, anchor):
            return []  # a batch the code moves itself (`x = x.to(device)` in the loop)
        if isinstance(anchor, ast.Assign):
            return self.of(anchor.value)  # `data, target = get_batch(source, i)`
        if isinstance(anchor, (ast.For, ast.AsyncFor)):
            return self.of(anchor.iter)  # an item of what it iterates
        return [Origin(b.node, f"`{name.id}`", library=False)]

    def _arguments(self, func: ast.FunctionDef, b: Binding, name: ast.Name) -> list[Origin]:
        """A parameter's origins: what each call site in the file passes for it."""
        sites = self.kinds.callers.call_sites(func)
        if id(func) in self._calling and sites:  # what this call hands it, not every call's
            sites = [(self._calling[id(func)], None)]  # type: ignore[list-item]
        if not sites:  # (called nowhere in its repository: never given anything)
            if sites == [] and self.kinds.callers.never_called(func):
                return []
            return [Origin(b.node, f"the argument `{name.id}` of `{func.name}`", library=False)]
        args = func.args
        positional = [*args.posonlyargs, *args.args]
        if self.kinds.callers.method_of(func) is not None:
            positional = positional[1:]
        index = next((i for i, p in enumerate(positional) if p is b.node), None)
        out: list[Origin] = []
        for call, _ in sites if b.node is args.vararg else ():  # `*xs`: the arguments past
            rest = call.args[len(positional) :]  # the named ones (n31an)
            out += [o for a in rest for o in self.of(a.value if isinstance(a, ast.Starred) else a)]
        for call, _ in sites:
            given = next((k.value for k in call.keywords if k.arg == b.name), None)
            if given is None and index is not None and index < len(call.args):
                given = call.args[index]
            if given is not None:
                out += self.of(given)
        return out

    def _anchor(self, b: Binding) -> ast.AST | None:
        """The statement, loop or function the batch plan files a binding's name under."""
        node = b.node
        if b.kind is BindingKind.PARAMETER:
            args = self.scopes.parent(node)
            return self.scopes.parent(args) if args is not None else None
        holder = self.scopes.parent(node)
        while isinstance(holder, (ast.Tuple, ast.List, ast.Starred)):
            holder = self.scopes.parent(holder)
        return holder

    def _call(self, call: ast.Call) -> list[Origin]:
        kinds = self.kinds
        name = self.ctx.qualname(call.func) or ""
        if name in CREATORS or name in TYPED_CONSTRUCTORS or self.facts.cpu_tensor_call(call):
            # a torch factory, or a function (the file's, a project's) returning its tensor: TP503
            return [] if self._moved_by_rule(call) else [self._origin(call)]
        if name in VARIABLE:
            return self.of(call.args[0]) if call.args else [self._origin(call)]
        followed = moved_beside(call)  # `STD.to(image.device)`: where the tensor `image` is
        if followed is not None and kinds.of(followed) not in _SETTINGS:
            return self.of(followed)
        viewed = self.facts.project.viewed_parameters(call.func)
        handed = handed_arguments(call, viewed) if viewed is not None else None
        if handed is not None:  # a project module's slice of what it is given: where that is
            return [o for a in handed for o in self.of(a)]
        kind = kinds.of(call)
        if kind is Kind.LIBRARY:  # (a project module's function: the port read it, in vain)
            own = object_factory(call, self.ctx) is not None  # (a project class's method too)
            own = own or self.facts.project.own_function(call.func)
            return [Origin(call, f"`{_short(call.func)}`", library=not own)]
        if kind in (Kind.TENSOR, Kind.BATCH) and name.startswith("torch."):
            kept = cpu_arguments(call, self.ctx)  # `pack_padded_sequence`'s lengths
            inputs = [a for a in call.args if not isinstance(a, ast.Starred) and a not in kept]
            return [o for a in inputs for o in self.of(a)]  # made from its inputs
        func = call.func
        returned = self._returned(call)
        if returned is not None:
            return returned
        if record_class(func, self.ctx):
            # `Pair(out, target)` of a namedtuple: it holds what it is given (its fields
            # are read back as `p.target`, `p[1]` or unpacked), so it lives where they do
            values = [*call.args, *(k.value for k in call.keywords)]
            return [o for a in values for o in self.of(a)]
        if isinstance(func, ast.Name) and func.id in _MADE_OF_INPUTS and not name:
            return [o for a in call.args for o in self.of(a)]  # `tuple(f(v) for v in h)`
        if isinstance(func, ast.Name) and func.id in ("zip", "enumerate", "iter") and not name:
            inputs = call.args[:1] if func.id != "zip" else call.args
            return [o for a in inputs for o in self.of(a)]  # the items of what it iterates
        if (
            isinstance(func, ast.Attribute)
            and kinds.of(func.value) in (Kind.TENSOR, Kind.BATCH, Kind.UNKNOWN)
            and not self._module(func.value)
            and (func.attr in TENSOR_ATTRIBUTES or kinds.of(func.value) is not Kind.UNKNOWN)
        ):
            return self.of(func.value)  # `x.float()`, `batch.view(...)`: where `x` lives
        # `memory.sample(n)`: no tensor has `sample`; what it returns is made there, not
        # where `memory` is (a replay buffer made by `ReplayBuffer()` is no tensor)
        return [self._origin(call)]

    def _returned(self, call: ast.Call) -> list[Origin] | None:
        """A call of a function of the file: the origins of what it returns."""
        func = call.func
        if not isinstance(func, ast.Name):
            return None
        found = self.scopes.bindings(func.id, func)
        node = found[0].node if len(found) == 1 else None
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        values = self.kinds.callers.return_values(node)
        if not values:
            return None  # a generator, or returns nothing
        if id(node) in self._calling or len(self._calling) >= _CALLS_DEEP:
            return [o for v in values for o in self.of(v)]  # (its parameters: every call's)
        # What it returns made of its parameters is made of what this call hands them
        # (`norm(x)` of `norm(image)` handed `x[i].cpu()` copies elsewhere: `x`'s origins):
        # followed apart, with memos of its own (the same nodes, other values)
        kept, self._memo, self._bound = (self._memo, self._bound), {}, {}
        self._calling[id(node)] = call
        try:
            return [o for v in values for o in self.of(v)]
        finally:
            del self._calling[id(node)]
            self._memo, self._bound = kept

    def _module(self, expr: ast.expr) -> bool:
        """``np.`` or ``json.`` in ``np.load(...)``: a module, not a value."""
        root = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and any(
            b.kind is BindingKind.IMPORT for b in self.scopes.bindings(root.id, root)
        )

    def _moved_by_code(self, b: Binding, anchor: ast.AST | None) -> bool:
        """A tensor or batch bound to a name the code itself moves (``x = x.cuda()``): the
        code's own device choice then follows it (on a machine where that choice is the CPU,
        the model stays there too); the port leaves it alone (not a comprehension's)."""
        scope = self.facts.scope_of.get(id(anchor)) if anchor is not None else None
        return (
            scope is not None
            and b.name in scope.moved
            and self.kinds.binding(b) in (Kind.BATCH, Kind.TENSOR)
        )

    def _moved_by_rule(self, call: ast.Call) -> bool:
        """Whether TP503 moves (or reports) this factory call, or the code moves it itself."""
        scope: PortScope | None = self.facts.scope_of.get(id(call))
        if scope is None or scope.internal:
            return False
        holder = self.facts.parents.get(id(call))
        while isinstance(holder, (ast.expr, ast.keyword)):  # `torch.ones(n) * 0.9`
            holder = self.facts.parents.get(id(holder))
        if isinstance(holder, ast.Assign):
            names = [t.id for t in holder.targets if isinstance(t, ast.Name)]
            if names and all(n in scope.moved for n in names):
                return True  # `x = torch.from_numpy(a)` then `x = x.cuda()`: the code's own
        if any(k.arg is None for k in call.keywords):
            return False  # **kwargs may carry device=: TP503 leaves it
        key = id(call)
        return key in scope.sink_nodes or key in scope.reach_values

    def _origin(self, expr: ast.expr) -> Origin:
        return Origin(expr, f"`{_short(expr)}`", library=False)


def _short(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


def origins(ctx: Context) -> Origins:
    """The origins of the file ``ctx`` walks (worked out once per walk)."""
    found = ctx.memo.get("port.origins")
    if found is None:
        facts = port_facts(ctx)
        found = ctx.memo["port.origins"] = Origins(facts, value_kinds(facts), batch_plan(ctx))
    assert isinstance(found, Origins)
    return found

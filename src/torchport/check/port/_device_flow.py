"""Which values live on the device in one scope, and which expressions meet them.

A :class:`PortScope` is one function (or the module body); :class:`DeviceFlow` finds its
device values (what a forward returns and everything computed from it, up to a host read),
the operands that meet them (the sinks), and the names whose values reach a sink through
assignments. What a model is, it asks the port's facts it is given (:class:`ModelQuestions`).
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

from torchport.check._context import Context
from torchport.check.port._calls import (
    HOST_READS,
    META_ATTRS,
    cpu_arguments,
    device_target,
    host_library,
    host_result,
    is_move,
    moves_all,
    moves_to_program_device,
)
from torchport.check.port._collected import (
    COLLECTS,
    added,
    collector,
    comprehension_on_device,
    every_read_collects,
)
from torchport.check.port._cpu_names import follows_a_tensor_name, names_cpu, to_cpu
from torchport.check.port._data_copies import DataCopies
from torchport.check.port._guesses import guessed_values, guessing, meets_known, unpacked
from torchport.check.port._iterated import ITERATES, ROUNDS, first_item_of, positions_taken, taken
from torchport.check.port._lambdas import held_parameters, tensor_root
from torchport.check.port._literal_items import LiteralItems, opened
from torchport.check.port._model_reads import model_from_a_literal, partial_of_a_model
from torchport.check.port._models import MODEL_METHODS
from torchport.check.port._number_arguments import NUMBER_ARGUMENTS, SHAPE_METHODS, SIZED

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # ModelQuestions is only an annotation: nothing tests it at run time

__all__ = ["MOVES", "NOT_FORWARD", "DeviceFlow", "ModelQuestions", "PortScope", "names_of"]

# Methods of a model that are not its forward.
NOT_FORWARD = MODEL_METHODS | frozenset(
    {"parameters", "named_parameters", "buffers", "named_buffers", "state_dict",
     "load_state_dict", "apply", "zero_grad", "modules", "named_modules", "children",
     "named_children", "register_forward_hook", "register_forward_pre_hook",
     "register_buffer", "register_parameter", "add_module", "get_submodule", "save_pretrained"}
)  # fmt: skip
# Builtins whose result is no device value (not `list(accs)`, `sorted`: they keep their items).
_HOST_BUILTINS = frozenset(dir(builtins)) - {
    "map", "filter", "sum", "max", "min", "abs", "list", "tuple", "sorted", "reversed"}  # fmt: skip
# Builtins whose result holds no tensor of their arguments (`len(x)`, `print(x)`).
_HOST_CALLS = _HOST_BUILTINS - {"list", "tuple", "dict", "sum", "max", "min"}
MOVES = frozenset({"to", "cuda"})
# Comparisons that give a tensor of an operand's shape (where it is): not `is`, `in`.
_ELEMENTWISE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_COMBINE = frozenset({ast.Call, ast.BinOp, ast.Compare, ast.AugAssign})  # what has operands


def names_of(target: ast.expr) -> list[str]:
    """The names an assignment target binds (``a``, ``a, (b, *c)``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in names_of(elt)]
    if isinstance(target, ast.Starred):
        return names_of(target.value)
    return []


@dataclass(eq=False)
class PortScope:
    """One function (or the module body) as the port sees it."""

    node: ast.AST
    cls: ast.ClassDef | None = None
    outer: PortScope | None = None  # the scope the function is defined in (None: a class body)
    module_method: bool = False  # a method of an nn.Module subclass
    internal: bool = False  # inside a class a library extends (a module, an optimizer ...)
    nodes: list[ast.AST] = field(default_factory=list)
    local: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    values: set[str] = field(default_factory=set)
    moved: set[str] = field(default_factory=set)  # names some assignment binds to a moved value
    reach: set[str] = field(default_factory=set)
    sink_nodes: set[int] = field(default_factory=set)  # ids of nodes that meet a device value
    reach_values: set[int] = field(default_factory=set)  # ids inside values that reach one
    assigns: list[tuple[list[ast.expr], ast.expr]] = field(default_factory=list)
    loop_bound: set[str] = field(default_factory=set)  # names bound by for/with targets
    loops: list[ast.AST] = field(default_factory=list)  # its for loops and comprehensions
    # Device values only guessed (`_guesses`): what meets only those is reported, not moved.
    given: set[str] = field(default_factory=set)  # made device values from outside `run`
    guess_seeds: set[str] = field(default_factory=set)  # parameters some callers give host data
    seed_tensors: dict[str, bool] = field(default_factory=dict)  # host or guessed: tensors?
    guessed: set[str] = field(default_factory=set)
    guess_reach: set[str] = field(default_factory=set)
    guess_nodes: set[int] = field(default_factory=set)  # ids meeting only guessed values
    _values: dict[str, list[ast.expr]] | None = None
    _items: tuple[dict[str, list[ast.expr]], dict[str, list[ast.expr]]] | None = None

    def give(self, names: list[str]) -> None:
        """Make ``names`` device values from outside the flow's own run (``given`` too)."""
        self.values.update(names)
        self.given.update(names)

    def values_of(self, name: str) -> list[ast.expr]:
        """The values this scope assigns to ``name`` (built once, on first use)."""
        if self._values is None:
            found: dict[str, list[ast.expr]] = {}
            for targets, value in self.assigns:
                for target in targets:
                    for bound in names_of(target):
                        found.setdefault(bound, []).append(value)
            self._values = found
        return self._values.get(name, [])

    def items_of(self, name: str, *, comprehended: bool) -> list[ast.expr]:
        """What ``name`` takes items of, in :attr:`nodes` order (indexed on first use):
        ``comprehended``: of the comprehensions binding it anywhere in their target; else of
        the loops and comprehensions whose target is the name (``for k in kept``)."""
        if self._items is None:
            anywhere: dict[str, list[ast.expr]] = {}
            whole: dict[str, list[ast.expr]] = {}
            for n in self.nodes:
                if isinstance(n, ast.comprehension):
                    for bound in dict.fromkeys(names_of(n.target)):
                        anywhere.setdefault(bound, []).append(n.iter)
                if isinstance(n, ITERATES) and isinstance(n.target, ast.Name):
                    whole.setdefault(n.target.id, []).append(n.iter)
            self._items = anywhere, whole
        return self._items[0 if comprehended else 1].get(name, [])


class ModelQuestions(Protocol):
    """What the flow asks about models (the port's facts answer)."""

    def forward(self, call: ast.Call, scope: PortScope) -> bool:
        """Whether ``call`` runs a model."""

    def builds_model(self, expr: ast.expr, scope: PortScope) -> bool:
        """Whether ``expr`` is a model (held or built)."""

    def loads_of(self, name: str) -> list[ast.Name]:
        """Every read of ``name`` in the file, in no promised order."""

    def gives_host_values(self, func: ast.Attribute) -> bool:
        """Whether ``func`` (``ac.step``) runs a file class's method giving numpy or numbers."""

    def converted_inputs(self, call: ast.Call) -> tuple[int, ...]:
        """The positions of ``call``'s arguments its model makes its own tensor of."""
        ...


class DeviceFlow:
    """Device values, sinks and reach per scope of one file (see the module docstring)."""

    def __init__(self, ctx: Context, models: ModelQuestions, module: PortScope) -> None:
        self.ctx = ctx
        self.models = models
        self.module = module
        # Expressions that meet the model or a device value directly, and their scope.
        self.operands: list[tuple[ast.expr, PortScope]] = []
        self._collected: dict[str, bool] = {}  # names of lists only ever appended to
        # Calls of the file's own functions that return a device value (`get_policy(obs)`
        # with `def get_policy(obs): return net(obs)`): filled by _call_flow, by call id.
        self.device_calls: set[int] = set()
        # Own calls returning literal tuples, some items device values (`t, w = make()` with
        # `return model(x), torch.ones(2)`): which positions are, by call id (_call_flow).
        self.item_calls: dict[int, tuple[bool, ...]] = {}
        # Own calls returning only host data (`hist = train(model, x)` of floats): _call_flow.
        self.host_calls: set[int] = set()
        self.copies = DataCopies(ctx.scopes)  # `torch.tensor(outs)` of a list (_data_copies)
        # (operand, scope, where it meets only guessed device values): reported (_guesses).
        self.guesses: list[tuple[ast.expr, PortScope, ast.AST]] = []
        self.defaults: dict[int, str] = {}  # a default's nodes meeting only those: why
        self.items = LiteralItems(ctx)  # `d["a"]` of `d = dict(a=..., b=...)`: that item
        self.followed: set[int] = set()  # lambdas whose calls are seen, and of loose ones'
        self.loose: dict[int, str] = {}  # meetings, by id, where they go (_lambdas)
        self.viewed: set[int] = set()  # items a loop takes one by one (`_iterated`), by id

    def on_device(self, expr: ast.expr, scope: PortScope) -> bool:
        """Whether ``expr`` is a device value in ``scope`` (a forward's output or made from one)."""
        if isinstance(expr, (ast.Tuple, ast.List)):
            return any(self.on_device(e, scope) for e in expr.elts)
        if isinstance(expr, ast.Name):
            if expr.id in scope.values:
                return True
            module = self.module
            # A module-level device value read in a function (a hand-trained weight `w`).
            return module is not scope and expr.id not in scope.local and expr.id in module.values
        if isinstance(expr, ast.Call):
            func = expr.func
            if self.models.forward(expr, scope) or id(expr) in self.device_calls:
                return True
            if self.copies.to_the_cpu(expr, self.ctx.qualname(func)):
                return False  # `torch.tensor(outs)` of a list: on the CPU (`_data_copies`)
            if isinstance(func, ast.Attribute) and (
                func.attr in HOST_READS or self.to_cpu(expr, scope)
            ):
                return False
            if moves_to_program_device(expr):
                return True
            if isinstance(func, ast.Attribute):
                if func.attr in NOT_FORWARD and self.models.builds_model(func.value, scope):
                    return False  # `model.train()`, `model.parameters()`: not a tensor
                if self.models.gives_host_values(func):
                    return False  # `ac.step(obs)` of a method returning `.numpy()`
                if self.on_device(func.value, scope):
                    return True
            elif isinstance(func, ast.Name) and func.id in _HOST_BUILTINS:
                held = first_item_of(expr)  # `next(iter(ts))` of a `*ts` handed device values
                return held is not None and held.id in scope.given
            if any(
                k.arg == "device"
                and device_target(k.value)
                and not follows_a_tensor_name(k.value, scope)
                for k in expr.keywords
            ):
                return True  # made on the program's device (not next to some tensor)
            if id(expr) in self.host_calls or host_result(self.ctx.qualname(func) or ""):
                return False  # host data: `accuracy_score(y, pred)`, an own `train` of floats
            return any(self.on_device(a, scope) for a in expr.args) or any(
                self.on_device(k.value, scope) for k in expr.keywords
            )
        if isinstance(expr, ast.Attribute):
            return expr.attr not in META_ATTRS and self.on_device(expr.value, scope)
        if isinstance(expr, (ast.Subscript, ast.Starred)):
            return any(self.on_device(e, scope) for e in self.items.of(expr) or [expr.value])
        if isinstance(expr, ast.BinOp):
            return self.on_device(expr.left, scope) or self.on_device(expr.right, scope)
        if isinstance(expr, ast.UnaryOp):
            return self.on_device(expr.operand, scope)

        if isinstance(expr, ast.IfExp):
            return self.on_device(expr.body, scope) or self.on_device(expr.orelse, scope)
        if isinstance(expr, ast.Compare):  # `torch.round(y_hat) == y`: a device tensor
            operands = [expr.left, *expr.comparators]
            return (
                isinstance(expr.ops[0], _ELEMENTWISE)
                and len(expr.ops) == 1
                and any(self.on_device(o, scope) for o in operands)
            )
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return comprehension_on_device(
                expr,
                scope.values,
                lambda e: self.on_device(e, scope),
                lambda g: self.taken(g, scope),
            )
        return False

    def to_cpu(self, call: ast.expr, scope: PortScope) -> bool:
        """Whether ``call`` is ``x.to(<the CPU>)``: a move to the host (``_cpu_names``)."""
        return to_cpu(self.ctx, self.module, call, scope)

    def names_cpu(self, expr: ast.expr, scope: PortScope, depth: int = 0) -> bool:
        """Whether a device expression is the CPU, whatever its name says (``_cpu_names``)."""
        return names_cpu(self.ctx, self.module, expr, scope, depth)

    def operands_of(self, node: ast.AST, scope: PortScope) -> list[ast.expr]:
        """The operands of ``node`` that meet the device, or [] when it combines none."""
        if isinstance(node, ast.Call):
            args = [a for a in node.args] + [k.value for k in node.keywords]
            if self.models.forward(node, scope):
                # `policy(state)`: not the positions the forward makes its own tensor of
                converted = self.models.converted_inputs(node)
                return [a for i, a in enumerate(args) if i not in converted] if converted else args
            if partial_of_a_model(node, scope, self.ctx, self.models) or model_from_a_literal(
                node.func, scope, self.ctx, self.models
            ):
                return args
            func = node.func
            if isinstance(func, ast.Attribute):
                if func.attr in HOST_READS or func.attr in MOVES or func.attr in NOT_FORWARD:
                    return []
                if func.attr in SHAPE_METHODS:
                    return []  # `data.narrow(0, 0, n * batch_size)`: sizes, no data
                if func.attr in NUMBER_ARGUMENTS and self.on_device(func.value, scope):
                    return []  # `out.topk(top_k)`: a count, whatever made it
                if func.attr in COLLECTS and self._only_collected(func.value):
                    return []  # a list of records: what goes in never meets what is in it
                kept = cpu_arguments(node, self.ctx)
                operands = [func.value, *(a for a in args if a not in kept)]  # (rnn.pack_...)
            else:
                if (
                    isinstance(func, ast.Name)
                    and func.id in _HOST_BUILTINS
                    and func.id not in scope.local
                ):
                    return []
                name = self.ctx.qualname(func) or ""
                if name.startswith("numpy.") or host_library(name):
                    return []  # each argument read into numpy on its own: they never meet
                kept = cpu_arguments(node, self.ctx) if args else []  # (once, not per argument)
                operands = [a for a in args if a not in kept]
        elif isinstance(node, ast.BinOp):
            operands = [node.left, node.right]
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.AugAssign):
            operands = [node.target, node.value]
        else:
            return []
        # `torch.cat([out, torch.zeros(1, 2)])`: the items a torch function takes meet
        if isinstance(node, ast.Call) and (self.ctx.qualname(node.func) or "").startswith("torch."):
            operands = opened(operands)  # not `OUT.append((name, out))`: a tuple of records
        devices = [
            o for o in operands if self.on_device(o, scope) or self.models.builds_model(o, scope)
        ]
        if not devices:
            return []
        return [o for o in operands if o not in devices]

    def _only_collected(self, holder: ast.expr) -> bool:
        """Whether ``holder`` is a name whose every read in the file appends to it (or asks
        its ``len``, or tests it ``is None``): a list of records (``OUT.append((name, out))``)
        never read back, whose items never meet each other. Once the list is read any other
        way (``torch.cat(outs)``, ``outs[-1] + x``, returned), an item appended meets the rest."""
        if not isinstance(holder, ast.Name):
            return False
        known = self._collected.get(holder.id)
        if known is None:  # once per name: asked per append, a scan each time was quadratic
            loads = self.models.loads_of(holder.id)
            known = self._collected[holder.id] = every_read_collects(loads, self.ctx.scopes)
        return known

    def run(self, scope: PortScope) -> None:
        """Work out ``scope``'s device values, sinks and reach (its outer scopes' first)."""
        self.fixed_point(scope, scope.values, unpack=True)
        scope.guessed = guessed = guessed_values(self, scope) if guessing(self, scope) else set()
        values = scope.values
        # The flow is flow-insensitive: a name is a device value wherever one binding
        # makes it one. Its other bindings must then put it there too (`prev = outs[-1]`
        # and `prev = torch.zeros(...)`): what they bind meets what the name meets, so it
        # is moved where it is made, or reported. A name the code moves itself is not.
        for targets, whole in scope.assigns:  # (a list kept whole: each item, _literal_items)
            if not any(  # (asked of the targets first: `parts` reads every use of the name)
                isinstance(t, ast.Name) and t.id in values and t.id not in scope.moved
                for t in targets
            ):
                continue
            for value in self.items.parts(whole, targets):
                if not self.on_device(value, scope):
                    known = any(isinstance(t, ast.Name) and t.id not in guessed for t in targets)
                    self._meet(value, scope, None if known else value)
        for loop in scope.loops:  # a dict's values taken one by one: each where the target is
            for target, item in self.taken(loop, scope):  # (a comprehension's: its own names)
                moved = () if isinstance(loop, ast.comprehension) else scope.moved
                names = [n for n in names_of(target) if n in values and n not in moved]
                if id(item) in self.viewed and names and not self.on_device(item, scope):
                    self._meet(item, scope, None if set(names) - guessed else item)
        held = held_parameters(scope.nodes, self.followed)  # a lambda's own parameters
        for node in [n for n in scope.nodes if n.__class__ in _COMBINE]:  # (others: none)
            operands = self.operands_of(node, scope)
            meeting = node if operands and guessed and not meets_known(self, node, scope) else None
            for operand in operands:
                root = tensor_root(operand) if held else None  # `t`, `t.flatten()`
                if root is not None and id(root) in held:  # its calls answer (_captures)
                    if held[id(root)]:  # a loose one's: reported (TP523; not marked: no name
                        self.operands.append((operand, scope))  # of the scope it is)
                    continue
                self._meet(operand, scope, meeting)
        self.propagate(scope)
        self.propagate(scope, guess=True)

    def _meet(self, operand: ast.expr, scope: PortScope, meeting: ast.AST | None) -> None:
        """``operand`` meets a device value (at ``meeting``, where that value is only guessed:
        then it is marked apart, to be reported and not moved; see ``_guesses``)."""
        if meeting is None:
            self.operands.append((operand, scope))
            self.mark(operand, scope.reach, scope.sink_nodes)
        else:
            self.guesses.append((operand, scope, meeting))
            self.mark(operand, scope.guess_reach, scope.guess_nodes)

    def fixed_point(self, scope: PortScope, values: set[str], *, unpack: bool) -> None:
        """The fixed point of ``scope``'s device values (``unpack``: items unpacked from a
        container are taken for them too; without it, only what is known, see ``_guesses``)."""
        changed, nodes = True, [n for n in scope.nodes if isinstance(n, ROUNDS)]
        while changed:  # device values: a fixed point over the scope's bindings
            changed = False
            for targets, value in scope.assigns:
                flags = self.item_calls.get(id(value)) if self.item_calls else None
                for part in positions_taken(targets, flags):  # `t, w = make()`
                    for name in names_of(part):
                        if name not in values:
                            values.add(name)
                            changed = True
                if self.on_device(value, scope) and (unpack or not unpacked(targets, value, scope)):
                    for target in targets:
                        for name in names_of(target):
                            if name not in values:
                                values.add(name)
                                changed = True
                if is_move(value) or moves_all(value):
                    for target in targets:
                        scope.moved.update(names_of(target))
            for node in nodes:  # (the kinds a round reads, in `scope.nodes` order)
                if isinstance(node, ITERATES):  # a `for`, a comprehension's: per item
                    for target, held in self.taken(node, scope):
                        if self.on_device(held, scope) and (
                            unpack or not unpacked([target], held, scope)
                        ):
                            for name in names_of(target):
                                if name not in values:
                                    values.add(name)
                                    changed = True
                elif (  # `preds.append(model(x))`, `accs += [acc]`: the list holds them
                    isinstance(node, (ast.Call, ast.AugAssign, ast.Assign))
                    and (holder := collector(node, scope, self.module)) is not None
                    and holder not in values
                    and any(self.on_device(a, scope) for a in added(node))
                ):
                    values.add(holder)
                    changed = True

    def taken(self, loop: ast.AST, scope: PortScope) -> list[tuple[ast.expr, ast.expr]]:
        """What each part of ``loop``'s target takes an item of (``_iterated.taken``); not
        of a parameter its own binding reaches (``Reaching.reaching_parameters``, n31an)."""
        assert isinstance(loop, ITERATES)
        local, module, reaching = scope.local, self.module.local, self.copies.reaching
        found = taken(
            loop.target, loop.iter, lambda n: n not in local and n not in module, self._view
        )
        return [(t, held) for t, held in found if not reaching.reaching_parameters(held)]

    def _view(self, held: ast.expr) -> list[ast.expr] | None:
        """Every value of the dict ``held`` where the code shows them (kept in ``viewed``)."""
        found = self.items.view_values(held)
        self.viewed.update(id(v) for v in found or ())
        return found

    def _makes_object(self, func: ast.expr) -> bool:
        """Whether calling ``func`` builds an object (a class: ``Dataset(...)``), not a tensor."""
        tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if not tail[:1].isupper():
            return False
        name = self.ctx.qualname(func) or ""
        return not name.startswith("torch.") or name.startswith("torch.utils.data.")

    def propagate(self, scope: PortScope, *, guess: bool = False) -> None:
        """Spread ``scope``'s reach (``guess``: its guessed reach) back through its
        assignments (a fixed point)."""
        reach = scope.guess_reach if guess else scope.reach
        ids = scope.guess_nodes if guess else scope.reach_values
        changed = True
        while changed:
            changed = False
            for targets, value in scope.assigns:
                names = [n for t in targets for n in names_of(t)]
                if any(n in reach and n not in scope.moved for n in names):
                    before = len(reach) + len(ids)
                    self.mark(value, reach, ids)
                    if len(reach) + len(ids) != before:
                        changed = True

    def mark(self, expr: ast.AST, names: set[str], ids: set[int]) -> None:
        """Record the names and nodes of ``expr`` whose values would meet the device."""
        stack = [expr]
        while stack:
            node = stack.pop()
            ids.add(id(node))
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute):
                    if func.attr in HOST_READS or is_move(node):
                        continue
                    stack.append(func.value)
                    if func.attr in SHAPE_METHODS:
                        if node.args and self.ctx.qualname(func) == f"torch.{func.attr}":
                            stack.append(node.args[0])  # `torch.unsqueeze(data, 0)`: the data
                        continue  # `data.view(batch_size, -1)`: where `data` is, no data
                elif isinstance(func, ast.Name) and func.id in _HOST_CALLS:
                    continue
                if self._makes_object(func) or self.ctx.qualname(func) in SIZED:
                    continue  # `DataLoader(TensorDataset(x, y))`: its arguments are not moved
                kept = cpu_arguments(node, self.ctx)  # lengths
                given = [*node.args, *(k.value for k in node.keywords)]
                stack.extend(a for a in given if a not in kept)
            elif isinstance(node, ast.Attribute):
                if node.attr not in META_ATTRS:
                    stack.append(node.value)
            elif isinstance(node, ast.Subscript):
                stack.extend(self.items.of(node) or [node.value])  # `d["a"]`: that item
            elif isinstance(node, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp)):
                continue
            else:
                stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))

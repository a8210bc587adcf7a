"""Side computations: tensors a program makes and computes with that meet no model.

``x = torch.tensor([2.0, 1.0, 1.0]); print(torch.softmax(x, dim=0))`` beside a model or a
loss meets neither, so the device flow (:mod:`~torchport.check.port._device_flow`) never
reaches it: the port moved what meets the loss, said "0 left", and the softmax stayed on
the CPU, named nowhere.

**The invariant.** In a scope beside a model (one holding a model, a loss or values that
meet one) of a program the port gives a device (its one ``device`` can be written there), a
tensor the program makes with a torch factory (no ``device=``) or with one of its own
functions returning one, and then computes with in torch ops (a torch function, a tensor
method, an operator), is placed on the device by TP503, named by a TP503 finding ("meets
no model ... possibly deliberate"), or kept on the host for a reason below; never placed
unsoundly. What follows the tensor, through names (the bindings that may reach each read)
and the expressions computed from it, decides, for it and every creator it meets:

* **kept on the host, unsaid**: it feeds host data (``.numpy()``, ``.tolist()``,
  ``.item()``, ``float()``, a Python ``if``, numpy, matplotlib, a host library), indexes
  something (``names[i]``), is ``.cpu()`` or moved by the program itself (``.cuda()``,
  ``.to(x)``), meets a value read back (``torch.allclose(y, t.cpu())``), goes to the data
  pipeline (``torch.utils.data``), a CPU argument (``pack_padded_sequence``'s lengths,
  ``torch.histogram``'s input: no CUDA kernel), a
  class (a module's constructor: its move carries it), a method of an object or a callable
  the code does not name (a loop's variable, a parameter, ``fs[0]``: any may be a model,
  which TP520/TP523 name), a container or an object's attribute, a slice of a torch-made
  tensor (copied into it), another function through a ``return``, or a use the walk does
  not follow (a dict's value; a comprehension's item is followed in the comprehension, and
  through ``list``/``sum``/``max``... of it, issue 31). A module's own methods and ``__init__``, a
  ``Dataset``'s, a collate function are not reached at all;
* **placed**: every value computed from it stays within the scope and ends in torch ops,
  ``print``/formatting, ``assert``, or a discarded expression; every other operand is a
  number or a tensor placed with it; every name it is bound to holds only its values.
  Moving it is sound (nothing it meets stays on the host) and keeps its values (TP503's
  fix: random factories and helpers are moved after creation);
* **reported**: appended to a list (``OUT.append(y)``), handed to a function of the
  program or a library, read in another function, changed in place (``x += v``),
  combined with a value the port does not place, made sharing the memory of an array the
  module names again (``torch.from_numpy(a)``, then ``a[0] = 5.0``: a copy on the device
  would miss the write), drawn from (``torch.randn_like(x)``, ``x.uniform_()``: the device's
  generator gives other values), or bound to a name that also holds
  other values (fv-12's ``x`` of numpy, then of torch: the flow reads a name whatever
  binding a read sees, so placing one would move its other values in the flow's view).

Syntax only; no torch (the checker does not import it).
"""

from __future__ import annotations

import ast
import weakref

from torchport._device_types import MOVE_METHODS
from torchport.check._match import keyword
from torchport.check.port._calls import (
    CREATORS,
    HOST_READS,
    TYPED_CONSTRUCTORS,
    cpu_arguments,
    host_result,
    is_move,
)
from torchport.check.port._lambdas import handed
from torchport.check.port._plain_numbers import plain_number
from torchport.check.port._reaching import Reaching
from torchport.check.port._shared_memory import SHARING
from torchport.check.semantic import BindingKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._device_flow import PortScope
    from torchport.check.port._facts import PortFacts

__all__ = ["PLACE", "REPORT", "side_computations", "side_report"]

PLACE, REPORT, _HOST = "place", "report", "host"
_PRINTS = frozenset({"print", "str", "repr", "format", "len", "isinstance", "type", "id"})
_TO_HOST = frozenset({"float", "int", "bool", "complex", "list", "tuple", "iter", "next"})
# Methods that read host data out of a tensor, or move it: what follows is the program's.
_HOST_METHODS = frozenset({"item", "tolist", "numpy", "cpu", "__array__", "pin_memory"})
_NOT_COMPUTE = frozenset(
    {"float", "half", "bfloat16", "double", "long", "int", "short", "bool", "byte", "char",
     "clone", "detach", "contiguous", "requires_grad_", "to", "type"}
)  # fmt: skip
_TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})
_SHAPE_METHODS = frozenset(
    {"view", "reshape", "expand", "repeat", "permute", "transpose", "unsqueeze", "squeeze",
     "flatten", "unflatten", "movedim", "narrow", "chunk", "split", "select", "roll", "sum",
     "mean", "std", "var", "max", "min", "argmax", "argmin", "softmax", "log_softmax",
     "cumsum", "norm", "topk", "sort", "argsort", "prod", "any", "all", "pow"}
)  # fmt: skip
# torch functions with no CUDA kernel (pytorch#69519): their operands stay on the host.
_CPU_ONLY = frozenset({"torch.histogram", "torch.histogramdd"})
# Random draws computed from a tensor: on the device they come from its generator, not the
# CPU's (the values change; the factories themselves are moved after creation for that).
_DRAWS = frozenset(
    {"torch.randn_like", "torch.rand_like", "torch.randint_like", "torch.multinomial",
     "torch.poisson", "torch.dropout", "torch.nn.functional.dropout",
     "torch.nn.functional.dropout1d", "torch.nn.functional.dropout2d",
     "torch.nn.functional.dropout3d", "torch.nn.functional.alpha_dropout"}
)  # fmt: skip
_DRAW_METHODS = frozenset(
    {"uniform_", "normal_", "bernoulli_", "random_", "exponential_", "geometric_", "cauchy_",
     "log_normal_", "multinomial", "bernoulli"}
)  # fmt: skip
_DRAWN = "escape!: a random draw from it would come from the device's generator"
_COLLECTS = frozenset({"append", "extend", "insert", "add"})  # a list's or a set's
# Comprehensions, and the builtins whose result is computed from, or holds, their items.
_MADE_BY = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_REDUCE = frozenset({"sum", "max", "min"})
_OF_ITEMS = _REDUCE | {"list", "tuple", "sorted", "reversed", "iter", "set"}
_BOOL_TORCH = frozenset({"torch.equal", "torch.allclose", "torch.is_tensor", "torch.is_nonzero"})
_ELEMENTWISE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_Use = tuple[str, list[ast.expr], list[ast.expr]]  # kind, tensors computed, other operands
_CACHE: weakref.WeakKeyDictionary[PortFacts, dict[int, tuple[str, str]]] = (
    weakref.WeakKeyDictionary()
)


def side_report(node: ast.Call, facts: PortFacts) -> str | None:
    """TP503's message for ``node`` where it is a side computation the port reports."""
    verdict, why = side_computations(facts).get(id(node), ("", ""))
    if verdict != REPORT:
        return None
    return (
        f"this tensor meets no model and stays on the CPU ({why}): possibly deliberate; "
        "make it with `device=device` if it belongs with the model's work"
    )


def side_computations(facts: PortFacts) -> dict[int, tuple[str, str]]:
    """id(creator call) -> (PLACE or REPORT, why) for the file's side computations."""
    found = _CACHE.get(facts)
    if found is None:
        found = _CACHE[facts] = _find(facts)
    return found


def _find(facts: PortFacts) -> dict[int, tuple[str, str]]:
    if not facts.scopes or not (
        facts.has_models or any(s.sink_nodes or s.reach_values for s in facts.scopes)
    ):
        return {}
    walk = _Closure(facts)
    groups: list[tuple[list[ast.Call], str, str]] = []
    for call in facts.ctx.scopes.nodes_of(ast.Call):
        assert isinstance(call, ast.Call)
        scope = facts.scope_of.get(id(call))
        if scope is None or id(call) in walk.seen or not walk.candidate(call, scope):
            continue
        if facts.device_at(call) is None:
            continue
        groups.append(walk.group(call, scope))
    out: dict[int, tuple[str, str]] = {}
    for members, verdict, why in groups:
        if verdict in (PLACE, REPORT):
            out.update((id(m), (verdict, why)) for m in members)
    return out


class _Closure:
    """The values computed from a group of creators in one scope, and what they meet."""

    def __init__(self, facts: PortFacts) -> None:
        self.facts = facts
        self.ctx = facts.ctx
        self.parents = facts.parents
        self.reaching = Reaching(facts.ctx.scopes)
        self.seen: set[int] = set()  # creators already in a group
        self.stores: list[ast.Name] = []  # the names the current group's values are bound to

    def candidate(self, call: ast.Call, scope: PortScope) -> bool:
        if scope.internal or _collate(scope) or not _beside_a_model(scope):
            return False
        key = id(call)
        if key in scope.sink_nodes or key in scope.reach_values or key in scope.guess_nodes:
            return False
        if any(k.arg is None for k in call.keywords):
            return False
        name = self.ctx.qualname(call.func)
        creates = (name in CREATORS or name in TYPED_CONSTRUCTORS) and keyword(
            call, "device"
        ) is None
        return creates or self.facts.cpu_tensor_call(call)

    def group(self, first: ast.Call, scope: PortScope) -> tuple[list[ast.Call], str, str]:
        """Follow ``first`` and every creator it meets: (the creators, verdict, why)."""
        members, done = [first], set[int]()
        self.stores = []
        work: list[ast.expr] = [first]
        operands: list[ast.expr] = []
        self.seen.add(id(first))
        compute, host, why = False, False, ""
        while work:
            expr = work.pop()
            if id(expr) in done:
                continue
            done.add(id(expr))
            kind, more, others = self._use(expr, scope)
            others = [
                handed(o, self.ctx.scopes, self.parents) for o in others
            ]  # `t` of `(lambda t: ...)(y)`: `y`
            operands.extend(others)
            host = host or any(_read_back(o) for o in others)  # `torch.allclose(y, t.cpu())`
            work.extend(more)
            if kind == "compute":
                compute = True
            elif kind == _HOST:
                host = True
            elif kind.startswith("escape") and not why:
                why = kind.partition(": ")[2]
            compute = compute or kind.startswith("escape!")  # computed in place
            for other in self._creators(others):  # a creator met here joins the group
                if id(other) not in self.seen and self.candidate(other, scope):
                    members.append(other)
                    self.seen.add(id(other))
                    work.append(other)
        if host or not compute:
            return members, _HOST, ""
        if not why:
            why = next((w for m in members if (w := self._shared(m))), "")
        if not why:
            why = next((w for o in operands if (w := self._foreign(o, done, scope))), "")
        if not why:  # the flow reads names whatever binding a read sees (`x` of numpy, then
            # of torch): a name bound to other values too is reported, not placed
            why = next((w for s in self.stores if (w := self._rebound(s, done))), "")
        return members, (REPORT if why else PLACE), why

    def _creators(self, operands: list[ast.expr]) -> list[ast.Call]:
        """The calls among ``operands``, and those the names among them may be bound to."""
        found: list[ast.Call] = []
        for node in (n for operand in operands for n in ast.walk(operand)):
            if isinstance(node, ast.Name):
                values = [getattr(b, "value", None) for b in self.reaching.may_reach(node)]
                found.extend(
                    c
                    for v in values
                    if v is not None
                    for c in ast.walk(v)
                    if isinstance(c, ast.Call)
                )
            elif isinstance(node, ast.Call):
                found.append(node)
        return found

    def _shared(self, call: ast.Call) -> str:
        """Why ``call``'s tensor must stay where its memory is, or "": it shares it with an
        array the program names again (``torch.from_numpy(a)``, then ``a[0] = 5.0``)."""
        if self.ctx.qualname(call.func) not in SHARING or not call.args:
            return ""
        source = call.args[0]
        if isinstance(source, ast.Call | ast.Constant | ast.List | ast.Tuple):
            return ""  # made in the call: nothing else holds it
        if isinstance(source, ast.Name) and not any(
            isinstance(n, ast.Name) and n.id == source.id and n is not source
            and not isinstance(self.parents.get(id(n)), ast.Assign)  # `a = ...`: a new array
            for n in self.ctx.scopes.nodes_of(ast.Name)
        ):  # fmt: skip
            return ""  # named nowhere else (a write `a += 1` or `a[0] = v` names it)
        return f"it shares its memory with `{ast.unparse(source)[:40]}`"

    def _into_a_tensor(self, target: ast.expr) -> bool:
        """``t[...]`` where ``t`` is a name bound only to tensors torch makes: a write copies
        the values into ``t``, wherever ``t`` is."""
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
            return False
        found = self.reaching.may_reach(target.value)
        values = [getattr(b, "value", None) for b in found]
        return bool(found) and all(
            isinstance(v, ast.Call) and self.ctx.qualname(v.func) in CREATORS for v in values
        )

    def _rebound(self, store: ast.Name, done: set[int]) -> str:
        """Why ``store``'s name, bound to a value of the group, cannot be placed, or ""."""
        for b in self.ctx.scopes.bindings(store.id, store):
            if b.value is None or id(b.value) not in done:
                return f"`{store.id}` is bound to other values too"
        return ""

    def _foreign(self, operand: ast.expr, done: set[int], scope: PortScope) -> str:
        """Why ``operand`` (met by the group) cannot go with it to the device, or ""."""
        if id(operand) in done or plain_number(operand, self.ctx.qualname):
            return ""
        if isinstance(operand, ast.Name):
            found = self.reaching.may_reach(operand)
            values = [getattr(b, "value", None) for b in found]
            if found and all(
                v is not None and (id(v) in done or plain_number(v, self.ctx.qualname))
                for v in values
            ):
                return ""
        if self.facts.on_device(operand, scope):
            return ""
        return f"it meets `{ast.unparse(operand)[:40]}`, which the port does not place"

    def _made_here(self, expr: ast.expr) -> bool:
        """Whether ``expr`` is a creator's own call (``torch.Tensor(1, 8)``), not a name."""
        if not isinstance(expr, ast.Call):
            return False
        name = self.ctx.qualname(expr.func)
        return name in CREATORS or name in TYPED_CONSTRUCTORS

    def _use(self, expr: ast.expr, scope: PortScope) -> _Use:
        """How ``expr``, a tensor of the group, is used: (kind, tensors computed from it,
        other operands met). Kinds: "compute", "pass", "end", HOST, "escape: why"."""
        up = self.parents.get(id(expr))
        if isinstance(up, ast.Attribute) and up.value is expr:
            call = self.parents.get(id(up))
            if not (isinstance(call, ast.Call) and call.func is up):
                if up.attr in _TENSOR_ATTRS:
                    return "pass", [up], []
                return "end", [], []  # `.shape`, `.dtype`, `.device`
            method = up.attr
            if method in _DRAW_METHODS:
                if method.endswith("_") and self._made_here(expr):
                    # `torch.empty(n).normal_()`: drawn as it is made, on the CPU's generator,
                    # and moved after the draw as a random factory is (TP503's fix)
                    return "pass", [call], []
                return _DRAWN, [], []
            if method in _HOST_METHODS or method in MOVE_METHODS or is_move(call):
                return _HOST, [], []  # read back, or placed by the program (`.cuda()`)
            if method == "to" and not all(plain_number(a, self.ctx.qualname) for a in call.args):
                return _HOST, [], []  # `.to(x)`: put where another tensor is
            if method in HOST_READS or method.startswith("is_"):
                return "end", [], []
            args = [] if method in _SHAPE_METHODS else _arguments(call)
            kind = "pass" if method in _NOT_COMPUTE else "compute"
            return kind, [call], args
        if isinstance(up, ast.keyword):
            up = self.parents.get(id(up))
        if isinstance(up, ast.Starred):
            return "escape: unpacked into a call", [], []
        if isinstance(up, ast.Call) and up.func is not expr:
            return self._argument(expr, up)
        if isinstance(up, _MADE_BY) and getattr(up, "elt", getattr(up, "value", None)) is expr:
            return "pass", [up], []  # a comprehension's item: followed in the comprehension
        if isinstance(up, ast.BinOp | ast.UnaryOp):
            others = [up.right if up.left is expr else up.left] if isinstance(up, ast.BinOp) else []
            return "compute", [up], others
        if isinstance(up, ast.Compare):
            if all(isinstance(op, _ELEMENTWISE) for op in up.ops):
                return "compute", [up], [e for e in (up.left, *up.comparators) if e is not expr]
            return "end", [], []
        if isinstance(up, ast.Subscript):
            if up.value is not expr:
                return _HOST, [], []  # it indexes something: `names[i]`
            if isinstance(up.ctx, ast.Store):  # `x[0] = v`: v is written into it
                stmt = self.parents.get(id(up))
                value = getattr(stmt, "value", None)
                return ("compute", [], [value]) if isinstance(value, ast.expr) else ("end", [], [])
            return "pass", [up], []
        if isinstance(up, ast.Assign) and up.value is expr:
            return self._bound(up.targets, scope)
        if isinstance(up, ast.AugAssign) and up.value is expr:
            return "compute", [], [up.target]
        if isinstance(up, ast.Expr | ast.FormattedValue | ast.Assert):
            return "end", [], []
        if isinstance(up, ast.For | ast.comprehension) and up.iter is expr:
            return self._bound([up.target], scope)  # its items (or rows), bound to the target
        if isinstance(up, ast.Lambda):
            call = self.parents.get(id(up))
            if isinstance(call, ast.Call) and call.func is up and up.body is expr:
                return "pass", [call], []  # `(lambda t: ...)(y)`: its value is the call's
            return "escape: returned by a lambda", [], []
        if isinstance(
            up, ast.If | ast.While | ast.IfExp | ast.BoolOp | ast.For | ast.comprehension
        ):
            return _HOST, [], []  # a Python truth value, or rows iterated in Python
        if isinstance(up, ast.List | ast.Tuple):
            holder = self.parents.get(id(up))
            if isinstance(holder, ast.Call) and holder.func is not up:  # `torch.cat([a, b])`
                kind, more, others = self._argument(up, holder)
                return kind, more, [*others, *(e for e in up.elts if e is not expr)]
        if isinstance(up, ast.Return | ast.Yield):
            func = scope.node
            if getattr(func, "name", None) in self.facts.tensor_functions:
                return "end", [], []  # a helper's CPU tensor: followed where it is called
            return _HOST, [], []  # another helper's result: the caller's to place or say
        return _HOST, [], []  # a comprehension's item, a dict's value ...: kept, unsaid

    def _argument(self, expr: ast.expr, call: ast.Call) -> _Use:
        name = self.ctx.qualname(call.func) or _name(call) or ""
        if name in _OF_ITEMS and self._made_by(expr):  # `sum(t * w for t in ts)`, `max(res)`
            return ("compute" if name in _REDUCE else "pass"), [call], []
        if name in _PRINTS:
            return "end", [], []
        if name in _TO_HOST or any(expr is c for c in cpu_arguments(call, self.ctx)):
            return _HOST, [], []
        if name.startswith(("numpy.", "torch.utils.data.")) or host_result(name):
            return _HOST, [], []
        if name in _DRAWS:
            return _DRAWN, [], []
        if name in _CPU_ONLY:
            return _HOST, [], []
        if name.startswith("torch.Tensor.") and name[13:] in _HOST_METHODS | MOVE_METHODS:
            return _HOST, [], []  # `torch.Tensor.numpy(y)`: `y.numpy()`
        if name in _BOOL_TORCH:  # `torch.allclose(y, ref)`: a bool, ref met
            return "end", [], [a for a in _arguments(call) if a is not expr]
        if self._torch(call):
            last = name.rsplit(".", 1)[-1]
            if last[:1].isupper():  # a module's constructor: its move carries the tensor
                return _HOST, [], []
            return "compute", [call], [a for a in _arguments(call) if a is not expr]
        func = call.func
        if isinstance(func, ast.Attribute):  # `OUT.append(y)`: a list; `net.infer(y)`: a model?
            held = isinstance(func.value, ast.Name) and func.attr in _COLLECTS
            return (
                (f"escape: put in `{ast.unparse(func.value)[:40]}`", [], [])
                if held
                else (_HOST, [], [])
            )
        if self._unresolved(func) or name.rpartition(".")[2][:1].isupper():
            # a callable held in a loop variable, a parameter or a container may be a model,
            # a class may be one: kept, unsaid here (TP520/TP523 name a model reached that way)
            return _HOST, [], []
        return f"escape: handed to `{ast.unparse(call.func)[:40]}`", [], []

    def _made_by(self, expr: ast.expr) -> bool:
        """A comprehension, or a name bound only to comprehensions (``res = [...]``)."""
        found = self.reaching.may_reach(expr) if isinstance(expr, ast.Name) else []
        values = [getattr(b, "value", None) for b in found] or [expr]
        return all(isinstance(v, _MADE_BY) for v in values)

    def _unresolved(self, func: ast.expr) -> bool:
        """Whether ``func`` is a callable the code does not name: not a ``def``, an import, a
        lambda, a class, nor a method of an object."""
        if isinstance(func, ast.Attribute):
            return False
        if not isinstance(func, ast.Name):
            return True  # `fs[0](x)`, `make()(x)`
        known = (BindingKind.DEF, BindingKind.IMPORT, BindingKind.CLASS)
        bound = self.ctx.scopes.bindings(func.id, func)
        return not bound or not all(
            b.kind in known or isinstance(b.value, ast.Lambda) for b in bound
        )

    def _torch(self, call: ast.Call) -> bool:
        name = self.ctx.qualname(call.func) or ""
        return name.startswith("torch.") and name not in CREATORS and name != "torch.save"

    def _bound(self, targets: list[ast.expr], scope: PortScope) -> _Use:
        stores: list[ast.Name] = []
        if all(self._into_a_tensor(t) for t in targets):
            return _HOST, [], []  # `coord[:, :n, 0] = torch.arange(n) // 4`: copied into it
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
                    return _HOST, [], []  # in a container or on an object: followed, if
                    # at all, where it meets a model (the port's container reads)
                if isinstance(node, ast.Name):
                    stores.append(node)
        reads: list[ast.expr] = []
        why = ""
        self.stores.extend(stores)
        for store in stores:
            bound = self.ctx.scopes.bindings(store.id, store)
            if any(b.kind is BindingKind.AUGMENTED for b in bound):  # `x += v`: v meets it
                why = why or f"!`{store.id}` is changed in place"
            for load in self.facts.loads_of(store.id):
                if not any(b.node is store for b in self.reaching.may_reach(load)):
                    continue
                if self.facts.scope_of.get(id(load)) is not scope:
                    why = why or f"`{store.id}` is read in another function"
                reads.append(load)
        if why.startswith("!"):
            return f"escape!: {why[1:]}", reads, []
        return (f"escape: {why}" if why else "pass"), reads, []


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(k.value for k in call.keywords)]


def _name(call: ast.Call) -> str | None:
    return call.func.id if isinstance(call.func, ast.Name) else None


def _read_back(expr: ast.expr) -> bool:
    """``t.cpu()``, ``t.numpy()``, ``t.item()``: a value the program put on the host."""
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in _HOST_METHODS
    )


def _beside_a_model(scope: PortScope) -> bool:
    """Whether ``scope`` holds a model or values that meet one (the port places them)."""
    return bool(scope.models or scope.sink_nodes or scope.reach_values)


def _collate(scope: PortScope) -> bool:
    node = scope.node
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
        "collate" in node.name or node.name == "__init__"
    )

"""What a value is, as far as the port can tell: a tensor, a batch, a loader, a model, or none.

The port moves a value only where it knows what it is (everything else that
meets the model is reported, never moved on a guess):

* by construction: a torch factory or typed constructor (``torch.zeros``,
  ``torch.LongTensor([...])``, ``Variable(...)``), a model's output, an
  operation on tensors, a ``DataLoader`` (whose items are batches);
* by flow: a name whose bindings are all such values (asked of the one scope
  model, :attr:`Context.scopes`, so the binding that reaches a use is the one
  that counts); a loop over a loader or a tensor; ``next(iter(loader))``; a
  parameter of a function that every call site in the file fills with one (a
  function called from nowhere, or passed around as a value, has parameters of
  unknown kind: a test's pytest parameters, a callback's arguments).

Numbers, strings, booleans, ``None``, classes, functions and modules are
:attr:`Kind.OTHER`: nothing to move. :attr:`Kind.DEVICE` is a tensor known to
be on the device already (moved, made with ``device=``, a forward's output).
Syntax and import names only; nothing here imports torch.
"""

from __future__ import annotations

import ast
import builtins
import weakref
from collections.abc import Callable

from torchport.check._context import Context
from torchport.check.port._calls import (
    HOST_READS,
    META_ATTRS,
    NOT_TENSOR_SPACES,
    PARAMETER,
    SAME_KIND_CALLS,
    TENSOR_SPACES,
    TORCH_LOADS,
    TORCH_NOT_TENSORS,
    device_target,
    follows_a_tensor,
    library_result,
    made_by_stdlib,
    moves_tensors,
    moves_to_program_device,
)
from torchport.check.port._class_attributes import ClassAttributes
from torchport.check.port._class_factories import object_factory
from torchport.check.port._command_line import CommandLine
from torchport.check.port._container_items import ContainerItems
from torchport.check.port._data_copies import copies_a_sequence
from torchport.check.port._device_flow import NOT_FORWARD
from torchport.check.port._elements import ElementKinds, is_builtin
from torchport.check.port._facts import PortFacts, PortScope
from torchport.check.port._models import MODEL_METHODS
from torchport.check.port._parameters import CallerKinds
from torchport.check.port._placed import placed_by_the_port
from torchport.check.port._reaching import Reaching
from torchport.check.port._value_kind import TENSORS, Elements, Kind, flat, join, memoized
from torchport.check.semantic import BindingKind

__all__ = ["Elements", "Kind", "ValueKinds", "join", "value_kinds"]


# (with the names a module is given besides: its file, its cached file, a package's path)
_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__cached__", "__path__"}
# Builtins whose result is never a tensor.
_PLAIN_BUILTINS = frozenset(
    {"len", "int", "float", "str", "bool", "repr", "range", "hash", "id", "ord", "chr", "format",
     "input", "open", "print", "isinstance", "issubclass", "type", "callable", "hasattr",
     "getattr", "vars", "dir", "divmod", "bin", "hex", "oct", "complex", "bytes", "all", "any"}
)  # fmt: skip
_CONTAINER_BUILTINS = frozenset({"list", "tuple", "set", "dict", "frozenset", "sorted"})
_JOINING_BUILTINS = frozenset({"min", "max", "sum", "abs", "round", "pow"})
_SAME_KIND_ATTRS = frozenset({"data", "grad", "T", "mT", "H", "real", "imag"})


def _asking(kinds: ValueKinds) -> Callable[[ast.expr], Kind]:
    """``kinds.of`` through a weak reference: the parts ``kinds`` holds ask it back.

    A strong one would make a reference cycle, and each file's facts would stay
    alive until the garbage collector runs (a fifth more peak memory on timm).
    """
    ref = weakref.ref(kinds)

    def of(expr: ast.expr) -> Kind:
        found = ref()
        assert found is not None, "a ValueKinds part outlived the ValueKinds that made it"
        return found.of(expr)

    return of


class ValueKinds:
    """Answers "what is this value" for one file (see the module docstring).

    Across calls it asks its :attr:`callers` (what a parameter holds, what a
    function of the file returns); for loop targets and unpackings its
    :attr:`unpacking` (what iterating or unpacking a value yields); for
    ``self.x`` and ``Cfg.x`` its :attr:`attributes` (what the file's own classes
    store). Each asks back this object's :meth:`of`.
    """

    def __init__(self, facts: PortFacts) -> None:
        self.facts = facts
        self.ctx: Context = facts.ctx
        self.scopes = facts.ctx.scopes
        self._memo: dict[int, object] = {}  # expression and binding kinds, by node id
        self.reaching = Reaching(self.scopes)
        kind_of = _asking(self)
        self.callers = CallerKinds(facts, kind_of)
        self.unpacking = ElementKinds(self.scopes, kind_of, self.callers, facts.loads_of)
        self.attributes = ClassAttributes(self.ctx, kind_of)
        self.command_line = CommandLine(self.ctx, self.callers)
        self.containers = ContainerItems(facts, self.reaching, self.attributes, kind_of)
        dataloaders = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
        self._loader_classes = self._subclasses(dataloaders, "DataLoader")
        self._dataset_classes = self._subclasses(set(), "Dataset")

    # ------------------------------------------------------------ expressions

    def of(self, expr: ast.expr) -> Kind:
        """What ``expr`` evaluates to where it stands."""
        return memoized(self._memo, id(expr), self._of, expr)

    def _scope(self, node: ast.AST) -> PortScope:
        return self.facts.scope_of.get(id(node)) or self.facts.module

    def _of(self, expr: ast.expr) -> Kind:
        if isinstance(expr, (ast.Constant, ast.JoinedStr, ast.Lambda)):
            return Kind.OTHER
        if isinstance(expr, ast.Name):
            return self._name(expr)
        if isinstance(expr, ast.Call):
            return self._call(expr)
        if isinstance(expr, ast.Attribute):
            return self._attribute(expr)
        if isinstance(expr, ast.Subscript):
            if (read := self.facts.flow.items.of(expr)) is not None:
                return join(self.of(e) for e in read)  # `d["a"]` of `d = dict(a=...)`
            inner = self.of(expr.value)
            if inner is Kind.OTHER:
                items = self.unpacking.literal_items(expr.value)
                return join(items) if items is not None else Kind.OTHER
            if inner is Kind.LOADER:
                return Kind.BATCH  # `train_ds[0]`: an item of a dataset
            return Kind.MODEL if inner is Kind.MODEL else inner
        if isinstance(expr, ast.BinOp):
            return self._combined([expr.left, expr.right])
        if isinstance(expr, ast.Compare):
            return self._combined([expr.left, *expr.comparators])
        if isinstance(expr, ast.UnaryOp):
            return Kind.OTHER if isinstance(expr.op, ast.Not) else self.of(expr.operand)
        if isinstance(expr, ast.BoolOp):
            return join(self.of(v) for v in expr.values)
        if isinstance(expr, ast.IfExp):
            return join((self.of(expr.body), self.of(expr.orelse)))
        if isinstance(expr, ast.NamedExpr):
            return self.of(expr.value)
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return self._container(expr.elts)
        if isinstance(expr, ast.Dict):
            return self._container([v for v in expr.values if v is not None])
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            item = expr.value if isinstance(expr, ast.DictComp) else expr.elt
            if moves_tensors(item):
                return Kind.DEVICE  # `{k: v.to(device) if isinstance(v, Tensor) else v ...}`
            return self._container([item])
        return Kind.UNKNOWN

    def _container(self, items: list[ast.expr]) -> Kind:
        """A list, tuple or dict: no tensor to move when it holds none, else one per item."""
        return Kind.OTHER if all(self.of(e) is Kind.OTHER for e in items) else Kind.UNKNOWN

    def _combined(self, operands: list[ast.expr]) -> Kind:
        kinds = [self.of(o) for o in operands]
        if Kind.DEVICE in kinds and Kind.UNKNOWN in kinds:  # `w * x` of `forward(2)`, `(X)`
            pairs = zip(operands, kinds, strict=True)
            kinds = [Kind.DEVICE if self._number_or_device(o, k) else k for o, k in pairs]
        if any(k in TENSORS for k in kinds):
            rest = [k for k in kinds if k is not Kind.OTHER]
            return Kind.DEVICE if all(k is Kind.DEVICE for k in rest) else Kind.TENSOR
        if all(k is Kind.OTHER for k in kinds):
            return Kind.OTHER
        if all(k in (Kind.NUMPY, Kind.OTHER) for k in kinds):
            return Kind.NUMPY
        return Kind.UNKNOWN

    def _number_or_device(self, operand: ast.expr, kind: Kind) -> bool:
        if kind is not Kind.UNKNOWN or not isinstance(operand, ast.Name):
            return False
        return self.callers.number_or_device(self.reaching.may_reach(operand))

    def _attribute(self, expr: ast.Attribute) -> Kind:
        if expr.attr in META_ATTRS:
            return Kind.OTHER
        value = expr.value
        if isinstance(value, ast.Name) and value.id == "self":
            scope = self._scope(expr)
            if self.facts.holds_model(expr, scope):
                return Kind.MODEL
            if scope.cls is None:
                return Kind.UNKNOWN
            return self.attributes.own_attribute(scope.cls, expr.attr)
        cls = self.attributes.file_class(value)
        if cls is not None:
            # `Cfg.x`: what the class body holds
            return self.attributes.class_attribute(cls, expr.attr)
        record = self._record_of(value)
        held = self.attributes.own_attribute(record, expr.attr) if record else Kind.UNKNOWN
        if held in (Kind.OTHER, Kind.NUMPY):  # `params.gamma`, `h.mask` of `h = Holder()`
            return held
        if self.command_line.scalar(expr):
            return Kind.OTHER  # `args.gamma` of `add_argument("--gamma", type=float)`
        inner = self.of(value)
        if inner in (Kind.TENSOR, Kind.DEVICE):
            return inner if expr.attr in _SAME_KIND_ATTRS else Kind.UNKNOWN
        if inner in (Kind.BATCH, Kind.MODEL, Kind.NUMPY, Kind.LIBRARY):
            return inner  # `batch.text`, `model.fc`, `arr.T`, `lib_object.field`
        if inner is Kind.OTHER and made_by_stdlib(value, self.ctx.qualname, self._nothing_to_move):
            return Kind.OTHER  # `Path(__file__).resolve().parent`: no tensor in the making
        if inner is Kind.OTHER and self._module_name(value):
            if self.facts.project.modules and self.facts.project.lookup(expr) == (
                "tensor",
                expr.attr,
            ):
                return Kind.TENSOR  # `m.DATA`: a module-level CPU tensor of the project
            return Kind.OTHER  # `np.pi`, `math.e`, `torch.float32`
        return Kind.UNKNOWN

    def _model_method_gives(self, func: ast.Attribute) -> Kind | None:
        """``ac.step(obs)`` where ``ac`` is an object of the file's own model class and
        ``step`` a plain method of its body every ``return`` of which is numpy or no
        tensor (``return self.v(obs).numpy()``): that kind, not a forward's output."""
        cls = self.instance_class(func.value)
        if cls is None:
            return None
        for stmt in cls.body:
            if (
                isinstance(stmt, ast.FunctionDef)
                and stmt.name == func.attr
                and not stmt.decorator_list
            ):
                kind = self.callers.returns(stmt)
                return kind if kind in (Kind.NUMPY, Kind.OTHER) else None
        return None

    def instance_class(self, value: ast.expr) -> ast.ClassDef | None:
        """:meth:`ClassAttributes.instance_class` of ``value`` where it stands."""
        return self.attributes.instance_class(value, self.reaching)

    def _record_of(self, value: ast.expr) -> ast.ClassDef | None:
        """:meth:`instance_class`, when the class has no base but ``object``
        (``params = Params()``): what its methods store on ``self`` is what the object
        holds (:meth:`ClassAttributes.own_attribute`, which also counts the file's stores
        into the attribute from outside). A base class could store there too, unseen: no
        answer then."""
        cls = self.instance_class(value)
        if cls is None or cls.keywords:
            return None
        if any(getattr(base, "id", None) != "object" for base in cls.bases):
            return None
        return cls

    def _nothing_to_move(self, expr: ast.expr) -> bool:
        return self.of(expr) is Kind.OTHER

    def _module_name(self, expr: ast.expr) -> bool:
        root = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        return any(b.kind is BindingKind.IMPORT for b in self.scopes.bindings(root.id, root))

    # ------------------------------------------------------------ names

    def _name(self, name: ast.Name) -> Kind:
        found = self.reaching.may_reach(name)
        if not found:
            return Kind.OTHER if name.id in _BUILTINS else Kind.UNKNOWN
        kinds = []
        for b in found:
            if b.kind is BindingKind.DELETE:
                continue
            kinds.append(self.binding(b))
        return join(kinds)

    def binding(self, b: object) -> Kind:
        """What one binding (of :attr:`Context.scopes`) binds."""
        return memoized(self._memo, id(b), self._binding, b)

    def _binding(self, b: object) -> Kind:
        kind = getattr(b, "kind", None)
        node = getattr(b, "node", None)
        value = getattr(b, "value", None)
        if kind is BindingKind.IMPORT and getattr(b, "name", None) in self.facts.project.tensors:
            # `from model import DATA` (and `data = DATA`): a project's CPU tensor; else none
            return Kind.TENSOR
        if kind in (BindingKind.IMPORT, BindingKind.DEF, BindingKind.CLASS):
            return Kind.OTHER
        if value is not None:
            return self.of(value)
        if kind is BindingKind.PARAMETER and isinstance(node, ast.arg):
            return self.callers.parameter(node)
        if kind in (BindingKind.LOOP, BindingKind.ASSIGN) and isinstance(node, ast.Name):
            return self.unpacking.target(node)
        if kind is BindingKind.WITH and isinstance(node, ast.Name):
            holder = self.scopes.parent(node)
            if isinstance(holder, ast.withitem) and holder.optional_vars is node:
                return self.of(holder.context_expr)  # `with open(p) as f`: a file
        if kind is BindingKind.AUGMENTED and isinstance(node, ast.Name):
            holder = self.scopes.parent(node)
            if isinstance(holder, ast.AugAssign):
                return join((self._combined([holder.value]), self._before(node)))
        return Kind.UNKNOWN

    def _before(self, node: ast.Name) -> Kind:
        """``x += y``: the kind ``x`` had before (its other bindings)."""
        others = [
            b for b in self.scopes.bindings(node.id, node) if getattr(b, "node", None) is not node
        ]
        return join(self.binding(b) for b in others) if others else Kind.UNKNOWN

    def _call(self, call: ast.Call) -> Kind:
        facts = self.facts
        scope = self._scope(call)
        if moves_to_program_device(call):
            return Kind.DEVICE
        if facts.forward(call, scope):
            return Kind.DEVICE
        if facts.builds_model(call, scope):
            return Kind.MODEL
        if facts.cpu_tensor_call(call):
            return Kind.TENSOR  # `make_mask(n)`: a function returning a CPU tensor
        func = call.func
        made = object_factory(call, self.ctx)  # `Vocabulary.from_stoi(d)`: a plain class's
        if made is not None:  # instance; another method of a project class: not known
            return Kind.OTHER if made else Kind.UNKNOWN
        if isinstance(func, ast.Attribute) and not self._module_name(func.value):
            return self._method(call, func)
        name = self.ctx.qualname(func)
        if name is not None:
            return self._qualified(call, name)
        if isinstance(func, ast.Name):
            if is_builtin(self.scopes, func):
                return self._builtin_call(call, func.id)
            return self._local_call(call, func)
        return Kind.UNKNOWN

    def _qualified(self, call: ast.Call, name: str) -> Kind:
        if name in self._loader_classes or name.rsplit(".", 1)[-1] == "DataLoader":
            return Kind.LOADER
        head = name.partition(".")[0]
        if name in SAME_KIND_CALLS:  # `Variable(t)`, `copy.deepcopy(t)`: the argument's kind
            return self.of(call.args[0]) if call.args else Kind.UNKNOWN
        if head != "torch":
            if head == "numpy":
                return Kind.NUMPY
            passing = library_result(name)
            return Kind.LIBRARY if passing is None else Kind.UNKNOWN if passing else Kind.OTHER
        if name in PARAMETER:
            return Kind.TENSOR
        if name in TORCH_LOADS:
            where = next((k.value for k in call.keywords if k.arg == "map_location"), None)
            if where is not None and device_target(where):
                return Kind.DEVICE  # what it loads lands on the device
            return Kind.UNKNOWN
        if "Dataset" in name:
            return Kind.LOADER  # iterating a dataset yields its items, as a loader's
        tail = name.rsplit(".", 1)[-1]
        if name.count(".") == 1 and tail not in TORCH_NOT_TENSORS:
            if tail[:1].islower() or tail.endswith("Tensor"):
                return self._made(call)
            return Kind.OTHER
        if name.startswith(TENSOR_SPACES):
            return self._made(call)
        if name.startswith(NOT_TENSOR_SPACES) or tail in TORCH_NOT_TENSORS:
            return Kind.OTHER
        return Kind.UNKNOWN

    def _made(self, call: ast.Call) -> Kind:
        """A torch function's tensor: on the device when made there or from device tensors,
        or when the port makes it there (TP503's fix: :mod:`~torchport.check.port._placed`)."""
        if placed_by_the_port(call, self.facts):
            return Kind.DEVICE
        if copies_a_sequence(call, self.ctx.qualname(call.func), self.reaching):
            return Kind.TENSOR  # `torch.tensor(outs)` of a list: on the CPU (`_data_copies`)
        for k in call.keywords:
            if k.arg == "device":
                if follows_a_tensor(k.value):  # `device=x.device`: where `x` is
                    assert isinstance(k.value, ast.Attribute)
                    return Kind.DEVICE if self.of(k.value.value) is Kind.DEVICE else Kind.TENSOR
                return Kind.DEVICE if device_target(k.value) else Kind.TENSOR
        inputs = [self.of(a) for a in call.args if not isinstance(a, ast.Starred)]
        for a in call.args:
            if isinstance(a, (ast.List, ast.Tuple)):  # torch.cat([a, b])
                inputs += [self.of(e) for e in a.elts]
        tensors = [k for k in inputs if k in TENSORS]
        if tensors and all(k is Kind.DEVICE for k in tensors):
            return Kind.DEVICE
        return Kind.TENSOR

    def _method(self, call: ast.Call, func: ast.Attribute) -> Kind:
        inner = self.of(func.value)
        attr = func.attr
        if attr == "to" and inner in TENSORS:
            target = (
                call.args[0]
                if call.args
                else next((k.value for k in call.keywords if k.arg == "device"), None)
            )
            if target is not None and follows_a_tensor(target):  # `x.to(y.device)`: next to y
                assert isinstance(target, ast.Attribute)
                return Kind.DEVICE if self.of(target.value) is Kind.DEVICE else Kind.TENSOR
        if inner in TENSORS:
            if attr == "numpy":
                return Kind.NUMPY
            if attr == "cpu":
                return Kind.TENSOR
            if attr in HOST_READS:
                return Kind.OTHER
            return Kind.DEVICE if inner is Kind.DEVICE else Kind.TENSOR
        if inner is Kind.MODEL:
            if attr in MODEL_METHODS:
                return Kind.MODEL
            if attr in NOT_FORWARD:
                return Kind.OTHER
            gives = self._model_method_gives(func)
            return gives if gives is not None else Kind.DEVICE
        if inner is Kind.NUMPY:
            return Kind.OTHER if attr in ("tolist", "item") else Kind.NUMPY
        if inner is Kind.LOADER and attr in ("next", "__next__") and not call.args:
            return Kind.BATCH  # `dataiter.next()`: an item, as `next(dataiter)` gives
        if inner is Kind.LIBRARY:
            return Kind.LIBRARY  # `scaler.transform(X)`, `tokenizer.encode(s)`
        if inner is Kind.OTHER:  # string and number methods; `memory.pop()`: what was put in
            item = self.containers.item(func)
            return Kind.OTHER if item is None else item
        return Kind.UNKNOWN

    def _builtin_call(self, call: ast.Call, name: str) -> Kind:
        args = [a for a in call.args if not isinstance(a, ast.Starred)]
        if name in _PLAIN_BUILTINS:
            return Kind.OTHER
        if name in _CONTAINER_BUILTINS:
            return self._container([*args, *(k.value for k in call.keywords)])
        if name in _JOINING_BUILTINS:
            return self._combined(args) if args else Kind.UNKNOWN
        if name == "iter" and args:
            return Kind.LOADER if self.unpacking.elements(args[0]) is Kind.BATCH else Kind.UNKNOWN
        if name == "next" and args:
            return flat(self.unpacking.elements(args[0]))
        return Kind.UNKNOWN

    def _local_call(self, call: ast.Call, func: ast.Name) -> Kind:
        """A call of a function or class of this file, or of a value."""
        found = self.scopes.bindings(func.id, func)
        if len(found) != 1:
            return Kind.UNKNOWN
        b = found[0]
        node = getattr(b, "node", None)
        if b.kind is BindingKind.CLASS and isinstance(node, ast.ClassDef):
            if node.name in self._loader_classes or node.name in self._dataset_classes:
                return Kind.LOADER
            if self.attributes.holds_settings_only(node):
                return Kind.OTHER  # `params = Params()`: numbers and strings, nothing to call
            return Kind.UNKNOWN  # an object: what it holds is not visible here
        if b.kind is BindingKind.DEF and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return self.callers.returns(node)
        made = self.binding(b)
        if made in (Kind.DEVICE, Kind.MODEL):
            return Kind.DEVICE  # `net = Net().to(device)` then `net(x)`: a forward, on the device
        return Kind.LIBRARY if made is Kind.LIBRARY else Kind.UNKNOWN

    def _subclasses(self, bases: set[str], suffix: str) -> set[str]:
        """Names of the file's classes deriving from ``bases`` (or a base named ``*suffix``)."""
        found = set(bases)
        changed = True
        while changed:
            changed = False
            for cls in self.facts.classdefs:
                if cls.name in found:
                    continue
                for base in cls.bases:
                    name = self.ctx.qualname(base) or getattr(base, "id", "") or ""
                    if name in found or name.endswith(suffix):
                        found.add(cls.name)
                        changed = True
                        break
        return found - bases


def value_kinds(facts: PortFacts) -> ValueKinds:
    """The value kinds of the file ``facts`` describes (made once per walk)."""
    memo = facts.ctx.memo
    found = memo.get("port.kinds")
    if found is None:
        found = memo["port.kinds"] = ValueKinds(facts)
    assert isinstance(found, ValueKinds)
    return found

"""Tensors a class keeps where ``model.to(device)`` does not reach them.

A plain tensor attribute of a module (not a parameter or buffer), and the state an
optimizer subclass makes: both stay on the CPU when the model moves.
"""

from __future__ import annotations

import ast
from collections import Counter

from torchport.check._context import Context
from torchport.check.rules._init_calls import (
    base_init_may_call,
    init_chain,
    may_hold_weights,
    returns_a_built_module,
    self_calls_of_init,
    words,
)
from torchport.check.rules._port import PortFacts, creators, is_move, port_facts
from torchport.check.semantic import BindingKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from torchport.check.port._facts import PortScope

__all__ = [
    "CPU_DEFAULT",
    "HELD_APART",
    "OPTIMIZER_STATE",
    "class_assignments",
    "cpu_default_of_a_method",
    "held_apart",
    "init_holds_weights",
    "moved_or_kept_on_the_cpu",
    "subclasses_optimizer",
    "submodules",
    "tensor_annotation",
    "zero_dim",
]


HELD_APART = (
    "`model.to(device)` does not move the plain tensor attribute `self.{name}`: register it "
    "with `self.register_buffer({name!r}, ..., persistent=False)` or make it on the input's "
    "device where it is used"
)


OPTIMIZER_STATE = (
    "make the optimizer's tensor on its parameter's device (`device=p.device`, or "
    "`torch.zeros_like(p)`): once the model is on the accelerator, a CPU state meets device "
    "parameters and gradients (no automatic fix: the port leaves optimizers to their authors)"
)


CPU_DEFAULT = (
    "this default tensor is made once, on the CPU, when the class is defined: "
    "`model.to(device)` never moves it; default to `None` and make it on the input's device "
    "in the body (no automatic fix: the signature is the callers')"
)


def cpu_default_of_a_method(node: ast.Call, name: str, facts: PortFacts, ctx: Context) -> bool:
    """Whether ``node`` (a call of ``name``, no ``device=``) makes a parameter's default
    of an ``nn.Module`` method other than ``__init__``, a tensor of one dimension or more.

    A default is evaluated when the ``def`` runs (for a method: when its class is
    defined), not when the method is called; an annotation is not a default.
    ``__init__``'s defaults are consumed while the module is built.
    """
    chain = ctx.ancestors
    for i in range(len(chain) - 1, 0, -1):
        outer = chain[i]
        if isinstance(outer, ast.arg | ast.Lambda | ast.stmt):
            return False  # an annotation, a lambda's own default, or a statement in a body
        if isinstance(outer, ast.arguments):
            func = chain[i - 1]
            if not isinstance(func, ast.FunctionDef) or func.name == "__init__":
                return False
            if zero_dim(node, name):  # a 0-dim tensor mixes with any device
                return False
            return method_of_a_module(facts.scope_of_function(func)) is not None
    return False


# Makers whose one number argument is the tensor's value (a 0-dim tensor), not a size.
_SCALAR_MAKERS = frozenset({"torch.tensor", "torch.as_tensor", "torch.scalar_tensor"})


def zero_dim(node: ast.Call, name: str) -> bool:
    """Whether ``node`` (a call of ``name``) makes a 0-dim tensor, which mixes with any device.

    ``torch.tensor(2.0)`` does; ``torch.ones(2)`` and ``torch.zeros(1)`` do not (the
    number is a size: a 1-dim CPU tensor meets an accelerator tensor with an error).
    """
    if not node.args:
        return False
    first = node.args[0]
    if isinstance(first, ast.UnaryOp) and isinstance(first.op, ast.USub | ast.UAdd):
        first = first.operand
    if name in _SCALAR_MAKERS:
        return isinstance(first, ast.Constant) and isinstance(first.value, int | float | bool)
    return isinstance(first, ast.Tuple) and not first.elts and len(node.args) == 1  # zeros(())


def _kept_value(
    node: ast.Call, parents: dict[int, ast.AST], qualname: Callable[[ast.expr], str | None]
) -> ast.AST:
    """The expression holding what ``node`` makes: through arithmetic, the tensor's own
    methods (``torch.ones(2) * 2``, ``torch.arange(4).float()``) and torch functions of it
    (``torch.sqrt(torch.FloatTensor([d]))``, ``Variable(...)``), not into another call."""
    expr: ast.AST = node
    while True:
        up = parents.get(id(expr))
        if isinstance(up, ast.BinOp | ast.UnaryOp):
            expr = up
            continue
        if isinstance(up, ast.Call) and expr in up.args and _of_a_tensor(qualname(up.func)):
            expr = up
            continue
        call = parents.get(id(up)) if isinstance(up, ast.Attribute) else None
        if isinstance(up, ast.Attribute) and isinstance(call, ast.Call) and call.func is up:
            expr = call
            continue
        return expr


def _of_a_tensor(name: str | None) -> bool:
    """Whether a call of ``name`` gives a tensor made from its argument where the argument
    is (``torch.sqrt``, ``torch.as_tensor``, ``F.normalize``, ``Variable``): not a module,
    a ``Parameter`` or a buffer, which ``model.to`` moves."""
    if name is None or not name.startswith("torch."):
        return False
    return not name.startswith("torch.nn.") or name.startswith("torch.nn.functional.")


def held_apart(
    node: ast.Call,
    name: str,
    init: ast.FunctionDef,
    parents: dict[int, ast.AST],
    qualname: Callable[[ast.expr], str | None],
) -> str | None:
    """The attribute ``__init__`` keeps ``node`` in (``self.scale = torch.tensor([2.0])``),
    if another method of the class reads it; None for scalars, which mix with any device."""
    if zero_dim(node, name):
        return None  # `torch.tensor(2.0)`: a 0-dim tensor, usable with tensors anywhere
    value = _kept_value(node, parents, qualname)
    holder = parents.get(id(value))
    if not (isinstance(holder, ast.Assign) and holder.value is value and len(holder.targets) == 1):
        return None
    target = holder.targets[0]
    if not (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    ):
        return None
    cls = parents.get(id(init))
    if not isinstance(cls, ast.ClassDef):
        return None
    for method in cls.body:
        if method is init or not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for n in ast.walk(method):
            if (
                isinstance(n, ast.Attribute)
                and n.attr == target.attr
                and isinstance(n.ctx, ast.Load)
                and isinstance(n.value, ast.Name)
                and n.value.id == "self"
            ):
                return target.attr
    return None


def subclasses_optimizer(cls: ast.ClassDef, ctx: Context) -> bool:
    """Whether ``cls`` subclasses ``torch.optim.Optimizer`` (directly)."""
    return any(
        (ctx.qualname(base) or "") in ("torch.optim.Optimizer", "torch.optim.optimizer.Optimizer")
        for base in cls.bases
    )


def tensor_annotation(note: ast.expr) -> bool:
    """Whether a parameter's annotation names a tensor type."""
    text = ast.unparse(note)
    return "Tensor" in text


def submodules(cls: ast.ClassDef, facts: PortFacts) -> frozenset[str]:
    """The attributes a module class sets to modules it builds (``self.fc = nn.Linear(...)``).

    Worked out once per class and file (asked for every tensor a method makes).
    """
    known = facts.class_submodules.get(id(cls))
    if known is not None:
        return known
    found: set[str] = set()
    for node in class_assignments(cls):  # (a set: the walk's order does not matter)
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        for target in node.targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and facts.known.builds(node.value, lambda _: False)
            ):
                found.add(target.attr)
    facts.class_submodules[id(cls)] = frozen = frozenset(found)
    return frozen


# The fields of a node that hold statements (an `except` handler, a `match` case: a body).
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def class_assignments(cls: ast.ClassDef) -> list[ast.Assign | ast.AnnAssign]:
    """Every ``Assign`` and ``AnnAssign`` in the class (as ``ast.walk`` finds them, in
    another order): statements, so a walk of the blocks of statements alone meets them
    all, not the expressions around them (most of a class)."""
    found: list[ast.Assign | ast.AnnAssign] = []
    stack: list[ast.AST] = [cls]
    while stack:
        node = stack.pop()
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if block.__class__ is list:  # (an `IfExp`'s or a lambda's `body` is no list)
                for child in block:
                    if isinstance(child, ast.Assign | ast.AnnAssign):
                        found.append(child)
                    stack.append(child)
    return found


# Uses of a parameter that show it is a tensor.
_TENSOR_USES = frozenset(
    {"size", "shape", "device", "dim", "view", "reshape", "unsqueeze", "permute", "transpose",
     "contiguous", "float", "long", "masked_fill", "new_zeros", "new_ones", "expand"}
)  # fmt: skip


def device_of_the_inputs(
    method: ast.FunctionDef, nodes: list[ast.AST], facts: PortFacts, cls: ast.ClassDef | None
) -> str | None:
    """``x.device`` for the first parameter known to be a tensor, else the parameters' device,
    else None: in a method ``__init__`` calls (``self._load_model(...)``), the module may
    have no parameters yet, and ``next(self.parameters())`` raises ``StopIteration``.

    Known: used as one (``x.size(0)``, ``x.view(...)``, ``x.device``) or given
    to a submodule the class builds (``self.fc(x)``). A parameter annotated
    with another type, or only passed to some method (``self.reset(name)``:
    a string as often as not), gives no device: ``.device`` of a string raises.
    """
    parents = facts.parents
    built = submodules(cls, facts) if cls is not None else frozenset()
    params = [*method.args.posonlyargs, *method.args.args][1:]
    for param in params:
        note = param.annotation
        if note is not None and not tensor_annotation(note):
            continue
        for n in nodes:
            if not (isinstance(n, ast.Name) and n.id == param.arg):
                continue
            if not _sees_the_parameter(n, facts):
                continue  # `state = torch.from_numpy(state)` then `self.fc(state)`: not it
            parent = parents.get(id(n))
            if isinstance(parent, ast.Attribute) and parent.attr in _TENSOR_USES:
                return f"{param.arg}.device"
            if (
                isinstance(parent, ast.Call)
                and isinstance(parent.func, ast.Attribute)
                and isinstance(parent.func.value, ast.Name)
                and parent.func.value.id == "self"
                and parent.func.attr in built
                and n in parent.args
            ):
                return f"{param.arg}.device"  # given to a submodule: a tensor
    if cls is None or _called_by_init(method.name, cls, facts.ctx):
        return None
    if not init_holds_weights(cls, facts):
        return None
    if may_run_in_a_base_init(method, cls, facts):
        return None  # a hook a base class's `__init__` calls: no parameters yet
    return PARAMETERS_DEVICE


PARAMETERS_DEVICE = "next(self.parameters()).device"


def may_run_in_a_base_init(method: ast.FunctionDef, cls: ast.ClassDef, facts: PortFacts) -> bool:
    """:func:`base_init_may_call` (once per class and method); a base of another file's hook is
    a method the file never calls that returns a module or tensor it makes (``_build_encoder``)."""
    answers = _memo(facts.ctx, "module.run_by_a_base_init").setdefault(id(cls), {})
    if method.name not in answers:
        from torchport.check.port._structure import classes_by_name

        ctx, known = facts.ctx, facts.known
        made = frozenset().union(*creators())  # `torch.ones(n)`
        hook = not _attributes_named(method.name, ctx) and returns_a_built_module(
            method,
            lambda n: (
                ctx.qualname(n.func) in made or (known.constructor(n) and not known.stateless(n))
            ),
        )
        classes = classes_by_name(facts.structure, ctx)
        answers[method.name] = base_init_may_call(method.name, cls, classes, known.qualname, hook)
    return bool(answers[method.name])


def init_holds_weights(cls: ast.ClassDef, facts: PortFacts) -> bool:
    """Whether ``__init__`` of ``cls`` gives the module weights: ``self.fc = nn.Linear(...)``,
    ``self.w = nn.Parameter(...)``, ``self.register_parameter(...)``. Without them (a module
    of options, ``Combination`` subclasses, weights built by a base class of another
    file) ``next(self.parameters())`` may raise ``StopIteration``.

    Answered once per class of the file (asked for every tensor its methods make)."""
    memo = _memo(facts.ctx, "module.init_holds_weights")
    found = memo.get(id(cls))
    if found is None:
        found = memo[id(cls)] = _init_builds_weights(cls, facts)
    return bool(found)


def _init_builds_weights(cls: ast.ClassDef, facts: PortFacts) -> bool:
    known = facts.known
    if not any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in cls.body):
        # inherited: from `nn.Module`, `ABC` or a mixin, no weights; from another base, maybe
        return any(may_hold_weights(b, known.qualname(b)) for b in cls.bases)
    for stmt in _run_by_init(cls, facts.ctx)[0].values():
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            name = known.qualname(node.func) or ""
            func = node.func
            if (known.constructor(node) and not known.stateless(node)) or name.endswith(
                ".Parameter"
            ):
                return True
            if isinstance(func, ast.Attribute) and func.attr in (
                "register_parameter",
                "register_module",
                "add_module",
            ):
                return True
    return False


def _memo(ctx: Context, key: str) -> dict[int, Any]:
    """The file's memo ``key`` (a dict by node id) in ``ctx.memo``, made on first use."""
    memo = ctx.memo.get(key)
    if not isinstance(memo, dict):
        memo = ctx.memo[key] = {}
    return memo


def _run_by_init(
    cls: ast.ClassDef, ctx: Context
) -> tuple[dict[str, ast.FunctionDef], dict[int, str], Counter[str]]:
    """``__init__`` of ``cls`` and the methods it calls on ``self``, through one another
    (``self.define_network()``: the weights it builds are the module's from the start), by
    name; the ``self.<name>`` of each call made on the way (by id: its name); and how many
    of those there are of each name.

    Worked out once per class of the file (asked for each of its methods); not to be changed."""
    memo = _memo(ctx, "module.run_by_init")
    found = memo.get(id(cls))
    if found is None:
        found = memo[id(cls)] = init_chain(cls)
    return found


def _called_by_init(name: str, cls: ast.ClassDef, ctx: Context) -> bool:
    """Whether ``__init__`` of ``cls`` calls ``self.<name>(...)``.

    The names it calls so are gathered once per class of the file (one walk of ``__init__``)."""
    memo = _memo(ctx, "module.called_by_init")
    called = memo.get(id(cls))
    if called is None:
        called = memo[id(cls)] = self_calls_of_init(cls)
    return name in called


def _sees_the_parameter(name: ast.Name, facts: PortFacts) -> bool:
    """Whether the read ``name`` sees the method's parameter itself: the one binding that
    reaches it, or the only binding of the name there is. A parameter rebound before the
    read (``state = torch.from_numpy(state).float()``: the parameter was numpy) does not
    show what the parameter holds."""
    scopes = facts.ctx.scopes
    found = scopes.reaching(name.id, name)
    if found is not None:
        return found.kind is BindingKind.PARAMETER
    bound = scopes.bindings(name.id, name)
    return len(bound) == 1 and bound[0].kind is BindingKind.PARAMETER


def method_of_a_module(scope: PortScope | None) -> ast.FunctionDef | None:
    """The ``nn.Module`` method (with ``self`` first) that holds the call, if it is in one."""
    if scope is None or not scope.module_method or not isinstance(scope.node, ast.FunctionDef):
        return None
    method = scope.node
    params = [p.arg for p in (*method.args.posonlyargs, *method.args.args)]
    return method if params and params[0] == "self" else None


def in_a_module_method(func: ast.AST, ctx: Context) -> bool:
    """Whether the function ``func`` is an ``nn.Module`` method (:func:`method_of_a_module`)."""
    try:
        scope = port_facts(ctx).scope_of_function(func)
    except KeyError:  # a function the port's scopes leave out (a file without torch)
        return False
    return method_of_a_module(scope) is not None


def builds_the_module(method: ast.FunctionDef, cls: ast.ClassDef | None, ctx: Context) -> bool:
    """``__init__``, or a method only ``__init__`` calls (``self.define_network()``, through
    other such methods): the module is being made there, before it has a parameter to tell a
    device (``next(self.parameters())`` raises), and what it keeps is moved with the model.
    A method the file names anywhere else is not one (``self.reset()`` in ``forward`` too).
    Answered once per method of the file ``ctx`` walks (rules ask at every call in it)."""
    if method.name == "__init__":
        return True
    if cls is None:
        return False
    memo = _memo(ctx, "module.built_by_init")
    found = memo.get(id(method))
    if found is None:
        found = memo[id(method)] = _built_by_init(method.name, cls, ctx)
    return bool(found)


def _built_by_init(name: str, cls: ast.ClassDef, ctx: Context) -> bool:
    """:func:`builds_the_module` of the method ``name`` of ``cls`` (not ``__init__``).

    The text answers first where it can. In an ASCII file every ``X.<name>`` and every
    ``def <name>`` writes ``name`` once as a whole word, at a place of its own, so when
    the whole words ``name`` are exactly the class's own ``def <name>`` (and the
    ``self.<name>(...)`` calls of ``__init__``'s chain), there is no other ``X.<name>``
    in the file: the walk of every attribute's answer, asked only when the text holds more.
    """
    written = words(ctx.source, name)  # None: not ASCII (NFKC may spell it otherwise)
    defs = sum(
        isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == name for s in cls.body
    )
    if written == defs:
        return False  # no `X.<name>` anywhere: no `self.<name>(...)` puts it in the chain
    chain, inside, calls = _run_by_init(cls, ctx)
    if name not in chain:
        return False
    if written == defs + calls[name]:
        return True  # the chain's own `self.<name>(...)` are all the `X.<name>` there are
    return not any(id(n) not in inside for n in _attributes_named(name, ctx))


def _attributes_named(attr: str, ctx: Context) -> list[ast.Attribute]:
    """Every ``X.<attr>`` in the file, in no promised order (one table per file, the port's
    structure walk's where it walked the file; not one walk per method asked about)."""
    from torchport.check.port._structure import attribute_table

    return attribute_table(ctx).get(attr, [])


_CPU_ONLY = "torch.nn.utils.rnn."  # pack_padded_sequence wants its lengths on the CPU


def moved_or_kept_on_the_cpu(
    node: ast.Call, nodes: list[ast.AST], facts: PortFacts, ctx: Context
) -> bool:
    """Moved at once (``torch.zeros(3).to(x)``, ``.normal_().to(x)``), given ``**kwargs``, or
    fed to a CPU-only API."""
    from torchport.check.port._chains import initialized  # on first use

    parents = facts.parents
    parent = parents.get(id(initialized(node, parents)))
    if isinstance(parent, ast.Attribute) and is_move(parents.get(id(parent), parent)):
        return True
    return any(k.arg is None for k in node.keywords) or _cpu_only(node, nodes, ctx)


def _cpu_only(node: ast.Call, nodes: list[ast.AST], ctx: Context) -> bool:
    """Whether the tensor feeds an API that wants it on the CPU (packed sequence lengths)."""
    from torchport.check.port._calls import called  # on first use; also `pack = ...` (aliases)

    parents_names: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Assign) and n.value is node:
            parents_names.update(t.id for t in n.targets if isinstance(t, ast.Name))
    for n in (n for n in nodes if isinstance(n, ast.Call)):
        if (callee := called(n, ctx)) is not None and callee.name.startswith(_CPU_ONLY):
            for arg in (*n.args, *(k.value for k in n.keywords)):
                if arg is node or (isinstance(arg, ast.Name) and arg.id in parents_names):
                    return True
    return False

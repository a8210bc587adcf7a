"""What a project module's functions give: CPU tensors, views of their parameters, models.

Read from syntax alone, within one function's own body (nested functions, classes and
lambdas are theirs): :func:`returns_all` asks a question of every ``return``;
:func:`cpu_tensor` whether an expression is a tensor a torch factory made on the CPU
(through local names and the methods that keep a tensor where it is);
:func:`viewed_parameters` which parameters a function returns slices or views of;
:func:`tensor_positions` where the tuples it returns hold CPU tensors;
:func:`makes_cpu_tensor` whether it makes a CPU tensor or reads one into numpy
anywhere. :mod:`torchport.check.port._project` builds a module's facts from these.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Iterable, Iterator
from functools import partial

from torchport.check._context import Context
from torchport.check.port._calls import CREATORS, TYPED_CONSTRUCTORS
from torchport.check.port._models import ModelKnowledge
from torchport.check.port._own_device import moves_to_own_device
from torchport.check.port._straight_line import assigned_just_before
from torchport.check.port._structure import NO_CHILD_FIELDS

__all__ = [
    "builds",
    "converted_inputs",
    "cpu_tensor",
    "host_factory",
    "local_values",
    "makes_cpu_tensor",
    "only_made_into_tensors",
    "own_nodes",
    "own_tensor_functions",
    "returns_all",
    "takes_device",
    "tensor_positions",
    "viewed_parameters",
]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Tensor methods that keep a tensor a tensor (and where it is).
_KEEPS_TENSOR = frozenset(
    {"float", "double", "half", "long", "int", "bool", "byte", "unsqueeze", "squeeze",
     "view", "reshape", "t", "transpose", "permute", "contiguous", "clone", "detach",
     "expand", "repeat", "flatten", "type", "masked_fill", "fill_", "zero_", "uniform_",
     "normal_"}
)  # fmt: skip


def returns_all(
    func: ast.FunctionDef | ast.AsyncFunctionDef, test: Callable[[ast.expr], bool]
) -> bool:
    """Whether ``func`` returns something on every ``return`` and each passes ``test``.

    Stops at the first ``return`` that fails (most functions are no tensor
    helpers: their first ``return`` says so), or a ``yield`` (a generator).
    """
    found = False
    for node in own_nodes(func):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Return):
            if node.value is None or not test(node.value):
                return False
            found = True
    return found


_NESTED = (*_FUNCTIONS, ast.ClassDef, ast.Lambda)


def converted_inputs(ctx: Context, cls: ast.ClassDef) -> tuple[int, ...]:
    """The positions (0: the first after ``self``) of the parameters of ``cls``'s own
    ``forward`` that it reads only as the data a torch creator makes a new tensor of
    (``def forward(self, state): state = torch.from_numpy(state).float()``): the model
    takes host data and makes the tensor itself, where the port of its file puts it (on
    the model's device). What a call hands it there is no value to move; nor what it
    moves to its own parameters' device (``x.to(next(self.parameters()).device)``:
    :mod:`torchport.check.port._own_device`).

    A read sees the parameter when it is the one binding reaching it, or the name's only
    binding; a read that may see either is no answer (the position is left out)."""
    forward = next(
        (
            n
            for n in cls.body
            if isinstance(n, ast.FunctionDef) and n.name == "forward" and not n.decorator_list
        ),
        None,
    )
    if forward is None:
        return ()
    own = [*forward.args.posonlyargs, *forward.args.args]
    if not own:
        return ()
    nodes = list(own_nodes(forward))
    moved = partial(moves_to_own_device, cls, own[0].arg)
    return tuple(
        position
        for position, param in enumerate(own[1:])
        if only_made_into_tensors(ctx, param, nodes, partial(_holder, forward), moved)
    )


def only_made_into_tensors(
    ctx: Context,
    param: ast.arg,
    nodes: Iterable[ast.AST],
    parent_of: Callable[[ast.Name], ast.AST | None],
    moved: Callable[[ast.AST | None, ast.Name], bool] | None = None,
) -> bool:
    """Whether ``param`` is read among ``nodes``, and every read that sees the parameter
    itself is the data a torch creator makes a new tensor of (``torch.from_numpy(state)``,
    ``torch.tensor(s, dtype=...)``; ``parent_of``: the node holding a read), or a read
    ``moved`` accepts (given its holder and the read).

    A read sees the parameter when it is the binding every path passes last, or the
    name's sole binding; a read that may see either makes the answer False. ``len(s)``
    is allowed beside them (an int), but is not itself such a read.
    """
    scopes = ctx.scopes
    creators = CREATORS | TYPED_CONSTRUCTORS
    seen = False
    for node in nodes:
        if not (
            isinstance(node, ast.Name) and node.id == param.arg and isinstance(node.ctx, ast.Load)
        ):
            continue
        found = scopes.reaching(node.id, node)
        if found is None:
            every = scopes.bindings(node.id, node)
            found = every[0] if len(every) == 1 else None
        if found is None:
            return False  # which binding it sees is not told
        if found.node is not param:
            continue  # a later binding's read (`s` after `s = torch.tensor(s)`)
        holder = parent_of(node)
        if _a_size(ctx, holder, node):
            continue  # `len(s)` beside `torch.tensor(s).reshape(-1, len(s))`: an int
        if moved is not None and moved(holder, node):
            seen = True
            continue
        if not (
            isinstance(holder, ast.Call)
            and holder.args
            and holder.args[0] is node
            and (ctx.qualname(holder.func) or "") in creators
        ):
            return False
        seen = True
    return seen


def _a_size(ctx: Context, holder: ast.AST | None, read: ast.Name) -> bool:
    """``len(s)``: the builtin's int, which carries none of the argument's data (a
    ``len`` the file binds is a name like any other)."""
    return (
        isinstance(holder, ast.Call)
        and isinstance(holder.func, ast.Name)
        and holder.func.id == "len"
        and holder.args == [read]
        and not holder.keywords
        and not ctx.scopes.bindings("len", holder.func)
    )


def _holder(func: ast.AST, arg: ast.Name) -> ast.Call | None:
    """The call in ``func`` whose first argument is ``arg``, or whose method ``arg``'s is
    (``arg.to(...)``), if there is one."""
    for node in own_nodes(func):
        if isinstance(node, ast.Call) and (
            (node.args and node.args[0] is arg)
            or (isinstance(node.func, ast.Attribute) and node.func.value is arg)
        ):
            return node
    return None


# Per function: its own nodes, listed once and kept while its tree lives (the port's facts
# ask for them several times a function: each test of its returns, its CPU tensors, its
# locals' values).
_OWN: weakref.WeakKeyDictionary[ast.AST, list[ast.AST]] = weakref.WeakKeyDictionary()


def own_nodes(func: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``func``'s body, not those of functions or classes nested in it.

    In ``ast.iter_child_nodes`` order, less the contexts and operators. Read them only.
    """
    found = _OWN.get(func)
    if found is None:
        found = _OWN[func] = list(_own_nodes(func))
    return iter(found)


def _own_nodes(func: ast.AST) -> Iterator[ast.AST]:
    stack = list(getattr(func, "body", []))
    pop, push = stack.pop, stack.append
    node_class = ast.AST
    while stack:
        node = pop()
        yield node
        for field_name in node._fields:
            if field_name in NO_CHILD_FIELDS:
                continue
            value = getattr(node, field_name, None)
            if value.__class__ is list:
                for child in value:
                    if isinstance(child, node_class) and not isinstance(child, _NESTED):
                        push(child)
            elif isinstance(value, node_class) and not isinstance(value, _NESTED):
                push(value)


# Per function: each name's values in ``own_nodes`` order, and the names bound otherwise
# (held while the function's tree lives: asked per name, worked out once per function).
_LocalTable = tuple[dict[str, list[ast.expr]], frozenset[str]]
_LOCALS: weakref.WeakKeyDictionary[ast.AST, _LocalTable] = weakref.WeakKeyDictionary()
_BINDS_INSIDE = (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)


def _local_table(func: ast.AST) -> _LocalTable:
    found = _LOCALS.get(func)
    if found is not None:
        return found
    values: dict[str, list[ast.expr]] = {}
    other: set[str] = set()
    walked: set[int] = set()  # nodes of _BINDS_INSIDE inside one walked already: theirs are in
    for node in own_nodes(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    if len(node.targets) != 1:
                        other.add(target.id)
                    else:
                        values.setdefault(target.id, []).append(node.value)
                else:  # unpacked or stored into: every name in it (`a[i] = v`: `a`, `i`)
                    other.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, _BINDS_INSIDE) and id(node) not in walked:
            for n in ast.walk(node):  # every name it stores (a loop's body too)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    other.add(n.id)
                elif isinstance(n, _BINDS_INSIDE):
                    walked.add(id(n))
    args = getattr(func, "args", None)
    if args is not None:
        other.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
    found = _LOCALS[func] = (values, frozenset(other))
    return found


def local_values(func: ast.AST | None, name: str) -> list[ast.expr] | None:
    """Every value assigned to ``name`` in ``func`` (None: also bound otherwise).

    ``name = value`` with one target, in ``own_nodes`` order; None when ``name`` is
    also a parameter, one of several targets, in an unpacked or subscripted target, or
    stored by an augmented or annotated assignment, a ``for``, a ``with`` or ``:=``.
    """
    if func is None:
        return None
    values, other = _local_table(func)
    if name in other:
        return None
    found = values.get(name)
    return list(found) if found else None


def _values_read(func: ast.AST | None, use: ast.Name) -> list[ast.expr] | None:
    """What ``use`` may read: :func:`local_values`, or, where the name is given several
    values or is bound otherwise too, what the statements just before assign (asked
    only then: it reads the function's statements once)."""
    if func is None:
        return None
    values, other = _local_table(func)
    found = values.get(use.id)
    if not found:
        return None
    if len(found) > 1 or use.id in other:
        last = assigned_just_before(func, use)
        if last is not None:
            return [last]
    return None if use.id in other else list(found)


def builds(knowledge: ModelKnowledge, expr: ast.expr, *, func: ast.AST) -> bool:
    def holds(e: ast.expr) -> bool:
        if not isinstance(e, ast.Name):
            return False
        values = local_values(func, e.id)
        return bool(values) and all(knowledge.builds(v, lambda _: False) for v in values or ())

    return knowledge.builds(expr, holds)


def cpu_tensor(ctx: Context, expr: ast.expr, *, func: ast.AST | None, depth: int = 0) -> bool:
    """Whether ``expr`` is a tensor a torch factory made with no device (on the CPU)."""
    if depth > 8:
        return False
    while (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in _KEEPS_TENSOR
        and not (expr.func.attr == "type" and not expr.args)
    ):
        expr = expr.func.value
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        # `torch.arange(n).float() / 10`: a tensor and a number
        sides = (expr.left, expr.right)
        numbers = [
            s for s in sides if isinstance(s, ast.Constant) and type(s.value) in (int, float)
        ]
        return len(numbers) == 1 and all(
            cpu_tensor(ctx, s, func=func, depth=depth + 1) for s in sides if s not in numbers
        )
    if isinstance(expr, ast.Name):
        values = _values_read(func, expr)
        return bool(values) and all(
            cpu_tensor(ctx, v, func=func, depth=depth + 1) for v in values or ()
        )
    if not isinstance(expr, ast.Call):
        return False
    name = ctx.qualname(expr.func)
    if name not in CREATORS and name not in TYPED_CONSTRUCTORS:
        return False
    return not any(
        k.arg is None or k.arg == "device" or (k.arg == "requires_grad" and _truthy(k.value))
        for k in expr.keywords
    )


def viewed_parameters(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
) -> tuple[tuple[int, str], ...]:
    """The parameters every return of ``func`` is a view of (each item of a returned
    tuple too), with their positions; empty when some return is anything else."""
    a = func.args
    positions = {p.arg: i for i, p in enumerate((*a.posonlyargs, *a.args))}
    positions |= {p.arg: -1 for p in a.kwonlyargs}
    viewed: set[str] = set()

    def test(expr: ast.expr) -> bool:
        items = expr.elts if isinstance(expr, ast.Tuple) else [expr]
        return bool(items) and all(_views(e, func, positions, viewed) for e in items)

    if not returns_all(func, test):
        return ()
    return tuple(sorted((positions[name], name) for name in viewed))


def _views(
    expr: ast.expr,
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    positions: dict[str, int],
    viewed: set[str],
    depth: int = 0,
) -> bool:
    """Whether ``expr`` is a view of a parameter of ``func`` (noted in ``viewed``).

    (A module function, not a closure: a recursive closure holds itself in its own cell,
    a cycle with ``func`` left for the collector per call.)
    """
    if depth > 8:
        return False
    while True:
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        elif (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in _KEEPS_TENSOR
            and expr.func.attr != "type"
        ):
            expr = expr.func.value
        else:
            break
    if not isinstance(expr, ast.Name):
        return False
    if expr.id in positions:
        viewed.add(expr.id)
        return True
    values = local_values(func, expr.id)
    return bool(values) and all(_views(v, func, positions, viewed, depth + 1) for v in values or ())


def makes_cpu_tensor(ctx: Context, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``func``'s own body makes a tensor on the CPU (a torch factory or typed
    constructor with no ``device``, not moved where it is made) or reads a tensor into
    numpy (``.numpy()``)."""
    calls = [n for n in own_nodes(func) if isinstance(n, ast.Call)]
    moved: set[int] = set()  # `torch.arange(n).to(lens.device)`: made, then moved at once
    for node in calls:
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda"):
            inner = node.func.value
            while (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr in _KEEPS_TENSOR
            ):
                inner = inner.func.value
            moved.add(id(inner))
    for node in calls:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "numpy" and not node.args:
            return True
        if host_factory(ctx, node, moved):
            return True
    return False


_FACTORY_TAILS = frozenset(n.rpartition(".")[2] for n in CREATORS | TYPED_CONSTRUCTORS)


def host_factory(ctx: Context, call: ast.Call, moved: set[int]) -> bool:
    """Whether ``call`` is a torch factory or typed constructor with no ``device`` (nor
    ``**kwargs`` that may hold one) and not in ``moved`` (ids of calls moved where made)."""
    func = call.func  # (a qualified name ends as the call is written: its attribute, or the
    # import's last part, or the name itself under a star import; asked of every call)
    if isinstance(func, ast.Attribute):
        if func.attr not in _FACTORY_TAILS:
            return False
    elif not isinstance(func, ast.Name):
        return False  # no dotted name: no qualified name
    elif func.id not in _FACTORY_TAILS:
        tail = ctx.import_tails.get(func.id, func.id)
        if tail is not None and tail not in _FACTORY_TAILS:
            return False
    name = ctx.qualname(func)
    return (
        (name in CREATORS or name in TYPED_CONSTRUCTORS)
        and id(call) not in moved
        and not any(k.arg is None or k.arg == "device" for k in call.keywords)
    )


def _truthy(expr: ast.expr) -> bool:
    return not (isinstance(expr, ast.Constant) and not expr.value)


def takes_device(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    a = func.args
    return any("device" in p.arg.lower() for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)) or (
        a.kwarg is not None
    )


# ------------------------------------------------------------------ one file's imports


def own_tensor_functions(ctx: Context) -> set[str]:
    """The file's own module-level functions whose every return is a CPU tensor.

    ``def make_mask(n): return torch.from_numpy(np.tril(...))``: what a call of it
    gives is on the CPU wherever it is used, so the port moves it at the call.
    """
    return {
        f.name
        for f in ctx.tree.body
        if isinstance(f, _FUNCTIONS)
        and not takes_device(f)
        and returns_all(f, partial(cpu_tensor, ctx, func=f))
    }


def tensor_positions(
    ctx: Context, func: ast.FunctionDef | ast.AsyncFunctionDef
) -> tuple[int, tuple[int, ...]] | None:
    """For a function whose every ``return`` is a tuple written there, of one length, and
    that takes no device: that length and the positions whose item is a CPU tensor
    (:func:`cpu_tensor`) in every return (``return names, x, y`` with ``x =
    torch.tensor(...)``); None when there is no such position, or a return is anything else.
    """
    if takes_device(func):
        return None
    returns: list[ast.Tuple] = []
    for node in own_nodes(func):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return None  # a generator: a call gives no tuple
        if isinstance(node, ast.Return):
            value = node.value
            if not isinstance(value, ast.Tuple) or any(
                isinstance(e, ast.Starred) for e in value.elts
            ):
                return None
            returns.append(value)
    if not returns or len({len(r.elts) for r in returns}) != 1:
        return None
    size = len(returns[0].elts)
    found = tuple(
        i for i in range(size) if all(cpu_tensor(ctx, r.elts[i], func=func) for r in returns)
    )
    return (size, found) if found else None

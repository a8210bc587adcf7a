"""Lambdas the port follows to their calls, and the loose ones it reports (issue 31).

A lambda bound to a name the code only calls (``f = lambda t: t * w`` then
``f(model(x))``), or called where it is written (``(lambda t: t * w)(model(x))``), is
handed what those calls hand it: ``_captures`` follows them. Any other lambda is *loose*:
kept in a list or a dict (``fs = [lambda t: ...]``, ``ops["scale"](y)``), handed to a
function (``map(lambda t: ..., outs)``, ``sorted(xs, key=...)``, ``apply(f, y)``), or bound
to a name the code hands on (``map(f, outs)``). What a loose lambda is handed the port
cannot tell from the code.

The invariant: a tensor a lambda makes (in its body, or as a parameter's default:
``lambda t, w=torch.ones(2): t * w``) and combines with a parameter meets what the lambda
is handed, so it is moved only where every call is followed and hands it device values,
else reported (TP503); a parameter of a loose lambda that meets a device value or a model
in its body (``map(lambda t: model(t), xs)``) is reported (TP523), never moved, never
silent.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchport.check.port._calls import CREATORS, TYPED_CONSTRUCTORS
from torchport.check.semantic import BindingKind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.semantic import ScopeMap

__all__ = [
    "followed_lambdas",
    "handed",
    "handed_on",
    "held_parameters",
    "loose_message",
    "loose_where",
    "made_beside",
    "parameters",
    "tensor_root",
]


_Callable = ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef


def parameters(lam: _Callable) -> set[str]:
    """The names a lambda (or a function) binds as its parameters."""
    a = lam.args
    return {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p}


def followed_lambdas(
    lambdas: list[ast.Lambda], names: dict[str, list[ast.Name]], parents: dict[int, ast.AST]
) -> set[int]:
    """The ids of the file's lambdas whose every call the port sees: called where they are
    written, or the value of a name bound once and read only to be called.

    ``lambdas``: every lambda of the file; ``names``: every name node of the file, by name
    (the port's structure walk records both: ``FileStructure``); nothing here depends on
    their order."""
    if not lambdas:
        return set()
    bound: dict[str, int] = {}
    handed_on: set[str] = set()
    for node in (n for found in names.values() for n in found):
        if isinstance(node.ctx, ast.Load):
            up = parents.get(id(node))
            if not (isinstance(up, ast.Call) and up.func is node):
                handed_on.add(node.id)  # `map(f, outs)`, `fs = [f]`, `g = f`
        else:
            bound[node.id] = bound.get(node.id, 0) + 1
    found: set[int] = set()
    for lam in lambdas:
        up = parents.get(id(lam))
        if isinstance(up, ast.Call) and up.func is lam:
            found.add(id(lam))  # `(lambda t: ...)(y)`
        elif (
            isinstance(up, ast.Assign)
            and len(up.targets) == 1
            and isinstance(name := up.targets[0], ast.Name)
            and bound.get(name.id) == 1
            and name.id not in handed_on
        ):
            found.add(id(lam))
    return found


def handed(operand: ast.expr, scopes: ScopeMap, parents: dict[int, ast.AST]) -> ast.expr:
    """What ``operand`` holds where it is a parameter of a lambda called where it is written
    (``t`` of ``(lambda t: t * w)(y)``: ``y``, by place or by keyword), else ``operand``."""
    bound = scopes.bindings(operand.id, operand) if isinstance(operand, ast.Name) else []
    if len(bound) != 1 or bound[0].kind is not BindingKind.PARAMETER:
        return operand
    lam, call = bound[0].scope.node, parents.get(id(bound[0].scope.node))
    if not (isinstance(lam, ast.Lambda) and isinstance(call, ast.Call) and call.func is lam):
        return operand
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return operand  # `*a`, `**k`: the code does not show which
    placed = [p.arg for p in (*lam.args.posonlyargs, *lam.args.args)][: len(call.args)]
    if bound[0].name in placed:
        return call.args[placed.index(bound[0].name)]
    return next((k.value for k in call.keywords if k.arg == bound[0].name), operand)


def held_parameters(nodes: list[ast.AST], followed: set[int]) -> dict[int, bool]:
    """For each read of a lambda's own parameter in its body (``t`` in ``lambda t: model(t)``),
    by id: whether the lambda is loose (what its calls hand it answers for a followed one)."""
    held: dict[int, bool] = {}
    for lam in nodes:
        if isinstance(lam, ast.Lambda):
            own = parameters(lam)
            loose = id(lam) not in followed
            for n in ast.walk(lam.body):
                if isinstance(n, ast.Name) and n.id in own:
                    held[id(n)] = held.get(id(n), False) or loose
    return held


_Meeting = ast.BinOp | ast.Compare | ast.Call


def made_beside(
    lam: _Callable, qualname: Callable[[ast.expr], str | None]
) -> list[tuple[ast.Call, _Meeting]]:
    """Tensors a lambda makes with a torch factory and combines with one of its parameters:
    the operands of an arithmetic or a comparison (``t * torch.ones(3)``), the arguments of a
    torch function, the items of a list or tuple given to one included
    (``torch.cat([t, torch.zeros(1)])``, ``torch.mul(t, w)``), or of a method of the
    parameter (``t.add(torch.ones(3))``); or a parameter's default (``w=torch.ones(3)`` where
    the body reads ``t * w``): they meet what it is given, each with the expression where
    they meet."""
    own = parameters(lam)
    a = lam.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    firsts = positional[len(positional) - len(a.defaults) :]  # (the defaults are the last's)
    defaults = dict(zip(firsts, a.defaults, strict=True))
    defaults |= {p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d}
    made = {
        n: d
        for n, d in defaults.items()
        if isinstance(d, ast.Call) and qualname(d.func) in CREATORS
    }
    found: list[tuple[ast.Call, _Meeting]] = []
    body = lam.body if isinstance(lam.body, list) else [lam.body]
    for node in (n for part in body for n in ast.walk(part)):
        operands = meeting_operands(node, own, qualname)
        if not operands or not isinstance(node, _Meeting):
            continue
        names = [n for n in map(of_parameter, operands) if n in own]
        if not names:
            continue
        found += [
            (o, node) for o in operands if isinstance(o, ast.Call) and qualname(o.func) in CREATORS
        ]
        if len(names) > 1:  # `t * w` with `w=torch.ones(3)`: the default meets `t`
            found += [(made[n], node) for n in names if n in made]
    return found


def meeting_operands(
    node: ast.AST, own: set[str], qualname: Callable[[ast.expr], str | None]
) -> list[ast.expr]:
    """What meets in ``node``: the operands of an arithmetic or a comparison; the arguments
    of a torch function (not a factory: ``torch.zeros(n)`` makes, it does not meet), lists
    and tuples opened; the receiver and arguments of a method called on one of ``own``."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if not isinstance(node, ast.Call):
        return []
    func = node.func
    receiver = func.value if isinstance(func, ast.Attribute) else None
    if receiver is not None and of_parameter(receiver) in own:  # `t.add(torch.ones(3))`
        return [receiver, *_opened(node.args)]
    name = qualname(func) or ""
    if not name.startswith("torch.") or name in CREATORS or name in TYPED_CONSTRUCTORS:
        return []
    return _opened(node.args)


def of_parameter(expr: ast.expr) -> str | None:
    """The name whose tensor ``expr`` is (:func:`tensor_root`), or None."""
    root = tensor_root(expr)
    return root.id if root is not None else None


def tensor_root(expr: ast.expr) -> ast.Name | None:
    """The name whose tensor ``expr`` is, through the methods, attributes and subscripts
    that keep a tensor on its device (``t``, ``t.flatten()``, ``t[0]``, ``t.T``,
    ``t.view(-1).float()``); None for anything else, a value on the host among them
    (``t.shape[0]``, ``t.size(0)``, ``t.item()``, ``t.cpu()``, ``t.to(d)``)."""
    while True:
        if isinstance(expr, ast.Name):
            return expr
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            expr = expr.func
        kept = isinstance(expr, ast.Attribute) and expr.attr not in _HOST_READS
        if kept or isinstance(expr, ast.Subscript):
            expr = expr.value  # type: ignore[attr-defined]
        else:
            return None


# what of a tensor is on the host, or somewhere else than the tensor
_HOST_READS = frozenset(
    {"shape", "size", "dim", "ndim", "ndimension", "numel", "nelement", "item", "tolist",
     "numpy", "dtype", "device", "cpu", "to", "type", "is_cuda", "requires_grad", "stride",
     "data_ptr", "element_size", "get_device", "cuda", "storage_offset", "__len__"}
)  # fmt: skip


def _opened(args: list[ast.expr]) -> list[ast.expr]:
    out: list[ast.expr] = []
    for a in args:
        out.extend(a.elts if isinstance(a, ast.List | ast.Tuple) else [a])
    return out


def handed_on(loads: list[ast.Name], parents: dict[int, ast.AST]) -> ast.Name | None:
    """A read of a function's name (``loads``: every read of it) that hands it on rather
    than call it (``map(f, outs)``, ``fs = [f]``): the calls it then meets are not seen."""
    for load in loads:
        up = parents.get(id(load))
        if not (isinstance(up, ast.Call) and up.func is load):
            return load
    return None


def loose_where(lam: ast.AST, parents: dict[int, ast.AST]) -> str:
    """Where a loose lambda (or a function's name handed on) goes, for messages: "handed to
    `map()`", "kept in a list" ..."""
    up = parents.get(id(lam))
    if isinstance(up, ast.keyword):
        up = parents.get(id(up))
    if isinstance(up, ast.Call):
        return f"handed to `{ast.unparse(up.func)}()`"
    if isinstance(up, ast.List | ast.Tuple | ast.Set):
        return "kept in a list"
    if isinstance(up, ast.Dict):
        return "kept in a dict"
    if isinstance(up, ast.Assign) and all(isinstance(t, ast.Name) for t in up.targets):
        return f"bound to `{ast.unparse(up.targets[0])}`, which the code hands on or rebinds"
    return "kept where the port does not follow its calls"


def loose_message(meeting: _Meeting, held: str, where: str) -> str:
    """The tail of TP503's message for a tensor ``meeting`` a parameter of ``held`` (a lambda,
    a function) that goes ``where`` (:func:`loose_where`)."""
    operands = [meeting.left, meeting.right] if isinstance(meeting, ast.BinOp) else []
    if isinstance(meeting, ast.Compare):
        operands = [meeting.left, *meeting.comparators]
    if isinstance(meeting, ast.Call):
        operands = _opened(meeting.args)
        if isinstance(meeting.func, ast.Attribute):
            operands.insert(0, meeting.func.value)
    param = next((n for n in map(of_parameter, operands) if n is not None), "t")
    return (
        f"what {held} {where} is handed: the port cannot tell whether that is on the device, "
        f"and does not move the tensor; move it with `.to({param}.device)` where it meets `{param}`"
    )

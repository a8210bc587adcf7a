"""TP109's choices tested another way: by CUDA's device count, or from the CPU's side.

``chooses_cuda_or_the_cpu`` (``_cuda_choice``) takes a test of ``torch.cuda.is_available()``
(or a flag) whose branch names CUDA. Real programs also choose by the count
(``device = torch.device("cuda:0" if n_gpu > 0 else "cpu")`` with ``n_gpu =
torch.cuda.device_count()``; victoresque's pytorch-template ``prepare_device``: ``if n_gpu_use > 0
and n_gpu == 0: device = "cpu"``, held-out set h31af's lonePatient word2vec) or fall back to the
CPU by the count (``if torch.cuda.device_count() == 0: device = "cpu"``). Each is the same
choice: on MPS or XPU the program runs on the CPU, and the port kept it saying "0 left".
:func:`counted_choice` takes them for TP109, always without a fix, and the CPU's arm first
(``"cpu" if not torch.cuda.is_available() else "cuda"``), and tests that spell their truth
out (``torch.cuda.is_available() == False``, ``bool(torch.cuda.device_count())``). The fallback
statement tested with ``not torch.cuda.is_available()`` is TP120's (off in ``check``'s default
run; the port reports it).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import cuda_string, is_cpu_target
from torchport.check._nodes import nodes_among
from torchport.check.semantic._devices import built_cuda_string
from torchport.check.semantic._guards import Guard, device_guard, tests_other_accelerators
from torchport.check.semantic._residence import bound_value

__all__ = ["counted_choice"]

_COUNT = "torch.cuda.device_count"
_AVAILABLE = "torch.cuda.is_available"
# (operator, number) -> +1: true only where CUDA is there; -1: only where it is missing
_COMPARED = {
    (ast.Gt, 0): 1,
    (ast.GtE, 1): 1,
    (ast.NotEq, 0): 1,
    (ast.Eq, 0): -1,
    (ast.Lt, 1): -1,
    (ast.LtE, 0): -1,
}
_MIRRORED = {ast.Gt: ast.Lt, ast.Lt: ast.Gt, ast.GtE: ast.LtE, ast.LtE: ast.GtE}


def counted_choice(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """A CUDA-or-CPU choice by the device count, or the CPU's branch of a test of CUDA.

    The CUDA side (a test true only with CUDA, by the count) must name CUDA: its arm a CUDA
    device string, or its branch :func:`moves_to_cuda`. The CPU side (a test true only without
    CUDA: ``torch.cuda.device_count() == 0``, ``not n_gpu``, alone or in an ``and``) must give
    the CPU: its arm, or a ``name = "cpu"`` in its branch. A count compared
    with more than one GPU (``n_gpu > 1``: ``DataParallel``) chooses no device."""
    if not ctx.mentions("device_count") and not ctx.mentions("is_available"):
        return False
    sign = _sign(node.test, ctx, 0)
    if sign == 0:
        return False
    plain = not _counts(node.test, ctx, 0) and not _spelled(node.test, ctx)
    if plain and (sign > 0 or isinstance(node, ast.If)):
        return False  # `torch.cuda.is_available()`: `chooses_cuda_or_the_cpu`'s, or TP120's
    if sign > 0:
        if isinstance(node, ast.IfExp):
            chosen = is_cpu_target(node.orelse, ctx) and _names_cuda(node.body)
        else:
            from torchport.check.rules._cuda_choice import moves_to_cuda  # (imports this one)

            chosen = moves_to_cuda(node, ctx, timing=True)
    elif isinstance(node, ast.IfExp):
        chosen = is_cpu_target(node.body, ctx)
    else:
        chosen = any(isinstance(s, ast.Assign) and is_cpu_target(s.value, ctx) for s in node.body)
    if not chosen or tests_other_accelerators(node, ctx):
        return False
    return device_guard(node, ctx) is not Guard.DEVICE_TYPE


def _names_cuda(arm: ast.expr) -> bool:
    """``"cuda"``, ``"cuda:0"``, ``f"cuda:{i}"``, or ``torch.device(...)`` of one."""
    if isinstance(arm, ast.Call) and arm.args:
        arm = arm.args[0]
    return cuda_string(arm) is not None or built_cuda_string(arm)


def _query(expr: ast.expr, ctx: Context) -> str | None:
    """:data:`_COUNT` or :data:`_AVAILABLE` where ``expr`` is its call, or a name bound to one."""
    for _ in range(3):
        if isinstance(expr, ast.Call):
            name = ctx.qualname(expr.func)
            return name if name in (_COUNT, _AVAILABLE) else None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            bound = _attribute_value(expr, ctx)  # `args.n_gpu = torch.cuda.device_count()`
        elif isinstance(expr, ast.Name):
            bound = bound_value(expr, ctx)
        else:
            return None
        if bound is None:
            return None
        expr = bound
    return None


def _sign(test: ast.expr, ctx: Context, depth: int) -> int:
    """+1 where ``test`` holds only with CUDA, -1 only without it, else 0."""
    if depth > 3:
        return 0
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return -_sign(test.operand, ctx, depth + 1)
    if isinstance(test, ast.BoolOp):
        if not isinstance(test.op, ast.And):
            return 0
        signs = {_sign(v, ctx, depth + 1) for v in test.values} - {0}
        return signs.pop() if len(signs) == 1 else 0
    if _bool_of(test, ctx):  # `bool(torch.cuda.device_count())`
        assert isinstance(test, ast.Call)
        return _sign(test.args[0], ctx, depth + 1)
    if isinstance(test, ast.Compare):
        if len(test.ops) != 1:
            return 0
        left, op, right = test.left, type(test.ops[0]), test.comparators[0]
        if isinstance(left, ast.Constant):
            left, right, op = right, left, _MIRRORED.get(op, op)
        if not isinstance(right, ast.Constant):
            return 0
        if type(right.value) is bool and op in _TRUTH:  # `is_available() == False`
            said = _sign(left, ctx, depth + 1)
            return said if _TRUTH[op] is right.value else -said
        if _query(left, ctx) != _COUNT:
            return 0
        return _COMPARED.get((op, right.value), 0) if type(right.value) is int else 0
    return 1 if _query(test, ctx) is not None else 0


# a comparison with a bool: whether `x <op> True` holds where x holds (`== True`, `is True`)
_TRUTH = {ast.Eq: True, ast.Is: True, ast.NotEq: False, ast.IsNot: False}


def _bool_of(test: ast.AST, ctx: Context) -> bool:
    """``bool(x)``, the builtin (no binding of ``bool`` reaches it), one argument."""
    return (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "bool"
        and len(test.args) == 1
        and not test.keywords
        and not ctx.scopes.bindings("bool", test.func)
    )


def _spelled(test: ast.expr, ctx: Context) -> bool:
    """Whether ``test`` spells its truth out (``bool(...)``, ``== True``, ``is False``): forms
    ``chooses_cuda_or_the_cpu`` and TP120 do not read, so this module takes them."""
    return any(
        _bool_of(n, ctx)
        or (
            isinstance(n, ast.Compare)
            and any(
                isinstance(c, ast.Constant) and type(c.value) is bool
                for c in (n.left, *n.comparators)
            )
        )
        for n in ast.walk(test)
    )


def _counts(test: ast.expr, ctx: Context, depth: int) -> bool:
    """Whether ``test`` reads the device count anywhere (through a bound name too)."""
    if depth > 3:
        return False
    if _query(test, ctx) == _COUNT:
        return True
    return any(
        _counts(c, ctx, depth + 1) for c in ast.iter_child_nodes(test) if isinstance(c, ast.expr)
    )


def _attribute_value(attr: ast.Attribute, ctx: Context) -> ast.expr | None:
    """The value of the file's one ``X.attr = value`` (``args.n_gpu``, ``self.n_gpu``), where it
    counts the GPUs; None where the file binds it otherwise, or more than once."""
    if not ctx.mentions("device_count") or not ctx.mentions(attr.attr):
        return None
    assert isinstance(attr.value, ast.Name)
    values = _attribute_stores(ctx).get((attr.value.id, attr.attr), ())
    return values[0] if len(values) == 1 else None


def _attribute_stores(ctx: Context) -> dict[tuple[str, str], list[ast.expr | None]]:
    """Every ``X.attr = value`` of the file by ``(X, attr)``: one walk per file, not per test."""
    found: dict[tuple[str, str], list[ast.expr | None]] | None = ctx.memo.get(_STORES)  # type: ignore[assignment]
    if found is None:
        found = {}
        ctx.memo[_STORES] = found
        for node in nodes_among(ctx.tree, (ast.Assign, ast.AnnAssign)):
            assert isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    found.setdefault((target.value.id, target.attr), []).append(node.value)
    return found


_STORES = "counted_choice.attribute_stores"  # Context.memo's key

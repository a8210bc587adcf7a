"""Patterns the rules share: "is this a call to X", "is this probably a tensor", and edit shapes.

Every function here looks at one node and a few of its direct children; none
walks a subtree, so rules stay cheap on every node they are handed.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator

from torchport._device_types import CUDA
from torchport.check._context import Context
from torchport.check._patterns import lazy_pattern
from torchport.check._rule import Edit
from torchport.check.semantic._devices import device_type
from torchport.check.semantic._guards import test_guard
from torchport.check.semantic._receivers import may_rewrite, meant_to_fail

__all__ = [
    "RANDOM_FACTORIES",
    "TENSOR_FACTORIES",
    "add_keyword",
    "called",
    "cuda_choice",
    "cuda_function",
    "cuda_string",
    "device_keywords",
    "device_settings",
    "dotted_parts",
    "forwards_to_super",
    "guard_statement",
    "in_device_probe",
    "in_no_grad",
    "in_old_torch_fallback",
    "in_tests",
    "is_cpu_target",
    "keyword",
    "method_name",
    "move_after",
    "names",
    "only_shown",
    "probably_module",
    "probably_tensor",
    "receiver_end",
    "string_value",
    "takes_a_device",
]

RANDOM_FACTORIES = frozenset(
    f"torch.{n}" for n in ("rand", "randn", "randint", "randperm", "normal", "bernoulli")
)
TENSOR_FACTORIES = RANDOM_FACTORIES | frozenset(
    f"torch.{n}"
    for n in (
        "tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "linspace",
        "logspace", "eye",
    )
)  # fmt: skip
# Calls that take a tensor and return a new one: their results are tensors too.
_TENSOR_FUNCS = TENSOR_FACTORIES | frozenset(
    f"torch.{n}"
    for n in (
        "from_numpy", "stack", "cat", "matmul", "where", "softmax", "sigmoid", "exp", "log",
        "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like", "full_like",
    )
)  # fmt: skip
_TENSOR_METHODS = frozenset(
    {"float", "double", "half", "long", "int", "detach", "clone", "contiguous", "sum", "mean",
     "view", "reshape", "squeeze", "unsqueeze", "softmax", "argmax", "abs", "sqrt", "pow"}
)  # fmt: skip
_MODULE_NAME = lazy_pattern(
    r"(^|_)(model|net|network|module|encoder|decoder|backbone|layer|head|classifier|criterion"
    r"|loss_fn|ddp|policy|critic|actor|generator|discriminator|optimizer)s?($|_|\d)",
    re.IGNORECASE,
)
_TENSOR_NAME = lazy_pattern(
    r"^(x|y|t|z|tensor|tensors|image|images|img|imgs|label|labels|target|targets|mask|masks"
    r"|logits|loss|weights?|grad|preds?|probs)(_(\d+|train|test|val|gpu|cpu|batch|all|pred|true))?$"
)


def method_name(call: ast.Call) -> str | None:
    """The method name of ``recv.name(...)``, else None."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else None


def called(call: ast.Call, ctx: Context, attrs: frozenset[str]) -> str | None:
    """The qualified name of ``call``'s function, looked up only when it may be of interest.

    ``recv.attr(...)`` is resolved only when ``attr`` is in ``attrs`` (most calls
    are not, and the check is one set lookup); a bare ``name(...)`` is always
    resolved, since an import may have renamed it.
    """
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr not in attrs and (
            not ctx.attr_tails or ctx.attr_tails.get(func.attr) not in attrs
        ):
            return None  # (`c.L` of a compat module binding torch's `load`: Context.attr_tails)
    elif not isinstance(func, ast.Name):
        return None
    return ctx.qualname(func)


def names(expr: ast.expr, name: str) -> bool:
    """Whether ``name`` appears in ``expr`` as a name or an attribute (``x.name``, ``name``)."""
    for sub in ast.walk(expr):
        if (isinstance(sub, ast.Attribute) and sub.attr == name) or (
            isinstance(sub, ast.Name) and sub.id == name
        ):
            return True
    return False


def cuda_function(call: ast.Call, ctx: Context, attrs: frozenset[str]) -> str | None:
    """``"synchronize"`` for a call of ``torch.cuda.synchronize`` (however imported), else None.

    ``attrs`` are the function names that may interest the caller, as for :func:`called`.
    """
    name = called(call, ctx, attrs)
    if name is None or not name.startswith("torch.cuda."):
        return None
    return name[len("torch.cuda.") :]


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    """The keyword argument ``name=`` of ``call``, if given."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def string_value(expr: ast.expr | None) -> str | None:
    """The value of a string literal, else None."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    return None


def cuda_string(expr: ast.expr | None) -> str | None:
    """``"cuda"`` or ``"cuda:N"`` when ``expr`` is such a literal, else None."""
    value = string_value(expr)
    if value is not None and device_type(value) == CUDA:
        return value
    return None


def cuda_choice(expr: ast.expr | None, ctx: Context) -> str | None:
    """A CUDA device literal, or one arm of a conditional (``"cuda:0" if c else "cpu"``).

    Not a conditional that tests for CUDA (``"cuda" if torch.cuda.is_available()
    else "cpu"``, ``... if use_cuda ...``): that CUDA-or-CPU choice is TP109's.
    """
    if isinstance(expr, ast.IfExp):
        if test_guard(expr.test, ctx) is not None or _accelerator_fallback(expr, ctx):
            return None
        return cuda_string(expr.body) or cuda_string(expr.orelse)
    return cuda_string(expr)


_NEW_TORCH = frozenset({"accelerator", "__version__", "version", "TORCH_VERSION"})


def _accelerator_fallback(expr: ast.IfExp, ctx: Context) -> bool:
    """``torch.accelerator.current_accelerator().type if hasattr(torch, "accelerator") else
    "cuda"`` (either order): the other arm asks ``torch.accelerator`` and the test asks
    whether this torch has it (the attribute, or torch's version), so CUDA is only an old
    torch's answer (peft's examples, sample Q: judged noise)."""
    cuda, other = (expr.body, expr.orelse)
    if cuda_string(cuda) is None:
        cuda, other = other, cuda
    asks = any(
        isinstance(n, ast.Attribute)
        and n.attr == "accelerator"
        and ctx.qualname(n) == "torch.accelerator"
        for n in ast.walk(other)
    )
    return asks and any(
        (isinstance(n, ast.Constant) and n.value in _NEW_TORCH)
        or (isinstance(n, ast.Attribute) and n.attr in _NEW_TORCH)
        or (isinstance(n, ast.Name) and n.id in _NEW_TORCH)
        for n in ast.walk(expr.test)
    )


def device_keywords(call: ast.Call) -> list[ast.expr]:
    """The values ``call`` gives a device by keyword.

    ``device=``, ``map_location=``, ``accelerator=``, and the ``default=`` of an
    ``add_argument("--device", ...)`` option.
    """
    option = string_value(call.args[0]) if call.args and method_name(call) == "add_argument" else ""
    return [
        kw.value
        for kw in call.keywords
        if kw.arg in ("device", "map_location", "accelerator")
        or (kw.arg == "default" and "device" in (option or ""))
    ]


def device_settings(node: ast.AST) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) of what ``node`` sets: assignment targets, annotated ones, defaults.

    ``device = v`` and ``self.device = v`` give ``("device", v)``, ``device: str =
    v`` too, ``def f(device=v)`` each parameter with its default, ``{"eval_device": v}`` each
    key ending in ``device`` (a configuration: ``.to(cfg["device"])``, in another module too)."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, (ast.Name, ast.Attribute)):
                yield target.id if isinstance(target, ast.Name) else target.attr, node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target = node.target
        if isinstance(target, (ast.Name, ast.Attribute)):
            yield target.id if isinstance(target, ast.Name) else target.attr, node.value
    elif isinstance(node, ast.Dict):
        for key, item in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and str(key.value).lower().endswith("device"):
                yield str(key.value), item
    elif isinstance(node, ast.arguments):
        positional = [*node.posonlyargs, *node.args]
        pairs = zip(positional[len(positional) - len(node.defaults) :], node.defaults, strict=True)
        for param, default in pairs:
            yield param.arg, default
        for param, value in zip(node.kwonlyargs, node.kw_defaults, strict=True):
            if value is not None:
                yield param.arg, value


def is_cpu_target(expr: ast.expr | None, ctx: Context) -> bool:
    """Whether a ``.to()`` target is plainly the CPU (``"cpu"``, ``torch.device("cpu")``)."""
    if string_value(expr) == "cpu":
        return True
    if not (isinstance(expr, ast.Call) and ctx.qualname(expr.func) == "torch.device"):
        return False
    given = [*expr.args[:1], *(k.value for k in expr.keywords if k.arg == "type")]
    return bool(given) and string_value(given[0]) == "cpu"  # (k31ak: `type="cpu"` too)


def probably_tensor(expr: ast.expr, ctx: Context, *, by_name: bool = True) -> bool:
    """A cheap guess that ``expr`` is a tensor (never a module): its binding or its name says so.

    Errs on "no": rules that act on this stay silent when unsure. Follows at
    most a few hops in total (``x = x[0]`` binds ``x`` to a value that reads
    ``x``: a lookup that recursed would never end).
    """
    for _ in range(6):  # a few name -> value hops, never a loop
        if isinstance(expr, ast.Name):
            if probably_module(expr, ctx):
                return False
            if by_name and _TENSOR_NAME.match(expr.id):
                return True
            bound = ctx.value_of(expr)
            if bound is None:
                return False
            expr = bound
            continue
        if isinstance(expr, ast.Call):
            name = ctx.qualname(expr.func)
            if name is not None:
                return name in _TENSOR_FUNCS
            method = method_name(expr)
            if method in _TENSOR_METHODS or method in ("to", "cuda", "cpu"):
                assert isinstance(expr.func, ast.Attribute)
                expr = expr.func.value
                continue
            return False
        if isinstance(expr, ast.BinOp):
            expr = expr.left
            continue
        if isinstance(expr, ast.Subscript):
            expr, by_name = expr.value, False
            continue
        return False
    return False


def probably_module(expr: ast.expr, ctx: Context) -> bool:
    """A cheap guess that ``expr`` is an ``nn.Module`` (whose ``.to()`` works in place)."""
    if isinstance(expr, ast.Attribute):
        return bool(_MODULE_NAME.search(expr.attr))
    if not isinstance(expr, ast.Name):
        return False
    if _MODULE_NAME.search(expr.id):
        return True
    bound = ctx.value_of(expr)
    if isinstance(bound, ast.Call):
        name = ctx.qualname(bound.func)
        if name is not None:
            return name.startswith("torch.nn.")
        func = bound.func
        callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return callee[:1].isupper()  # `Net()`: a class instance, most often a module
    return False


def in_no_grad(ctx: Context) -> bool:
    """Whether the walk is inside ``with torch.no_grad()`` / ``inference_mode()`` or such a def."""
    for node in reversed(ctx.ancestors):
        items: list[ast.expr] = []
        if isinstance(node, (ast.With, ast.AsyncWith)):
            items = [item.context_expr for item in node.items]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            items = node.decorator_list
        for item in items:
            target = item.func if isinstance(item, ast.Call) else item
            if ctx.qualname(target) in ("torch.no_grad", "torch.inference_mode"):
                return True
    return False


def receiver_end(call: ast.Call, ctx: Context) -> int:
    """Offset just after the receiver of a method call ``recv.name(...)``, parentheses included."""
    assert isinstance(call.func, ast.Attribute)
    return ctx.receiver_end(call.func)


def add_keyword(call: ast.Call, text: str, ctx: Context) -> Edit:
    """An edit appending the argument ``text`` (``"name=value"``) to ``call``'s arguments."""
    args: list[ast.AST] = [*call.args, *(kw.value for kw in call.keywords)]
    if not args:
        close = ctx.end(call) - 1  # the call's closing parenthesis
        return Edit(close, close, text)
    at = max(ctx.argument_end(call, arg) for arg in args)  # `f((a))`: after its parentheses
    return Edit(at, at, ", " + text)


def move_after(call: ast.Call, device: str, ctx: Context) -> tuple[Edit, ...]:
    """Edits that append ``.to(device)`` to ``call`` (a tensor made on the host).

    A tensor made with ``requires_grad=True`` is a leaf the program may optimize;
    ``.to()`` of it is not (an optimizer refuses it, and its ``.grad`` stays empty),
    so the flag moves after the move: ``torch.randn(3).to(device).requires_grad_()``.
    Its values are drawn on the host either way.
    """
    flag = keyword(call, "requires_grad")
    items: list[ast.AST] = [*call.args, *(kw.value for kw in call.keywords)]
    before = [a for a in items if a is not (flag.value if flag else None)]
    if flag is None or not before or items[-1] is not flag.value:
        return ctx.append_call(call, f".to({device})")
    # `requires_grad=` is the last argument: remove it with the comma before it
    drop = Edit(ctx.argument_end(call, before[-1]), ctx.argument_end(call, flag.value), "")
    value = flag.value
    grad = "" if isinstance(value, ast.Constant) and value.value is True else ctx.segment(value)
    return (drop, *ctx.append_call(call, f".to({device}).requires_grad_({grad})"))


def guard_statement(
    call: ast.Call, text: str, ctx: Context, torch: str | None = None
) -> Edit | None:
    """Replace the statement ``call`` with ``if <torch>.accelerator.is_available(): text``.

    For calls that raise on a machine without an accelerator. None when ``call``
    is not a statement of its own on its own lines (then no safe rewrite exists).
    ``torch`` is torch's name there (from :meth:`Context.torch_at`).
    """
    stmt = ctx.parent
    if not (isinstance(stmt, ast.Expr) and stmt.value is call and ctx.owns_lines(stmt)):
        return None
    indent = ctx.indent_of(stmt)
    step = "\t" if "\t" in indent else "    "
    t = torch or ctx.torch_name()
    return ctx.replace(stmt, f"if {t}.accelerator.is_available():{ctx.newline}{indent}{step}{text}")


# Methods that take a device, on tensors and modules, whatever the receiver's name.
_DEVICE_METHODS = frozenset(
    {"to", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "to_empty"}
)


def takes_a_device(call: ast.Call, ctx: Context) -> bool:
    """Whether ``call`` is torch's, so that its ``device=`` may get a ``torch.device``.

    ``dict(device="cuda")``, ``parser.set_defaults(device="cuda")`` or a user
    helper that compares strings would break or change with a ``torch.device``.
    """
    if method_name(call) in _DEVICE_METHODS:
        # `x.to("cuda")`, `x.new_zeros(2, device="cuda")`: torch's unless the receiver is
        # another's (`Cfg().to("cuda")`, a batch class's own `.to`)
        return may_rewrite(call, ctx)
    # ScopeMap.is_torch_call's test, on ctx.qualname (the same answer, often no scope pass)
    name = ctx.qualname(call.func)
    return (
        name is not None
        and (name == "torch" or name.startswith("torch."))
        and not meant_to_fail(ctx)
    )


def in_tests(ctx: Context) -> bool:
    """Whether the code is a test (``test_*.py``, ``*_test.py``, a ``test_*`` function).

    Speed advice does not apply there (a test reads each value to compare it),
    and the files a test loads are its own fixtures.
    """
    name = os.path.basename(ctx.path)
    if name.startswith("test_") or name.endswith("_test.py"):
        return True
    return any(
        isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)) and outer.name.startswith("test")
        for outer in ctx.ancestors
    )


def forwards_to_super(call: ast.Call) -> bool:
    """``super().cuda()``: a method of a module class passing the call on, not choosing a device."""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    return isinstance(receiver, ast.Call) and getattr(receiver.func, "id", None) == "super"


# What an older torch raises where the newer spelling is missing: an unknown keyword
# (`weights_only=`), attribute (`torch.amp.GradScaler`) or module.
_OLD_TORCH_ERRORS = frozenset({"TypeError", "AttributeError", "ImportError", "ModuleNotFoundError"})


def in_old_torch_fallback(ctx: Context, modern: Callable[[ast.Call], bool]) -> bool:
    """Whether the node sits in ``except TypeError/AttributeError/ImportError:`` of a ``try``
    whose body makes a call ``modern`` accepts: the spelling for torches that lack it.

    ``try: torch.load(p, weights_only=False) except TypeError: torch.load(p)`` runs the
    handler only where the newer call cannot, so advice about the newer torch does not
    apply to it. Walks the ``try`` body once per handler met.
    """
    child: ast.AST | None = None
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, ast.Try | ast.TryStar) and isinstance(child, ast.ExceptHandler):
            caught = child.type
            kinds = caught.elts if isinstance(caught, ast.Tuple) else [caught]
            if all(isinstance(k, ast.Name) and k.id in _OLD_TORCH_ERRORS for k in kinds) and any(
                isinstance(n, ast.Call) and modern(n) for s in outer.body for n in ast.walk(s)
            ):
                return True
        if isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return False
        child = outer
    return False


# What `torch.cuda` raises without CUDA (or a catch-all): a `try` that catches it has a
# way on without CUDA, so the question is a probe.
_NO_CUDA_ERRORS = frozenset({"RuntimeError", "AssertionError", "Exception", "BaseException"})


def in_device_probe(ctx: Context) -> bool:
    """Inside the body of a ``try`` whose handler catches what a machine without CUDA raises."""
    child: ast.AST | None = None
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, ast.Try | ast.TryStar) and any(s is child for s in outer.body):
            for handler in outer.handlers:
                caught = handler.type
                kinds = caught.elts if isinstance(caught, ast.Tuple) else [caught]
                if caught is None or any(
                    isinstance(k, ast.Name) and k.id in _NO_CUDA_ERRORS for k in kinds
                ):
                    return True
        if isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return False
        child = outer
    return False


_SHOWN_BY = frozenset(
    {"print", "log", "info", "debug", "warning", "warn", "error", "write", "format", "str",
     "repr", "add_scalar", "set_postfix", "echo", "secho"}
)  # fmt: skip
_SHOWN_THROUGH = (
    ast.Compare, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.FormattedValue, ast.JoinedStr, ast.Tuple
)  # fmt: skip


def only_shown(ctx: Context) -> bool:
    """Whether the call's value is only printed or logged (``print(n)``, ``log(f"{n}")``)."""
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, _SHOWN_THROUGH):
            continue
        if isinstance(outer, ast.Call):
            func = outer.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            return name in _SHOWN_BY
        return False
    return False


def dotted_parts(expr: ast.expr) -> tuple[str, ...] | None:
    """``a.b.c`` as ``("a", "b", "c")``; None for anything but a name and its attributes."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return tuple(reversed(parts))

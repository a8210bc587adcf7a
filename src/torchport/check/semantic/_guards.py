"""Which device checks enclose a node: code that already branches on the device.

Rules ask this only once they are about to report (so the cost is paid per
candidate finding, not per node). A guard is an ``if``/``while``/conditional
expression around the node, or an early ``return`` before it (an ``assert`` or
``raise`` only when it tests the device type), that tests the device:
``if device.type == "cuda":``, ``if x.is_cuda:``,
``elif x.is_xpu:``, ``if torch.cuda.is_available():`` (or a flag bound to it),
``if not torch.cuda.is_available(): return``; a test of another accelerator
(``elif is_xpu_available(): ... else: <CUDA>``: a branch per device); a test of the
process group's backend against NCCL (``if backend == dist.Backend.NCCL:``, CUDA's own
backend: its arm is CUDA's branch, :func:`_nccl_backend_test`); also a
test decorated to run only with CUDA, and a whole module that imports a
CUDA-only library (TensorRT, CuPy). CUDA code there is either already ported
(a branch per device type) or a CUDA-or-CPU choice that works on every machine
(reported once, at the test, by TP109). A test of CUDA alone, or of its
availability, guards only the arm where it says CUDA is there: in ``if x.device !=
torch.device("cuda"): x = x.to(torch.device("cuda"))`` the move runs on the CPU, MPS
and XPU (:func:`_arm_guard`).

Where values live (CPU, device, unknown) is :mod:`torchport.check.semantic._residence`;
what imports of accelerator libraries say is :mod:`._library_imports`.
"""

from __future__ import annotations

import ast
import enum
import weakref

from torchport.check._patterns import lazy_pattern
from torchport.check.semantic._devices import (
    ACCELERATOR_TYPES,
    DEVICE_TYPES,
    OTHER_ACCELERATORS,
    cuda_flag,
    cuda_test,
    describes_device,
    device_type_test,
    names_other_accelerator,
)
from torchport.check.semantic._library_imports import uses_cuda_only_library
from torchport.check.semantic._residence import bound_value

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._context import Context

__all__ = [
    "Guard",
    "device_guard",
    "every_accelerator_arm",
    "test_guard",
    "tests_other_accelerators",
]

# Calls whose value says whether an accelerator is there (a CUDA-or-CPU choice when CUDA's):
# `torch.<type>.is_available()` for every accelerator type of the vocabulary (an extension
# registers `torch.npu`, `torch.musa`, `torch.mlu`), and torch.accelerator's own.
_AVAILABILITY = frozenset(
    {
        *(
            f"torch.{kind}.{ask}"
            for kind in (*ACCELERATOR_TYPES, "accelerator")
            for ask in ("is_available", "device_count")
        ),
        "torch.cuda.is_initialized",
        "torch.backends.mps.is_available",
        "torch.accelerator.current_accelerator",
    }
)
_SKIPS_REST = (ast.Return, ast.Continue, ast.Break)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Module)
_HOPS = 4


class Guard(enum.Enum):
    """What kind of device check encloses a node."""

    DEVICE_TYPE = "device-type"  # branches on a device's or tensor's type: already ported
    AVAILABILITY = "availability"  # `torch.cuda.is_available()` and friends: CUDA-or-CPU


def _nccl_backend_test(expr: ast.expr) -> bool:
    """``backend == dist.Backend.NCCL``, ``dist.get_backend(pg) == "nccl"``, ``"nccl" in backend``.

    A comparison of a backend (a name, attribute or call naming ``backend``) with NCCL
    (the string in any case, or an attribute ``NCCL``): NCCL runs only on CUDA, so the
    arm is CUDA's branch and its CUDA device index is right (``dist.barrier(device_ids=
    [torch.cuda.current_device()])``, tnt's, sample O); another backend takes the other arm.
    """
    if not isinstance(expr, ast.Compare):
        return False
    sides = [expr.left, *expr.comparators]
    return any(map(_names_nccl, sides)) and any(map(_describes_backend, sides))


def _names_nccl(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value.lower() == "nccl"
    return isinstance(expr, ast.Attribute) and expr.attr == "NCCL"


def _describes_backend(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Name) and expr.func.id in ("str", "repr") and expr.args:
            return _describes_backend(expr.args[0])
        expr = expr.func  # `dist.get_backend(pg)`
    name = expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", "")
    return "backend" in name.lower()


def test_guard(test: ast.expr, ctx: Context, holds: bool | None = None) -> Guard | None:
    """The kind of device check ``test`` (an ``if``/``while``/``assert`` condition) makes.

    Without ``holds`` the test is asked about as a whole: any device check in it counts.
    With ``holds`` (the value ``test`` has where the code asked about runs), CUDA's own
    tests in it count only in the arm where they say CUDA is there (:func:`_arm_guard`);
    the rest (another device type, a count compared, NCCL) counts as a whole.
    """
    found = None if holds is None else _arm_guard(test, holds, ctx, 0)
    todo: list[tuple[ast.expr, int, bool]] = [(test, 0, holds is None)]  # whole: all count
    while todo and found is not Guard.DEVICE_TYPE:
        expr, hops, whole = todo.pop()
        if not whole and _cuda_atom(expr, ctx):
            continue  # read for the arm, above
        if device_type_test(expr) or _nccl_backend_test(expr):
            return Guard.DEVICE_TYPE
        if _availability_call(expr, ctx):
            if _asks_other_accelerator(expr.func):  # type: ignore[attr-defined]
                # `elif is_xpu_available(): ... else: <CUDA>`: one branch per device
                return Guard.DEVICE_TYPE
            found = Guard.AVAILABILITY
        elif cuda_flag(expr):
            found = Guard.AVAILABILITY  # `if args.cuda:`: the program's own CUDA-or-CPU switch
        elif isinstance(expr, ast.Name) and hops < _HOPS:
            bound = bound_value(expr, ctx)  # `use_cuda = torch.cuda.is_available()`
            todo.extend([(bound, hops + 1, whole)] if bound is not None else [])
        elif isinstance(expr, (ast.BoolOp, ast.UnaryOp, ast.Compare, ast.Call)):
            inside = whole or isinstance(expr, (ast.Compare, ast.Call))  # `count() > 1`
            todo.extend((child, hops, inside) for child in _sub_expressions(expr))
    return found


def _cuda_atom(expr: ast.expr, ctx: Context) -> bool:
    """A test of CUDA alone (:func:`cuda_test`), a CUDA flag, or CUDA's availability."""
    if cuda_test(expr) is not None or cuda_flag(expr):
        return True
    return _availability_call(expr, ctx) and not _asks_other_accelerator(expr.func)  # type: ignore[attr-defined]


def _arm_guard(expr: ast.expr, holds: bool, ctx: Context, hops: int) -> Guard | None:
    """The guard CUDA's own tests in ``expr`` make where its value is ``holds``.

    Only a test that says CUDA IS there guards: a test of CUDA alone (``x.is_cuda``,
    ``x.device != torch.device("cuda")``) where it says the device is CUDA (there a move
    to CUDA is a no-op, CUDA code the program's branch for it); an availability test or
    CUDA flag where it holds. Where the device is not CUDA, or CUDA is not there, the
    code runs on the CPU, MPS and XPU, and CUDA there crashes (stable-diffusion's ``if
    attr.device != torch.device("cuda"): attr = attr.to(torch.device("cuda"))``, round
    5f). ``not`` flips the value; ``a and b`` holding (``a or b`` failing) gives each
    value's guard, the stronger; ``a and b`` failing (``a or b`` holding) only what
    every value gives. A name is read through what it is bound to.
    """
    while isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        holds, expr = not holds, expr.operand
    says = cuda_test(expr)
    if says is not None:
        return Guard.DEVICE_TYPE if says is holds else None
    if isinstance(expr, ast.BoolOp):
        each = [_arm_guard(value, holds, ctx, hops) for value in expr.values]
        if isinstance(expr.op, ast.And) is not holds:  # one of them decides: the weakest
            return None if None in each else min(each, key=lambda g: g is Guard.DEVICE_TYPE)
        return Guard.DEVICE_TYPE if Guard.DEVICE_TYPE in each else next(filter(None, each), None)
    if _cuda_atom(expr, ctx):  # (a flag before what it is bound to, as `test_guard`)
        return Guard.AVAILABILITY if holds else None
    if isinstance(expr, ast.Name) and hops < _HOPS:
        bound = bound_value(expr, ctx)
        return None if bound is None else _arm_guard(bound, holds, ctx, hops + 1)
    return None


def _availability_call(expr: ast.expr, ctx: Context) -> bool:
    """``torch.cuda.is_available()``, ``torch.xpu.device_count()``, ``is_npu_available()``."""
    return isinstance(expr, ast.Call) and (
        ctx.qualname(expr.func) in _AVAILABILITY or _availability_helper(expr)
    )


_HELPER = lazy_pattern(r"^is_(\w+?)_available$")


def _availability_helper(call: ast.Call) -> bool:
    """``is_npu_available()``, ``is_mps_available()``: a library's own test for one device."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    found = _HELPER.match(name)
    return found is not None and found.group(1) in DEVICE_TYPES


def _asks_other_accelerator(func: ast.expr) -> bool:
    """``torch.xpu.is_available``, ``torch.backends.mps.is_available``, ``is_npu_available``."""
    while isinstance(func, ast.Attribute):
        if func.attr.lower() in OTHER_ACCELERATORS:
            return True
        found = _HELPER.match(func.attr)
        if found is not None and found.group(1) in OTHER_ACCELERATORS:
            return True
        func = func.value
    found = _HELPER.match(func.id) if isinstance(func, ast.Name) else None
    return found is not None and found.group(1) in OTHER_ACCELERATORS


def _sub_expressions(expr: ast.expr) -> list[ast.expr]:
    if isinstance(expr, ast.BoolOp):
        return list(expr.values)
    if isinstance(expr, ast.UnaryOp):
        return [expr.operand]
    if isinstance(expr, ast.Compare):
        return [expr.left, *expr.comparators]
    if isinstance(expr, ast.Call):
        return list(expr.args)  # `len(...)`, `bool(...)` wrappers
    return []


def device_guard(node: ast.AST, ctx: Context, *, arms: bool = True) -> Guard | None:
    """The strongest device check enclosing ``node`` within its function, if any.

    A statement that uses a name bound by an import of a CUDA-only library
    (``cp.asarray(x.cuda())``) is DEVICE_TYPE (:func:`uses_cuda_only_library`);
    the rest of such a module is checked as any other.

    Looks at the ``if``/``while``/conditional expressions around ``node`` (both
    arms: an ``else`` of a test of another device is CUDA's branch) and the
    operands before it in an ``and``, then at early exits and asserts before
    ``node``'s statement in each enclosing block. Each test is read for the arm
    ``node`` is in (:func:`_arm_guard`); with ``arms=False``, as a whole (the CPU
    arm of ``Net().cuda() if use_cuda else Net()`` is the choice's too).
    """
    if uses_cuda_only_library(node, ctx):
        return Guard.DEVICE_TYPE
    found: Guard | None = None
    child: ast.AST = node
    chain = ctx.ancestors
    # `node` may itself be an ancestor of the node being checked: start above it.
    top = next((i for i in range(len(chain) - 1, -1, -1) if chain[i] is node), len(chain))
    for outer in reversed(chain[:top]):
        if isinstance(outer, _SCOPES):
            # Early exits in the function's (or module's) own body still count, and so
            # does a test skipped without CUDA (`@pytest.mark.skipif(not ...is_available())`).
            found = _stronger(found, _early_exit_guard(outer, child, ctx))
            return _stronger(found, _skip_guard(outer, ctx))
        if isinstance(outer, (ast.If, ast.While, ast.IfExp)) and child is not outer.test:
            body = outer.body if isinstance(outer.body, list) else [outer.body]
            in_body = any(s is child for s in body)
            if not every_accelerator_arm(outer.test, in_body):
                # (`if device.type != "cpu": <CUDA>` runs on MPS/XPU too: no guard)
                found = _stronger(found, test_guard(outer.test, ctx, in_body if arms else None))
        elif isinstance(outer, ast.comprehension) and child is not outer.iter:
            for cond in outer.ifs:
                found = _stronger(found, test_guard(cond, ctx, True if arms else None))
        elif isinstance(outer, ast.BoolOp) and isinstance(outer.op, ast.And):
            # `torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)`
            for before in outer.values[: next(i for i, v in enumerate(outer.values) if v is child)]:
                found = _stronger(found, test_guard(before, ctx, True if arms else None))
        if found is Guard.DEVICE_TYPE:
            return found
        found = _stronger(found, _early_exit_guard(outer, child, ctx))
        child = outer
    return found


def every_accelerator_arm(test: ast.expr, in_body: bool) -> bool:
    """Whether the arm of ``test`` (its body, else its ``else``) runs on every device but the CPU.

    ``if device.type != "cpu":``, ``if not x.is_cpu:``, the ``else`` of
    ``if str(device) == "cpu":``: a test of the CPU alone says nothing about
    which accelerator the other arm meets, so CUDA code there crashes on MPS
    or XPU and is no port.
    """
    positive = True  # whether the test holds on the CPU
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        positive, test = not positive, test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        sides = (test.left, test.comparators[0])
        if not any(isinstance(x, ast.Constant) and x.value == "cpu" for x in sides):
            return False
        if not any(describes_device(x) for x in sides):
            return False
        if isinstance(test.ops[0], (ast.NotEq, ast.IsNot)):
            positive = not positive
        elif not isinstance(test.ops[0], (ast.Eq, ast.Is)):
            return False
    elif not (isinstance(test, ast.Attribute) and test.attr == "is_cpu"):
        return False
    return in_body != positive


def tests_other_accelerators(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """Whether ``node``'s test, its ``elif`` tests or an ``if`` beside it name another accelerator.

    ``if torch.cuda.is_available(): ... elif torch.backends.mps.is_available(): ...``
    already chooses among several accelerators, and so does
    ``if torch.backends.mps.is_available(): return "mps"`` before a CUDA-or-CPU line,
    or ``if torch.xpu.is_available(): ...`` right after a CUDA branch (one per device).
    """
    if _names_other_accelerators(node):
        return True
    child: ast.AST = node
    cache = _OTHER_BEFORE.get(ctx)
    if cache is None:
        cache = _OTHER_BEFORE[ctx] = {}
    for outer in reversed(ctx.ancestors):
        for field in ("body", "orelse"):
            block = getattr(outer, field, None)
            if not isinstance(block, list) or not block:
                continue
            found = cache.get(id(block))
            if found is None or found[0] is not block:
                found = cache[id(block)] = (block, _other_tests_before(block))
            place = found[1].get(id(child))
            if place is None:
                continue
            before, following = place
            if before:
                return True
            if child is node and following is not None and _has_other_test(following):
                return True  # `if torch.xpu.is_available(): ...` right after a CUDA branch
        if isinstance(outer, _SCOPES):
            return False
        child = outer
    return False


def _other_tests_before(block: list[ast.stmt]) -> dict[int, tuple[bool, ast.stmt | None]]:
    """id(statement) -> (whether an ``if`` naming MPS or XPU comes before it, the next statement).

    Nested ones count (``if new_torch: if mps...: return``). Worked out once per
    block and file: asked for every candidate finding, a walk of the statements
    before each made the check quadratic in the findings.
    """
    out: dict[int, tuple[bool, ast.stmt | None]] = {}
    seen = False
    for at, stmt in enumerate(block):
        out[id(stmt)] = (seen, block[at + 1] if at + 1 < len(block) else None)
        seen = seen or _has_other_test(stmt)
    return out


def _has_other_test(stmt: ast.stmt) -> bool:
    return any(
        isinstance(inner, ast.If) and _names_other_accelerators(inner) for inner in ast.walk(stmt)
    )


# Per file: id(block) -> (the block, kept alive so its id stays its own; the answers).
_OTHER_BEFORE: weakref.WeakKeyDictionary[
    Context, dict[int, tuple[list[ast.stmt], dict[int, tuple[bool, ast.stmt | None]]]]
] = weakref.WeakKeyDictionary()


def _names_other_accelerators(node: ast.If | ast.IfExp) -> bool:
    tests: list[ast.expr] = [node.test]  # and the `elif`s, or `else (.. if mps.. else ..)`
    tail: list[ast.AST] = [*node.orelse] if isinstance(node, ast.If) else [node.orelse]
    while len(tail) == 1 and isinstance(tail[0], (ast.If, ast.IfExp)):
        tests.append(tail[0].test)
        tail = [*tail[0].orelse] if isinstance(tail[0], ast.If) else [tail[0].orelse]
    for test in tests:
        for sub in ast.walk(test):
            name = sub.attr if isinstance(sub, ast.Attribute) else getattr(sub, "id", "")
            if isinstance(name, str) and names_other_accelerator(name):
                return True
    return False


def _stronger(a: Guard | None, b: Guard | None) -> Guard | None:
    return Guard.DEVICE_TYPE if Guard.DEVICE_TYPE in (a, b) else a or b


def _early_exit_guard(block: ast.AST, child: ast.AST, ctx: Context) -> Guard | None:
    """A guard made by ``if <test>: return`` or ``assert <test>`` before ``child`` in ``block``.

    Skipping the rest without CUDA (``if not torch.cuda.is_available(): return``)
    is a CUDA-or-nothing choice; demanding CUDA (``assert torch.cuda.is_available()``,
    ``raise``, ``sys.exit``) is not: the code after it is CUDA-only, and the rules
    say so. A demand made by a device-type test (``device.type == "cuda"``) still
    counts: the author decided per device.

    Each block is read once per file (:class:`_ExitGuards`): asked for every
    finding of a long module, a scan of the statements before each one made the
    check quadratic in the findings.
    """
    if not isinstance(child, ast.stmt):
        return None  # only a statement of a block has statements before it
    cache = _EXITS.get(ctx)
    if cache is None:
        cache = _EXITS[ctx] = {}
    scopes = ctx.built_scopes
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(block, field, None)
        if not isinstance(stmts, list) or not stmts:
            continue
        exits = cache.get(id(stmts))
        if exits is None or exits.stmts is not stmts:
            exits = cache[id(stmts)] = _ExitGuards(stmts, ctx)
        if scopes is not None:
            # the block and index the scope pass recorded: no index of the block of our own
            where = scopes.flow.statement_position(child)
            index = where[1] if where is not None and where[0] is stmts else None
        else:  # (not built: not worth a scope pass)
            if exits.position is None:
                exits.position = {id(s): i for i, s in enumerate(stmts)}
            index = exits.position.get(id(child))
        if index is not None:
            return exits.before[index]
    return None


class _ExitGuards:
    """For one block: where each statement stands, and the exit guard made before each."""

    __slots__ = ("before", "position", "stmts")

    def __init__(self, stmts: list[ast.stmt], ctx: Context) -> None:
        self.stmts = stmts  # kept alive, so that its id is not reused while cached
        self.position: dict[int, int] | None = None  # id(statement) -> index, if asked
        self.before: list[Guard | None] = []
        found: Guard | None = None
        for stmt in stmts:
            self.before.append(found)
            if isinstance(stmt, ast.Assert):
                demands = True
            elif isinstance(stmt, ast.If) and isinstance(stmt.body[-1], _SKIPS_REST):
                demands = False
            elif isinstance(stmt, ast.If) and (
                isinstance(stmt.body[-1], ast.Raise) or _calls_exit(stmt.body[-1])
            ):
                demands = True
            else:
                continue
            if not demands and every_accelerator_arm(stmt.test, False):
                continue  # `if device.type == "cpu": return`: the rest runs on every accelerator
            if demands and _refuses_a_request(stmt.test, ctx):
                continue  # `if device == "cuda" and not <CUDA>: raise`: any device may follow
            # past `assert t` the test held; past `if t: <leave>` it failed
            guard = test_guard(stmt.test, ctx, isinstance(stmt, ast.Assert))
            if not demands or guard is Guard.DEVICE_TYPE:
                found = _stronger(found, guard)


def _refuses_a_request(test: ast.expr, ctx: Context) -> bool:
    """``A and not torch.cuda.is_available()``: an exit that refuses a request CUDA cannot
    serve; past it the test's negation (``not A or <CUDA>``) pins no device type."""
    return (
        isinstance(test, ast.BoolOp)
        and isinstance(test.op, ast.And)
        and any(test_guard(value, ctx) is Guard.AVAILABILITY for value in test.values)
    )


_EXITS: weakref.WeakKeyDictionary[Context, dict[int, _ExitGuards]] = weakref.WeakKeyDictionary()


_SKIPS = frozenset({"skipif", "skipIf", "skipUnless"})


def _skip_guard(scope: ast.AST, ctx: Context) -> Guard | None:
    """The device check of a ``skipif``/``skipUnless`` or ``mark.requires_cuda`` decorator."""
    found: Guard | None = None
    for decorator in getattr(scope, "decorator_list", ()):
        mark = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (
            isinstance(mark, ast.Attribute)
            and isinstance(mark.value, ast.Attribute)
            and mark.value.attr == "mark"
            and ("cuda" in mark.attr.lower() or "gpu" in mark.attr.lower())
        ):
            return Guard.DEVICE_TYPE  # `@pytest.mark.requires_cuda`: a test for CUDA
        if not (isinstance(decorator, ast.Call) and decorator.args):
            continue
        func = decorator.func
        if isinstance(func, ast.Attribute) and func.attr in _SKIPS:
            runs = func.attr == "skipUnless"  # the test runs where its condition holds
            found = _stronger(found, test_guard(decorator.args[0], ctx, runs))
    return found


def _calls_exit(stmt: ast.stmt) -> bool:
    """``sys.exit(...)`` / ``exit(...)`` as a statement."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("exit", "_exit", "abort")

"""Code that already chose a device: what the port must leave as it is.

``torchport port`` rewrites code that names no device. Code that made a choice
of its own is not that code, and overruling it breaks what worked:

* a **deliberate CPU choice**: ``torch.device("cpu")`` bound to a constant
  (``CPU_DEVICE``) or a name that says CPU (``cpu_device``), made in one branch
  of an ``if``/``try``/``match`` (the gloo branch of a distributed script), or
  bound to a name the code binds again elsewhere (``device = torch.device("cpu")``
  then ``if args.cuda: device = ...``);
* a **device option**: a command-line flag that picks the device (``--cuda``,
  ``--no-accel``, ``--device``, ``--gpu``): the CPU default is the user's to
  change, not the port's;
* an **int device or rank**: ``model.to(rank)``, ``x.cuda(local_rank)``,
  ``.to(0)``. The program places its model per process; a tensor the port
  would move to "the accelerator" lands on another GPU than the model's;
* a **CUDA-or-CPU placement**: ``if use_cuda: model.cuda()`` (a flag, an
  availability test): on an accelerator that is not CUDA (MPS, XPU) the model
  stays on the CPU, and a tensor the port would move to "the accelerator" meets
  it there.

:func:`deliberate_cpu` answers for a ``torch.device("cpu")`` assignment (TP507
leaves it), :func:`own_placement` for a file (the port's moves are reported, not
written, where the model's device is the program's per-process choice),
:func:`flag_placement` for a model placed under a CUDA-or-CPU test.
Syntax only; nothing here imports torch.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from torchport._device_types import CPU
from torchport.check._context import Context
from torchport.check._prefilter import may_hold
from torchport.check.port._program_devices import to_program_device
from torchport.check.semantic import Guard
from torchport.check.semantic._guards import test_guard

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = [
    "DEVICE_FLAG",
    "INDEX_NAME",
    "deliberate_cpu",
    "device_option",
    "flag_placement",
    "index_target",
    "own_placement",
]

# Option strings of a command-line flag that picks the device.
DEVICE_FLAG = re.compile(r"^--?(no[-_])?(cuda|gpu|gpus|accel|accelerator|device|mps|cpu)s?$", re.I)
# Names of an int device or a process rank: `rank`, `local_rank`, `gpu`, `gpu_id`, `device_id`.
INDEX_NAME = re.compile(r"(^|_)(rank|gpu|gpu_id|device_id|dev_id|device_index|gpu_index)$", re.I)
_BRANCHES = (ast.If, ast.Try, ast.Match, ast.IfExp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def deliberate_cpu(node: ast.Assign, ctx: Context) -> bool:
    """Whether ``<name> = torch.device("cpu")`` is the program's own choice, to keep."""
    target = node.targets[0]
    assert isinstance(target, ast.Name)
    name = target.id
    if name.isupper() or "cpu" in name.lower():
        return True  # `CPU_DEVICE`, `cpu_device`: a name for the CPU, not "the device"
    if _in_branch(node, ctx):
        return True
    scopes = ctx.scopes
    scope = scopes.resolve(name, node)
    if len(scope.bindings.get(name, [])) > 1:
        return True  # bound again elsewhere: the CPU is one choice among others
    return device_option(ctx)


def _in_branch(node: ast.AST, ctx: Context) -> bool:
    """Whether ``node`` runs only on some paths of its function or module (a branch, a try)."""
    scopes = ctx.scopes
    parent = scopes.parent(node)
    while parent is not None and not isinstance(parent, (*_FUNCTIONS, ast.Module)):
        if isinstance(parent, _BRANCHES) and not _main_guard(parent):
            return True
        parent = scopes.parent(parent)
    return False


def _main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":``: the script's body, no choice."""
    test = getattr(node, "test", None)
    return (
        isinstance(node, ast.If)
        and isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


def device_option(ctx: Context) -> bool:
    """Whether the file defines a command-line flag that picks the device (``--cuda``)."""
    known = ctx.memo.get("port.device_option")
    if known is not None:
        return bool(known)
    found = False
    for n in ast.walk(ctx.tree):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("add_argument", "add_option", "DEFINE_bool", "DEFINE_string")
            and any(
                isinstance(a, ast.Constant)
                and isinstance(a.value, str)
                and DEVICE_FLAG.match(a.value)
                for a in n.args
            )
        ):
            found = True
            break
    ctx.memo["port.device_option"] = found
    return found


def index_target(expr: ast.expr) -> bool:
    """Whether a ``.to()``/``.cuda()`` argument is an int device or a rank (``rank``, ``0``)."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, int) and not isinstance(expr.value, bool)
    if isinstance(expr, ast.Name):
        return bool(INDEX_NAME.search(expr.id))
    if isinstance(expr, ast.Attribute):
        return bool(INDEX_NAME.search(expr.attr))
    return False


def own_placement(calls: Iterable[ast.AST]) -> ast.Call | None:
    """The first move to an int device or a rank among ``calls`` (``model.to(rank)``), if any.

    ``calls``: the file's calls in ``ast.walk`` order (the scope map's node index).
    """
    for n in calls:
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("to", "cuda")
            and n.args
            and index_target(n.args[0])
        ):
            return n
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "to"
            and any(k.arg == "device" and index_target(k.value) for k in n.keywords)
        ):
            return n
    return None


def flag_placement(facts: PortFacts, ctx: Context) -> ast.Call | None:
    """The first move of a model under the program's own CUDA-or-CPU test, if any.

    ``if use_cuda: model.cuda()``, ``model = model.cuda() if args.cuda else model``:
    the model's device is CUDA or the CPU, by the program's choice; "the accelerator"
    the port would name differs from both on MPS and XPU. Also a model moved to a
    device its class chose (``self.device = torch.device("cpu")`` then
    ``nn.Linear(4, 2).to(self.device)``): a tensor the port moved to "the
    accelerator" would meet it on that device.
    """
    parents = facts.parents
    for call in facts.structure.moves:
        func = call.func
        scope = facts.scope_of.get(id(call)) or facts.module
        stmt = facts.parents.get(id(call))
        while isinstance(stmt, (ast.IfExp, ast.Call, ast.Attribute)):
            stmt = facts.parents.get(id(stmt))  # `model = Net().cuda() if use_cuda else Net()`
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else None
        if not isinstance(func, ast.Attribute) or not (
            facts.holds_model(func.value, scope)
            or (isinstance(func.value, ast.Call) and facts.known.constructor(func.value))
            or (target is not None and facts.holds_model(target, scope))
        ):
            continue
        if _to_own_class_device(call, facts, ctx) or to_program_device(call, facts, ctx):
            return call
        child: ast.AST = call
        parent = parents.get(id(call))
        while parent is not None and not isinstance(parent, (*_FUNCTIONS, ast.Module)):
            if (
                isinstance(parent, (ast.If, ast.IfExp))
                and child is not parent.test
                and test_guard(parent.test, ctx) is Guard.AVAILABILITY
            ):
                return call
            child, parent = parent, parents.get(id(parent))
    return _model_on_the_cpu(facts, ctx)


def _model_on_the_cpu(facts: PortFacts, ctx: Context) -> ast.Call | None:
    """The first model the program puts on the CPU itself and runs there, if any.

    ``nn.Sequential(...).cpu()``, ``Net().to("cpu")`` where it is built, or
    ``model = model.cpu()`` (``model.to("cpu")``) followed by a forward of ``model``
    in the same scope: a choice of the program's, which a ``.to(device)`` before it
    does not undo and which the inputs the port would move meet on the CPU. A
    ``model.cpu()`` no forward follows (before saving its weights) is no such choice.

    Each such call holds the word (the method ``cpu``, a constant ``"cpu"`` or
    ``"cpu:N"``): a text that cannot hold it (:func:`~torchport.check._prefilter.may_hold`,
    most of a project's files) needs no index of the file's calls. Nor does a file whose
    walk (the port's structure) met every ``x.cpu()`` and ``.to(...)`` to the CPU written
    out (the calls this search can return) and at most one of them is such a choice: only
    where several are is ``ast.walk``'s order asked, of the index.
    """
    if not may_hold(ctx.source, CPU):
        return None
    structure = facts.structure
    if structure.walked:
        cpu_calls = [c for c in structure.cpu_calls if not c.args]
        chosen = [
            c
            for c in (*cpu_calls, *(c for c in structure.moves if _to_the_cpu(c, ctx)))
            if _runs_on_the_cpu(c, facts)
        ]
        if len(chosen) < 2:
            return chosen[0] if chosen else None
    for call in ctx.scopes.nodes_of(ast.Call):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        if not (call.func.attr == "cpu" and not call.args) and not _to_the_cpu(call, ctx):
            continue
        if _runs_on_the_cpu(call, facts):
            return call
    return None


def _runs_on_the_cpu(call: ast.Call, facts: PortFacts) -> bool:
    """Whether ``x.cpu()`` (``x.to("cpu")``) puts a model there that runs there (see above)."""
    func = call.func
    assert isinstance(func, ast.Attribute)
    scope = facts.scope_of.get(id(call))
    if scope is None or scope.internal:
        return False
    if facts.known.builds(func.value, lambda _: False):
        return True
    if isinstance(func.value, ast.Name) and facts.holds_model(func.value, scope):
        name, stmt = func.value.id, facts.parents.get(id(call))
        return isinstance(stmt, ast.Expr | ast.Assign) and any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id == name
            and n.lineno > call.lineno
            for n in scope.nodes
        )
    return False


def _to_the_cpu(call: ast.Call, ctx: Context) -> bool:
    """``x.to("cpu")``, ``x.to(torch.device("cpu"))``, ``x.to(device="cpu")``: written out."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr != "to":
        return False
    target = call.args[0] if call.args else None
    target = target or next((k.value for k in call.keywords if k.arg == "device"), None)
    if isinstance(target, ast.Call) and ctx.qualname(target.func) == "torch.device":
        target = target.args[0] if len(target.args) == 1 else None
    return (
        isinstance(target, ast.Constant)
        and isinstance(target.value, str)
        and target.value.partition(":")[0] == CPU
    )


def _to_own_class_device(call: ast.Call, facts: PortFacts, ctx: Context) -> bool:
    """``.to(self.device)`` where the enclosing class binds ``self.device = torch.device(...)``."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr != "to":
        return False
    args = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "device")]
    attrs = {
        a.attr
        for a in args
        if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == "self"
    }
    if not attrs:
        return False
    cls: ast.AST | None = facts.parents.get(id(call))
    while cls is not None and not isinstance(cls, (ast.ClassDef, ast.Module)):
        cls = facts.parents.get(id(cls))
    if not isinstance(cls, ast.ClassDef):
        return False
    return any(
        isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Call)
        and ctx.qualname(n.value.func) == "torch.device"
        and any(
            isinstance(t, ast.Attribute)
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            and t.attr in attrs
            for t in n.targets
        )
        and not _handed_in(n.value, facts)
        for n in ast.walk(cls)
    )


def _handed_in(made: ast.Call, facts: PortFacts) -> bool:
    """Whether ``torch.device(...)`` (``made``) keeps a parameter of the function it is in
    (``torch.device(device)``, ``torch.device(device if device is not None else "cpu")``):
    the device its caller hands, no choice of the class's own (whether that is the CPU is
    the caller's question: ``_kept_models``, ``_class_devices``)."""
    from torchport.check.port._kept_models import parameter_or_cpu  # on first use

    kept = parameter_or_cpu(made.args[0]) if len(made.args) == 1 else None
    func = facts.parents.get(id(made))
    while func is not None and not isinstance(func, _FUNCTIONS):
        func = facts.parents.get(id(func))
    if not isinstance(kept, ast.Name) or not isinstance(
        func, ast.FunctionDef | ast.AsyncFunctionDef
    ):
        return False
    a = func.args
    return kept.id in {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}

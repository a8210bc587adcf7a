"""A CUDA branch that only describes the GPU: ``torch.cuda.current_device()`` read as a fact.

For TP109 (``_cuda_choice.moves_to_cuda`` with ``timing``). Held-out samples Z, AA, AB and
AC (class F1, benchmarks/RESULTS.md): ``if torch.cuda.is_available():`` around code that
reads the GPU's index, name, properties and memory statistics for a report (a GPU-info
dialog, a diagnosis tool, a memory percentage), judged low: no device is chosen there.
The name, count, properties and memory statistics were already no device choice
(``_cuda_choice``'s queries); ``current_device()`` was, because it returns the index CUDA
uses, and a program may place with it (``x.to(torch.cuda.current_device())``,
``factory_kwargs = {"device": torch.cuda.current_device(), "dtype": dtype}`` splatted into
a factory, ``torch.device("cuda", torch.cuda.current_device())``).

The invariant: a ``torch.cuda.current_device()`` call in the branch names no device when
its value is only

* an argument of a query that describes the GPU (:data:`DESCRIBING`: its name, capability,
  properties, memory statistics; ``torch.cuda.memory_allocated(torch.cuda.current_device())``);
* shown as text: an f-string's value whose literal text holds a character no device string
  has (``f"GPU {i}"``, not ``f"cuda:{i}"``), or what ``print`` or a logger is given;
* a value of a record of the GPU: a dict display with string keys whose every value is a
  fact (a :data:`DESCRIBING` query's call, an attribute of one, ``torch.version.*``, a
  number, a string or f-string that is text (as above), arithmetic of those, ``fact if test
  else fact``, or a plain name every binding of which in the scope (the module's, where the
  scope binds it nowhere) is a single-target assignment of such a value, names aside), two
  of them query calls at least: the record holds no dtype, no tensor, no setting, no device
  string, so nothing splatted or read from it places anything;
* or bound, in the branch, to a plain name every read of which in the scope holding the
  branch (the function, or the module and all its functions) is one of the above; a name
  declared ``global`` or ``nonlocal`` there is not followed.

Anything else names CUDA as before: a move, a ``device=`` keyword, ``torch.device(...)``,
``set_device``, a dict holding any other value, a name read otherwise or bound by an
attribute, a subscript or a tuple.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.semantic._devices import prints_or_logs

__all__ = ["DESCRIBING", "is_text", "only_described", "shown_as_text"]

_CURRENT = "torch.cuda.current_device"
# torch.cuda's queries that only describe the GPU: what a report reads, never a placement
DESCRIBING = frozenset(
    f"torch.cuda.{n}"
    for n in (
        *("current_device", "device_count", "is_available", "is_bf16_supported"),
        *("get_device_name", "get_device_capability", "get_device_properties", "get_arch_list"),
        *("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved"),
        *("memory_cached", "max_memory_cached", "memory_stats", "memory_summary"),
        *("mem_get_info", "utilization", "temperature", "power_draw", "clock_rate"),
    )
)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)


def only_described(call: ast.Call, branch: ast.If | ast.IfExp, ctx: Context) -> bool:
    """Whether ``call``, a ``torch.cuda.current_device()`` in ``branch``'s CUDA side, is only
    described (the invariant above)."""
    if ctx.qualname(call.func) != _CURRENT:
        return False
    parts: list[ast.AST] = [*branch.body] if isinstance(branch, ast.If) else [branch.body]
    parents = _parents(parts)
    scope = next((a for a in reversed(ctx.ancestors) if isinstance(a, _SCOPES)), ctx.tree)
    holder = parents.get(id(call))
    if isinstance(holder, ast.Assign) and holder.value is call:
        target = holder.targets[0] if len(holder.targets) == 1 else None
        if not isinstance(target, ast.Name):
            return False
        return _reads_only_described(target.id, scope, ctx)
    return _described_at(call, holder, parents, scope, ctx)


def _parents(parts: list[ast.AST]) -> dict[int, ast.AST]:
    found: dict[int, ast.AST] = {}
    todo = list(parts)
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            found[id(child)] = node
            todo.append(child)
    return found


def _described_at(
    value: ast.AST,
    holder: ast.AST | None,
    parents: dict[int, ast.AST],
    scope: ast.AST,
    ctx: Context,
) -> bool:
    """``value`` (a call or a name's read) sits where it is only described: a describing
    query's argument, a record's value, or shown as text (:func:`shown_as_text`)."""
    if isinstance(holder, ast.keyword):
        holder = parents.get(id(holder))
        if not isinstance(holder, ast.Call) or not any(k.value is value for k in holder.keywords):
            return False
        return ctx.qualname(holder.func) in DESCRIBING
    if (
        isinstance(holder, ast.Call)
        and any(a is value for a in holder.args)
        and ctx.qualname(holder.func) in DESCRIBING
    ):
        return True
    if isinstance(holder, ast.Dict) and any(v is value for v in holder.values):
        return _record(holder, scope, ctx)
    return shown_as_text(value, parents)


# what a device string may hold ("cuda:0", "mps", "privateuseone"): text holding any other
# character is no device
_DEVICE_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:")


def is_text(value: ast.AST) -> bool:
    """A string constant, or an f-string with a literal part, holding a character no device
    string has (a space, a bracket, ``=``)."""
    if isinstance(value, ast.JoinedStr):
        return any(is_text(part) for part in value.values)
    return (
        isinstance(value, ast.Constant)
        and isinstance(value.value, str)
        and not set(value.value) <= _DEVICE_CHARACTERS
    )


def shown_as_text(value: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """``value`` is the value of an f-string that is text (:func:`is_text`), or an argument
    of ``print(...)``/``logger.<level>(...)``, directly or as an f-string's value."""
    holder = parents.get(id(value))
    if isinstance(holder, ast.FormattedValue) and holder.value is value:
        value = parents.get(id(holder)) or holder
        if isinstance(value, ast.JoinedStr) and is_text(value):
            return True
        holder = parents.get(id(value))
    if isinstance(holder, ast.keyword) and holder.value is value:
        holder = parents.get(id(holder))
        return isinstance(holder, ast.Call) and prints_or_logs(holder)
    return (
        isinstance(holder, ast.Call)
        and prints_or_logs(holder)
        and any(a is value for a in holder.args)
    )


def _reads_only_described(name: str, scope: ast.AST, ctx: Context) -> bool:
    """Every read of ``name`` in ``scope`` (nested functions too) is only described; the
    name is declared ``global``/``nonlocal`` nowhere there."""
    parents = _parents([scope])
    for node in ast.walk(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return False
        if (
            isinstance(node, ast.Name)
            and node.id == name
            and isinstance(node.ctx, ast.Load)
            and not _described_at(node, parents.get(id(node)), parents, scope, ctx)
        ):
            return False
    return True


def _record(record: ast.Dict, scope: ast.AST, ctx: Context) -> bool:
    """A dict display with string keys whose every value is a fact, two query calls at least."""
    if not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in record.keys):
        return False  # `**other` (a None key) or a computed key
    queries = 0
    for value in record.values:
        kind = _fact(value, scope, ctx, names=True)
        if kind is None:
            return False
        queries += kind
    return queries >= 2


def _fact(value: ast.AST, scope: ast.AST, ctx: Context, *, names: bool) -> int | None:
    """None: not a fact; else how many describing queries it calls (0 or 1)."""
    if isinstance(value, ast.Constant):
        return 0 if not isinstance(value.value, str) or is_text(value) else None
    if isinstance(value, ast.JoinedStr):
        parts = [v.value for v in value.values if isinstance(v, ast.FormattedValue)]
        facts = [_fact(part, scope, ctx, names=names) for part in parts]
        return 0 if is_text(value) and None not in facts else None
    if isinstance(value, ast.Call):
        if _number_of(value, ctx):  # `int(torch.cuda.memory_allocated(i))`: still a number
            return _fact(value.args[0], scope, ctx, names=names)
        if ctx.qualname(value.func) not in DESCRIBING:
            return None
        inner = [*value.args, *(k.value for k in value.keywords)]
        return 1 if all(_fact(a, scope, ctx, names=names) is not None for a in inner) else None
    if isinstance(value, ast.Attribute):
        if (ctx.qualname(value) or "").startswith("torch.version."):
            return 1
        return _fact(value.value, scope, ctx, names=names)  # `props(0).total_memory`
    if isinstance(value, ast.BinOp):
        left = _fact(value.left, scope, ctx, names=names)
        right = _fact(value.right, scope, ctx, names=names)
        return None if left is None or right is None else min(1, left + right)
    if isinstance(value, ast.UnaryOp):
        return _fact(value.operand, scope, ctx, names=names)
    if isinstance(value, ast.IfExp):
        body = _fact(value.body, scope, ctx, names=names)
        orelse = _fact(value.orelse, scope, ctx, names=names)
        return None if body is None or orelse is None else max(body, orelse)
    if isinstance(value, ast.Name) and names:
        kind = _bound_to_facts(value.id, scope, ctx)
        if kind == -1 and scope is not ctx.tree:  # a global of the module: bound there
            kind = _bound_to_facts(value.id, ctx.tree, ctx)
        return None if kind == -1 else kind
    return None


def _number_of(call: ast.Call, ctx: Context) -> bool:
    """``int(x)``, ``float(x)`` or ``round(x)`` (the builtins: no binding of the name reaches
    the call), one argument: the number of a fact is a fact (sample AF's runtime monitor)."""
    func = call.func
    return (
        isinstance(func, ast.Name)
        and func.id in ("int", "float", "round")
        and len(call.args) == 1
        and not call.keywords
        and not ctx.scopes.bindings(func.id, func)
    )


def _bound_to_facts(name: str, scope: ast.AST, ctx: Context) -> int | None:
    """Every binding of ``name`` in ``scope`` is ``name = <fact>`` (names aside): how many
    queries the facts call (0 or 1); -1: ``scope`` binds it nowhere; None: otherwise."""
    kinds: list[int] = []
    for node in ast.walk(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return None
        if isinstance(node, ast.arg) and node.arg == name:
            return None
        if isinstance(node, ast.alias) and (node.asname or node.name) == name:
            return None  # an import binds it
        if isinstance(node, _DEFINITIONS) and node.name == name:
            return None
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            kinds.append(-1)  # a binding, matched below
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == name
        ):
            kind = _fact(node.value, scope, ctx, names=False)
            if kind is None:
                return None
            kinds.append(kind)
    bindings = kinds.count(-1)
    facts = [k for k in kinds if k >= 0]
    if not kinds:
        return -1
    if not facts or bindings != len(facts):
        return None  # bound some other way too (a loop, `with ... as`, a tuple, `+=`)
    return max(facts)

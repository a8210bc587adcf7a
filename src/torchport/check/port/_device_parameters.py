"""The project's own functions that place their work on a device they are handed.

``def train_gnn(device, args): model = GCN(...).to(device)`` in ``baselines/gnn_link_pred.py``:
what ``train_gnn(device="cpu", args=args)`` runs stays on the CPU, in a file the caller's port
does not change. A **placing parameter** of a module-level function is one its own body
(nested functions and classes aside) places work on: the target of ``.to(p)`` or
``.to(device=p)`` or a ``device=p`` keyword of any call, directly or through a name bound
to ``torch.device(p)`` (any ``*.device(p)``: the callee's file is read from syntax alone).
Not ``map_location=p`` (loading onto the CPU to save device memory is a common choice) nor
a device only made and handed back (``return torch.device(p)``: a fallback's value). Asked
with ``cuda=True``, ``.cuda(p)`` places on ``p`` too (an integer handed there is a CUDA index,
TP124; the CPU handed there is not TP121's: ``.cuda("cpu")`` raises).

:func:`placing_parameters` answers, for a call, the callee's parameters (name and position)
that place: a function of the file itself, one a ``from module import name`` of the
project's own modules binds, ``module.name`` after ``import module`` (found as the project
view finds modules: ``_module_files.py``, ``_script_path.py``), or ``self.name(...)`` in a
method of a class of the file that defines ``name`` itself (``LP_Engine.load_models`` handing
``device_id`` to ``self.load_model``, held-out recall round 5h). Each module is read once per
process and file version; nothing is imported, nothing imports torch.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.port._module_files import module_facts
from torchport.check.port._script_path import module_function_called, script_lookups

__all__ = ["placing_parameters", "placing_parameters_of"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# A function's placing parameters: ((position, or -1 for keyword-only), name), ...
Placing = tuple[tuple[int, str], ...]
_CACHE: dict[str, tuple[tuple[int, int], dict[str, Placing]]] = {}
_CUDA_CACHE: dict[str, tuple[tuple[int, int], dict[str, Placing]]] = {}


def placing_parameters_of(
    func: ast.FunctionDef | ast.AsyncFunctionDef, *, cuda: bool = False
) -> Placing:
    """``func``'s parameters its own body uses as a device (module docstring)."""
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    params = {*positional, *(p.arg for p in a.kwonlyargs)}
    aliases: dict[str, str] = {}  # `d = torch.device(dev)`: `d` places on `dev`
    targets: list[ast.expr] = []  # every `.to(t)` and `device=t` of the body
    todo = list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        todo.extend(ast.iter_child_nodes(node))
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "device"
            and node.value.args
            and isinstance(node.value.args[0], ast.Name)
            and node.value.args[0].id in params
        ):
            aliases[node.targets[0].id] = node.value.args[0].id
        if not isinstance(node, ast.Call):
            continue
        # (TP109 reads this as a CUDA-or-CPU choice: "cuda" here is a method's name, not a
        # device; a noise class of TP109 that its own check found, left for its next round)
        moves = ("to", "cuda") if cuda else ("to",)  # noqa: TP109
        if isinstance(node.func, ast.Attribute) and node.func.attr in moves and node.args:
            targets.append(node.args[0])
        targets.extend(k.value for k in node.keywords if k.arg == "device")
    used = set()
    for t in targets:
        if isinstance(t, ast.Name):
            used.add(t.id if t.id in params else aliases.get(t.id, ""))
    used.discard("")
    return tuple((positional.index(n) if n in positional else -1, n) for n in sorted(used))


def _functions_of(tree: ast.Module, *, cuda: bool = False) -> dict[str, Placing]:
    found: dict[str, Placing] = {}
    for stmt in tree.body:
        if isinstance(stmt, _FUNCTIONS):
            found[stmt.name] = placing_parameters_of(stmt, cuda=cuda)  # the last one counts
        elif isinstance(stmt, ast.ClassDef):
            found.pop(stmt.name, None)
    return found


def _cuda_functions_of(tree: ast.Module) -> dict[str, Placing]:
    return _functions_of(tree, cuda=True)


def placing_parameters(call: ast.Call, ctx: Context, *, cuda: bool = False) -> Placing:
    """The placing parameters of the project function ``call`` calls; () when it is none."""
    callee = module_function_called(call, ctx)
    if callee is None:
        return _own_method_placing(call, ctx, cuda=cuda)
    name, where = callee
    if where is None:
        key = f"device_parameters.own.{cuda}"
        own = ctx.memo.get(key)
        if own is None:
            own = ctx.memo[key] = _functions_of(ctx.tree, cuda=cuda)
        return own.get(name, ())  # type: ignore[attr-defined,no-any-return]
    cache, facts = (_CUDA_CACHE, _cuda_functions_of) if cuda else (_CACHE, _functions_of)
    return module_facts(where, script_lookups(ctx), cache, facts, {}).get(name, ())


def _own_method_placing(call: ast.Call, ctx: Context, *, cuda: bool) -> Placing:
    """``self.name(...)`` in a method: the placing parameters of the class's own ``name``.

    Only a method the enclosing class defines in its body (the last definition), called
    on the enclosing method's first parameter; positions are the call's (``self`` left
    out, none for a ``staticmethod``). A method the class inherits (a subclass's override
    is not looked for), one a decorator other than ``staticmethod``/``classmethod`` wraps,
    or an instance method called on ``cls``, answers ().
    """
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return ()
    chain = ctx.ancestors
    for at in range(len(chain) - 1, 0, -1):
        method = chain[at]
        if isinstance(method, (ast.ClassDef, ast.Lambda)):
            return ()
        if isinstance(method, _FUNCTIONS):
            cls = chain[at - 1]
            break
    else:
        return ()
    first = [*method.args.posonlyargs, *method.args.args][:1]
    if not isinstance(cls, ast.ClassDef) or [p.arg for p in first] != [func.value.id]:
        return ()
    if "staticmethod" in _decorators(method):
        return ()  # its first parameter is no instance
    target = None
    for stmt in cls.body:
        if isinstance(stmt, _FUNCTIONS) and stmt.name == func.attr:
            target = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and func.attr in _names(stmt):
            target = None
    kinds = set() if target is None else _decorators(target)
    if target is None or kinds - {"staticmethod", "classmethod"}:
        return ()
    if "classmethod" in _decorators(method) and not kinds:
        return ()  # `cls.name(...)` of an instance method: its first argument is the instance
    shift = 0 if "staticmethod" in kinds else 1
    placing = placing_parameters_of(target, cuda=cuda)
    return tuple((p - shift if p >= 0 else p, n) for p, n in placing if p < 0 or p >= shift)


def _decorators(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The last names of ``func``'s decorators (``functools.wraps(f)`` is ``wraps``)."""
    found = set()
    for deco in func.decorator_list:
        if isinstance(deco, ast.Call):
            deco = deco.func
        found.add(deco.attr if isinstance(deco, ast.Attribute) else getattr(deco, "id", "?"))
    return found


def _names(stmt: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return {t.id for t in targets if isinstance(t, ast.Name)}

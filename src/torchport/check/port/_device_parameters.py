"""The project's own functions that place their work on a device they are handed.

``def train_gnn(device, args): model = GCN(...).to(device)`` in ``baselines/gnn_link_pred.py``:
what ``train_gnn(device="cpu", args=args)`` runs stays on the CPU, in a file the caller's port
does not change. A **placing parameter** of a module-level function is one its own body
(nested functions and classes aside) places work on: the target of ``.to(p)`` or
``.to(device=p)`` or a ``device=p`` keyword of any call, directly or through a name bound
to ``torch.device(p)`` (any ``*.device(p)``: the callee's file is read from syntax alone).
Not ``map_location=p`` (loading onto the CPU to save device memory is a common choice) nor
a device only made and handed back (``return torch.device(p)``: a fallback's value).

:func:`placing_parameters` answers, for a call, the callee's parameters (name and position)
that place: a function of the file itself, one a ``from module import name`` of the
project's own modules binds, or ``module.name`` after ``import module`` (found as the project
view finds modules: ``_module_files.py``, ``_script_path.py``). Each module is read once per
process and file version; nothing is imported, nothing imports torch.
"""

from __future__ import annotations

import ast
from pathlib import Path

from torchport.check._context import Context
from torchport.check.port._module_files import Lookups, module_facts
from torchport.check.port._script_path import module_function_called, script_lookups

__all__ = ["placing_parameters", "placing_parameters_of"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# A function's placing parameters: ((position, or -1 for keyword-only), name), ...
Placing = tuple[tuple[int, str], ...]
_CACHE: dict[str, tuple[tuple[int, int], dict[str, Placing]]] = {}


def placing_parameters_of(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Placing:
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
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to" and node.args:
            targets.append(node.args[0])
        targets.extend(k.value for k in node.keywords if k.arg == "device")
    used = set()
    for t in targets:
        if isinstance(t, ast.Name):
            used.add(t.id if t.id in params else aliases.get(t.id, ""))
    used.discard("")
    return tuple((positional.index(n) if n in positional else -1, n) for n in sorted(used))


def _functions_of(tree: ast.Module) -> dict[str, Placing]:
    found: dict[str, Placing] = {}
    for stmt in tree.body:
        if isinstance(stmt, _FUNCTIONS):
            found[stmt.name] = placing_parameters_of(stmt)  # the last definition counts
        elif isinstance(stmt, ast.ClassDef):
            found.pop(stmt.name, None)
    return found


def _module_functions(path: Path, lookups: Lookups) -> dict[str, Placing]:
    return module_facts(path, lookups, _CACHE, _functions_of, {})


def placing_parameters(call: ast.Call, ctx: Context) -> Placing:
    """The placing parameters of the project function ``call`` calls; () when it is none."""
    callee = module_function_called(call, ctx)
    if callee is None:
        return ()
    name, where = callee
    if where is None:
        own = ctx.memo.get("device_parameters.own")
        if own is None:
            own = ctx.memo["device_parameters.own"] = _functions_of(ctx.tree)
        return own.get(name, ())  # type: ignore[attr-defined,no-any-return]
    return _module_functions(where, script_lookups(ctx)).get(name, ())

"""The project's own functions whose body hard-codes CUDA, and the calls that reach one.

``def to_cuda(data, gpu_id=0): return data.cuda(gpu_id, non_blocking=True)`` in
``utilities/to_torch.py``: TP101 reports the ``.cuda()`` in its body, but every caller
(``data = to_cuda(data)`` in each trainer) is what puts data on CUDA, and the callers are
what a port changes (nnUNet guarded each call). A **CUDA helper** is a module-level function
whose own body (nested functions and classes aside) calls ``.cuda(...)`` on one of its
parameters, or ``.to("cuda...")``, hands back what it moved at every ``return`` (``return
data`` after ``data = data.cuda()``, ``return [d.cuda() for d in data]``), and asks
nothing about the device first: no test of its body (``if``,
a conditional, ``while``, ``assert``) reads a name or attribute naming CUDA, a GPU or a
device, nor ``is_available``/``is_cuda``/``device_count`` anywhere (a helper that chooses is
not hard-coded).

:func:`helper_called` answers, for a call, where the helper it calls hard-codes CUDA: a
function of the file itself, one a ``from module import name`` of the project's own
modules binds, or ``module.name`` after ``import module`` (found as the project view finds
modules: ``_module_files.py``, ``_script_path.py``). Each module's helpers are read once
per process and file version, from syntax only; nothing is imported, nothing imports torch.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from torchport.check._context import Context
from torchport.check.port._module_files import Lookups, module_facts
from torchport.check.port._script_path import module_function_called, script_lookups

__all__ = ["Helper", "cuda_line", "helper_called"]

# (the helper's name, the file that defines it ("" for the file itself), the line of its
# CUDA, whether it has a device parameter already)
Helper = tuple[str, str, int, bool]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_CHOOSING_ATTRS = frozenset({"is_available", "is_cuda", "device_count"})
_CHOOSING_WORDS = ("cuda", "gpu", "device")
# realpath -> (version, {function name: (line, takes a device)})
_CACHE: dict[str, tuple[tuple[int, int], dict[str, tuple[int, bool]]]] = {}


def _own_nodes(func: ast.AST) -> list[ast.AST]:
    """The nodes of ``func``'s own body: nested functions, lambdas and classes left out."""
    found: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, _SCOPES):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _names_a_choice(test: ast.expr) -> bool:
    for node in ast.walk(test):
        word = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(word, str) and any(w in word.lower() for w in _CHOOSING_WORDS):
            return True
    return False


def _cuda_call(node: ast.AST) -> bool:
    """``value.cuda(...)`` (not ``super().cuda()``) or ``value.to("cuda...")``."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    receiver = node.func.value
    if isinstance(receiver, ast.Call) and getattr(receiver.func, "id", None) == "super":
        return False
    if node.func.attr == "cuda":
        return True
    first = node.args[0] if node.args else None
    return (
        node.func.attr == "to"
        and isinstance(first, ast.Constant)
        and isinstance(first.value, str)
        and first.value.split(":")[0] == "cuda"
    )


def cuda_line(func: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """The line of the first CUDA call of a CUDA helper (module docstring), else None."""
    if func.name == "cuda":
        return None  # an override of `.cuda()`: what its caller asks for by name
    lines: list[int] = []
    for node in _own_nodes(func):
        if isinstance(node, ast.Attribute) and node.attr in _CHOOSING_ATTRS:
            return None
        test = getattr(node, "test", None)
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)) and _names_a_choice(
            test  # type: ignore[arg-type]
        ):
            return None
        if _cuda_call(node):
            lines.append(node.lineno)  # type: ignore[attr-defined]
    return min(lines) if lines and _hands_back(func) else None


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    a = func.args
    return {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}


def _moved(expr: ast.expr | None, names: set[str]) -> bool:
    """A CUDA move of one of ``names`` (``x.cuda()``), or a sequence or comprehension of them."""
    if isinstance(expr, ast.ListComp | ast.GeneratorExp | ast.SetComp):
        rows = {
            n.id for g in expr.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)
        }
        return _moved(expr.elt, names | rows)
    if isinstance(expr, ast.Tuple | ast.List):
        return bool(expr.elts) and all(_moved(e, names) for e in expr.elts)
    if not isinstance(expr, ast.Call) or not _cuda_call(expr):
        return False
    root = expr.func.value  # type: ignore[attr-defined]
    while isinstance(root, ast.Attribute | ast.Subscript):
        root = root.value
    return isinstance(root, ast.Name) and root.id in names


def _hands_back(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether every ``return`` hands back its parameters moved to CUDA (``return x.cuda()``,
    or a name bound to such a move): a helper that moves what it is given, not a whole step
    (``train(...)``, ``main()``) that happens to move something inside (TP101's)."""
    params = _params(func)
    moved: set[str] = set()
    returns: list[ast.expr | None] = []
    for node in _own_nodes(func):
        if isinstance(node, ast.Assign) and _moved(node.value, params):
            moved.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Return):
            returns.append(node.value)
    return bool(returns) and all(
        _moved(r, params) or (isinstance(r, ast.Name) and r.id in moved) for r in returns
    )


def _takes_device(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    a = func.args
    return any("device" in p.arg.lower() for p in (*a.posonlyargs, *a.args, *a.kwonlyargs))


def _helpers_of(tree: ast.Module) -> dict[str, tuple[int, bool]]:
    found: dict[str, tuple[int, bool]] = {}
    for stmt in tree.body:
        if isinstance(stmt, _FUNCTIONS):
            line = cuda_line(stmt)
            if line is not None:
                found[stmt.name] = (line, _takes_device(stmt))
            else:
                found.pop(stmt.name, None)  # redefined without CUDA: the last one counts
    return found


def _module_helpers(path: Path, lookups: Lookups) -> dict[str, tuple[int, bool]]:
    return module_facts(path, lookups, _CACHE, _helpers_of, {})


def helper_called(call: ast.Call, ctx: Context) -> Helper | None:
    """The CUDA helper ``call`` calls (module docstring), if it is one, else None."""
    callee = module_function_called(call, ctx)
    if callee is None:
        return None
    name, where = callee
    if where is None:
        own = ctx.memo.get("cuda_helpers.own")
        if own is None:
            own = ctx.memo["cuda_helpers.own"] = _helpers_of(ctx.tree)
        found = own.get(name)  # type: ignore[attr-defined]
        return None if found is None else (name, "", *found)
    found = _module_helpers(where, script_lookups(ctx)).get(name)
    if found is None:
        return None
    shown = os.path.relpath(where, os.path.dirname(ctx.path))  # as the reader finds it
    return (name, Path(shown).as_posix(), *found)

"""Worker processes that use a shared model only for its weights (A3C's workers).

``mp.Process(target=train, args=(shared_model, optimizer, rank, args))`` computes
nothing: it hands its arguments to ``train`` in another process, and whatever meets
the model meets it there. The port cannot follow that hand-over, so it reports the
model as gone into a tuple (TP523) and the other arguments as values meeting it.

Where ``train`` can be read (a function of the file, or a module-level function of a
project module imported by name, ``from train import train``) and every parameter a
model lands in is used there only through its weights (``shared.state_dict()``,
``shared.parameters()``, ``shared.share_memory()``: the A3C pattern, where each
worker builds and places its own model), no tensor meets that model in the worker:
the model leaves nothing unseen, and the tuple is not reported. A forward of the
parameter, the parameter handed on or rebound, a ``*args``, ``kwargs=`` or an
unreadable target keep the report. The other arguments are still taken to meet the
model (and moved or reported as before): they may meet the worker's own model
(Pytorch-DPPO's CPU ``Shared_obs_stats`` handed beside the shared model, a real
leftover).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from torchport.check._context import Context
from torchport.check.port._module_files import find_module

__all__ = ["idle_worker"]

_PROCESSES = frozenset({"multiprocessing.Process", "torch.multiprocessing.Process"})
_CONTEXTS = frozenset({"multiprocessing.get_context", "torch.multiprocessing.get_context"})
# A model's methods that read or write its weights, never its forward.
_WEIGHTS = frozenset(
    {"state_dict", "load_state_dict", "parameters", "named_parameters", "buffers",
     "named_buffers", "share_memory", "zero_grad", "train", "eval"}
)  # fmt: skip
_Function = ast.FunctionDef | ast.AsyncFunctionDef


def idle_worker(ctx: Context, call: ast.Call, is_model: Callable[[ast.expr], bool]) -> bool:
    """Whether ``call`` is ``Process(target=f, args=(...))`` with at least one model among
    the arguments, ``f`` readable, and each model's parameter there used only for weights."""
    if not _process(ctx, call.func) or call.args:
        return False
    words = {k.arg: k.value for k in call.keywords}
    target, given = words.get("target"), words.get("args")
    if None in words or "kwargs" in words or not isinstance(target, ast.Name):
        return False
    if not isinstance(given, (ast.Tuple, ast.List)):
        return False
    if any(isinstance(e, ast.Starred) for e in given.elts):
        return False
    models = [i for i, e in enumerate(given.elts) if is_model(e)]
    if not models:
        return False
    func = _target(ctx, target)
    if func is None:
        return False
    positional = [*func.args.posonlyargs, *func.args.args]
    return all(i < len(positional) and _weights_only(func, positional[i].arg) for i in models)


def _process(ctx: Context, func: ast.expr) -> bool:
    """``mp.Process``, also of a context (``mp = _mp.get_context("spawn")``, bound once)."""
    if ctx.qualname(func) in _PROCESSES:
        return True
    if not (isinstance(func, ast.Attribute) and func.attr == "Process"):
        return False
    holder = func.value
    if isinstance(holder, ast.Name):
        found = ctx.scopes.bindings(holder.id, holder)
        holder = found[0].value if len(found) == 1 and found[0].value is not None else holder
    return isinstance(holder, ast.Call) and ctx.qualname(holder.func) in _CONTEXTS


def _target(ctx: Context, name: ast.Name) -> _Function | None:
    """The function ``name`` is bound to: the file's own (one binding), or a module-level
    function of the project module a module-level ``from X import name`` reads."""
    found = ctx.scopes.bindings(name.id, name)
    if len(found) != 1:
        return None
    node = found[0].node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node
    holder = node if isinstance(node, ast.ImportFrom) else ctx.scopes.parent(node)
    if not isinstance(holder, ast.ImportFrom) or holder not in ctx.tree.body:
        return None
    imported = next((a.name for a in holder.names if (a.asname or a.name) == name.id), None)
    if imported is None or not ctx.path or ctx.path.startswith("<"):
        return None
    path = find_module(Path(ctx.path), holder.module, holder.level)
    tree = _parsed(ctx, path) if path is not None else None
    if tree is None:
        return None
    defined = [
        s
        for s in tree.body
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign))
        and imported in _bound(s)
    ]
    only = defined[0] if len(defined) == 1 else None
    return only if isinstance(only, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _bound(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Assign):
        return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return {stmt.name} if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()


def _parsed(ctx: Context, path: Path) -> ast.Module | None:
    """The project module at ``path``, parsed once per file's walk (None: unreadable)."""
    key = f"port.worker_module:{path}"
    if key not in ctx.memo:
        try:
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            ctx.memo[key] = ast.parse(text)
        except (OSError, SyntaxError, ValueError):
            ctx.memo[key] = None
    found = ctx.memo[key]
    return found if isinstance(found, ast.Module) else None


def _weights_only(func: _Function, param: str) -> bool:
    """Whether every read of ``param`` in ``func`` (nested functions too) is a call of one of
    its weight methods, and nothing rebinds or shadows the name."""
    parents: dict[int, ast.AST] = {}
    reads: list[ast.Name] = []
    for node in ast.walk(func):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
        if isinstance(node, ast.Name) and node.id == param:
            if not isinstance(node.ctx, ast.Load):
                return False
            reads.append(node)
        elif node is not func and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(a.arg == param for a in _all_args(node.args)):
                return False
        elif isinstance(node, ast.Lambda) and any(a.arg == param for a in _all_args(node.args)):
            return False
    for read in reads:
        attribute = parents.get(id(read))
        if not (isinstance(attribute, ast.Attribute) and attribute.attr in _WEIGHTS):
            return False
        called = parents.get(id(attribute))
        if not (isinstance(called, ast.Call) and called.func is attribute):
            return False
    return True


def _all_args(args: ast.arguments) -> list[ast.arg]:
    rest = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *rest]

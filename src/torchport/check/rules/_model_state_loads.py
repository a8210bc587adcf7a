"""Which of TP301's loads a default run reports: a model's saved state, in code that names a device.

``torch.load`` without ``map_location`` is a problem only where the file holds tensors saved on a
GPU. Of the 165 judged rows (samples A-U) TP301 still reports, 129 are real; in the form this
module tells, 86 of 92 (93%; branch r34al, benchmarks/RESULTS.md): what is loaded reaches
``load_state_dict(...)`` (``net.load_state_dict(torch.load(p))``, a key of it,
``net.load_state_dict(ckpt["model"])``, or through names in the same scope, ``sd =
ckpt.get("state_dict")``), so it is a trained model's state, which a GPU run saves with its
tensors on the GPU; the load maps no file into memory (``mmap=True`` loads on the host and is
moved after: gpt-fast's converted checkpoints, judged not real); and the module names a device
at all (``cuda`` or ``device`` in its text): a module that never does saves and loads on the
host (ddpg-naf's actor and critic, judged not real). The loads outside the form (data sets,
statistics, vocabularies, caches a program writes itself: 43 of 73 real) are left to a run
that names the rule (``_select.ONLY_FORMS``).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["restores_model_state"]

_KEYED = frozenset({"get", "pop", "copy"})  # `ckpt.get("model")`: still the loaded state
_STEPS = 64  # values followed per load, at most


def restores_model_state(load: ast.AST, ctx: Context) -> bool:
    """Whether the ``torch.load(...)`` call ``load`` is the form a default run reports of TP301."""
    if not isinstance(load, ast.Call) or _maps_a_file(load):
        return False
    source = ctx.source
    if "cuda" not in source and "device" not in source:
        return False
    return _reaches_load_state_dict(load, ctx)


def _maps_a_file(load: ast.Call) -> bool:
    """``torch.load(p, mmap=...)``, unless ``mmap=False`` spelled out."""
    for word in load.keywords:
        if word.arg == "mmap":
            return not (isinstance(word.value, ast.Constant) and word.value.value is False)
    return False


def _reaches_load_state_dict(load: ast.Call, ctx: Context) -> bool:
    """Whether what ``load`` returns, a key of it, or a name bound to either in the same scope
    (an attribute of ``self`` in the same function) is the first argument of a
    ``.load_state_dict(...)`` call."""
    scopes = ctx.scopes
    todo: list[ast.AST] = [load]
    seen: set[int] = set()
    steps = 0
    while todo and steps < _STEPS:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        steps += 1
        parent = scopes.parent(value)
        if isinstance(parent, ast.Subscript) and parent.value is value:
            todo.append(parent)  # `ckpt["model"]`
        elif isinstance(parent, ast.Attribute) and parent.value is value:
            call = scopes.parent(parent)
            if parent.attr in _KEYED and isinstance(call, ast.Call) and call.func is parent:
                todo.append(call)  # `ckpt.get("model")`
        elif isinstance(parent, ast.Call):
            func = parent.func
            named = isinstance(func, ast.Attribute) and func.attr == "load_state_dict"
            if named and parent.args[:1] == [value]:
                return True
        elif isinstance(parent, ast.Assign) and parent.value is value:
            for target in parent.targets:
                todo += _reads(target, ctx)
    return False


def _reads(target: ast.expr, ctx: Context) -> list[ast.AST]:
    """The reads of an assignment's target: a name's in its scope; ``self.x``'s in the
    function holding the assignment."""
    scopes = ctx.scopes
    if isinstance(target, ast.Name):
        return [
            read
            for binding in scopes.bindings(target.id, target)
            for read in scopes.reads_of(binding.name, binding.scope)
        ]
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
        return []
    holder: ast.AST | None = target
    while holder is not None and not isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef)):
        holder = scopes.parent(holder)
    if holder is None:
        return []
    owner, attr = target.value.id, target.attr
    return [
        node
        for node in ast.walk(holder)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == owner
    ]

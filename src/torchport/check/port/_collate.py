"""A loader's ``collate_fn`` of the file: whether its batches are objects, with or without ``.to``.

Objects from a custom ``collate_fn`` with no ``.to`` cannot be moved whole and are
reported; objects of a class of the file that has ``.to`` are moved by it.
"""

from __future__ import annotations

import ast
import weakref

from torchport.check._context import Context
from torchport.check.port._calls import api_cpu_arguments
from torchport.check.port._facts import PortFacts, PortScope

__all__ = ["call_name", "collate_returning", "cpu_keys"]


_DATALOADER = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")


def call_name(call: ast.Call) -> str:
    """The name a call is spelled with: ``f`` of ``f(x)``, ``m`` of ``obj.m(x)``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def collate_returning(
    facts: PortFacts,
    ctx: Context,
    loop: ast.For | ast.AsyncFor,
    scope: PortScope,
    *,
    with_to: bool,
) -> str | None:
    """The collate_fn of the loop's DataLoader when it returns objects of a class of the
    file with (``with_to``) or without a ``.to`` method; None otherwise."""
    it = loop.iter
    while isinstance(it, ast.Call) and it.args and call_name(it) in {"enumerate", "tqdm"}:
        it = it.args[0]
    if not isinstance(it, ast.Name):
        return None
    for where in (scope, facts.module):
        for value in where.values_of(it.id):
            if not isinstance(value, ast.Call) or ctx.qualname(value.func) not in _DATALOADER:
                continue
            collate = next((k.value for k in value.keywords if k.arg == "collate_fn"), None)
            func = facts.functions.get(getattr(collate, "id", ""))
            if func is not None and _returns_objects(facts, func, with_to=with_to):
                return func.name
    return None


def _returns_objects(
    facts: PortFacts, func: ast.FunctionDef | ast.AsyncFunctionDef, *, with_to: bool
) -> bool:
    classes = facts.known.classdefs
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            cls = classes.get(call_name(node.value))
            has_to = cls is not None and any(
                isinstance(m, ast.FunctionDef) and m.name == "to" for m in cls.body
            )
            if cls is not None and has_to is with_to:
                return True
    return False


def cpu_keys(batch: str, ctx: Context) -> list[str]:
    """Keys of a dict batch that the file hands to an API wanting them on the CPU.

    ``pack_padded_sequence(batch["x"], batch["lengths"])``: a collate function's
    ``lengths`` must stay on the CPU (the call raises for device lengths), so the
    port's move of the batch leaves that key where it is. Every batch's keys are
    found in one pass over the file's calls (asked per batch move: a walk of the
    module for each was quadratic in the moves).
    """
    every = _CPU_KEYS.get(ctx)
    if every is None:
        every = _CPU_KEYS[ctx] = _every_cpu_key(ctx)
    return list(every.get(batch, ()))


_CPU_KEYS: weakref.WeakKeyDictionary[Context, dict[str, list[str]]] = weakref.WeakKeyDictionary()


def _every_cpu_key(ctx: Context) -> dict[str, list[str]]:
    """Batch name -> its keys given to a CPU-wanting argument, in ``ast.walk`` order.

    Also through one call of the file's own function or model: ``model(batch["ids"],
    batch["lengths"])`` (or ``model(**batch)``) where ``forward(self, ids, lengths)``
    hands ``lengths`` to ``pack_padded_sequence``.
    """
    found: dict[str, list[str]] = {}
    params: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, int, str]] = []
    for node in ctx.scopes.nodes_of(ast.Call):
        assert isinstance(node, ast.Call)
        for _, given in api_cpu_arguments(node, ctx):
            if (key := _batch_key(given)) is not None:
                _add(found, *key)
            elif isinstance(given, ast.Name):
                param = _parameter(given, ctx)
                if param is not None:
                    params.append(param)
    if params:
        _through_calls(params, found, ctx)
    return found


def _add(found: dict[str, list[str]], batch: str, key: str) -> None:
    keys = found.setdefault(batch, [])
    if key not in keys:
        keys.append(key)


def _parameter(
    name: ast.Name, ctx: Context
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int, str] | None:
    """``(function, position among the caller's arguments, name)`` when ``name`` is a
    parameter of its function (``self`` of a method not counted), else None."""
    func = ctx.scopes.parent(name)
    while func is not None and not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        func = ctx.scopes.parent(func)
    if func is None:
        return None
    args = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    if isinstance(ctx.scopes.parent(func), ast.ClassDef) and args:
        args = args[1:]
    if name.id in args:
        return func, args.index(name.id), name.id
    if name.id in (a.arg for a in func.args.kwonlyargs):
        return func, -1, name.id
    return None


def _through_calls(
    params: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, int, str]],
    found: dict[str, list[str]],
    ctx: Context,
) -> None:
    """Keys handed, at a CPU parameter's place, to a call of its function or model."""
    from torchport.check.port._facts import port_facts  # on first use

    facts = port_facts(ctx)
    for node in ctx.scopes.nodes_of(ast.Call):
        assert isinstance(node, ast.Call)
        name = call_name(node)
        for func, index, param in params:
            if func.name == "forward":
                scope = facts.scope_of.get(id(node)) or facts.module
                if not facts.forward(node, scope):
                    continue
            elif name != func.name:
                continue
            given = _argument(node, index, param)
            if (key := _batch_key(given)) is not None:
                _add(found, *key)
            for k in node.keywords:
                if k.arg is None and isinstance(k.value, ast.Name):  # `model(**batch)`
                    _add(found, k.value.id, param)


def _argument(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    """What ``call`` passes as its parameter ``keyword``, by name or at ``index``."""
    given = next((k.value for k in call.keywords if k.arg == keyword), None)
    if given is None and 0 <= index < len(call.args):
        given = call.args[index]
    return given


def _batch_key(given: ast.expr | None) -> tuple[str, str] | None:
    """``(batch, key)`` for ``batch["key"]``; None for anything else."""
    if (
        isinstance(given, ast.Subscript)
        and isinstance(given.value, ast.Name)
        and isinstance(given.slice, ast.Constant)
        and isinstance(given.slice.value, str)
    ):
        return given.value.id, given.slice.value
    return None

"""Model classes kept in a registry the file fills: reads of it TP523 reports.

``@register("net") class Net(nn.Module)`` with ``def register(name): def deco(cls):
REGISTRY[name] = cls ...``, then ``model = REGISTRY[name]()``: which class an item read
gives, only a run tells (a key the code computes, a decorator applied in an order), so the
port left the model and its input on the CPU, "moved nothing" and said nothing (x31an). A
*registry* is a module-level name whose item the file stores a model class of its own into
(``MODELS["net"] = Net``), or its parameter into inside a function that decorates a model
class of the file (the registering decorator), or a module-level dict literal holding a model
class that the file changes after (``MODELS.update(net=Other)``: ``_lambda_factories`` no
longer reads the literal's class then, nor ``_models.registries`` places its reads), or
``globals()`` where the file writes it (``globals()["Net"] = Other``). :func:`registry_reads`
gives each read of one of its items (``REGISTRY[k]``, ``REGISTRY.get(k)``) the code does not
place itself (``.to(...)``), and no read ``_lambda_factories.spelled_factories`` follows
(``Net = MODELS["net"]`` of an unchanged literal: placed).
"""

from __future__ import annotations

import ast

from torchport.check.port._lambda_factories import globals_written
from torchport.check.port._models import changed_after

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = ["registry_reads"]

_MOVES = frozenset({"to", "cuda"})
_READS = frozenset({"get", "__getitem__", "pop"})


def _item_target(node: ast.AST) -> str | None:
    """``R`` of an item store ``R[...] = ...`` target, or of ``R.update``/``R.setdefault``/
    ``R.__setitem__`` called, else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return node.value.id
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.attr in ("update", "setdefault", "__setitem__")
    ):
        return node.value.id
    return None


def _stored(node: ast.AST) -> list[tuple[str, list[ast.expr]]]:
    """``(R, the values stored)`` for an item store or a filling call of ``R``."""
    if isinstance(node, ast.Assign):
        return [(r, [node.value]) for t in node.targets if (r := _item_target(t)) is not None]
    if isinstance(node, ast.Call) and (r := _item_target(node.func)) is not None:
        values = [*node.args, *(k.value for k in node.keywords)]
        values += [v for a in node.args if isinstance(a, ast.Dict) for v in a.values]
        return [(r, values)]
    return []


def _registries(facts: PortFacts) -> set[str]:
    tree, models = facts.ctx.tree, facts.known.classes
    module = {n for s in tree.body if isinstance(s, ast.Assign) for t in s.targets
              for n in ([t.id] if isinstance(t, ast.Name) else [])}  # fmt: skip
    decorators: set[str] = set()
    for cls in (s for s in ast.walk(tree) if isinstance(s, ast.ClassDef) and s.name in models):
        for deco in cls.decorator_list:
            root = deco.func if isinstance(deco, ast.Call) else deco
            if isinstance(root, ast.Name):
                decorators.add(root.id)
    found: set[str] = set()
    for node in ast.walk(tree):
        for registry, values in _stored(node):
            if registry in module and any(
                isinstance(v, ast.Name) and v.id in models for v in values
            ):
                found.add(registry)
    for func in (f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name in decorators):
        inner = [f for f in ast.walk(func) if isinstance(f, (ast.FunctionDef, ast.Lambda))]
        params = {a.arg for f in inner for a in (*f.args.posonlyargs, *f.args.args)}
        for node in ast.walk(func):
            for registry, values in _stored(node):
                if registry in module and any(
                    isinstance(v, ast.Name) and v.id in params for v in values
                ):
                    found.add(registry)
    for stmt in tree.body:  # a literal holding a model class, changed after
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict):
            held = any(isinstance(v, ast.Name) and v.id in models for v in stmt.value.values)
            for target in stmt.targets:
                if held and isinstance(target, ast.Name) and changed_after(tree, target.id):
                    found.add(target.id)
    return found


def registry_reads(facts: PortFacts) -> list[ast.expr]:
    """Each read of a registry's item the module docstring says TP523 reports."""
    if not facts.known.classes:
        return []
    registries = _registries(facts)
    tree = facts.ctx.tree
    written = globals_written(tree)  # `globals()["Net"] = Other` (q31am): a registry too
    if not registries and not written:
        return []
    placed: set[int] = set()  # `R[k]().to(device)`, `R[k].to(...)`
    followed: set[int] = set()  # `Net = MODELS["net"]`: a spelled factory, placed
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _MOVES:
            inner = node.value.func if isinstance(node.value, ast.Call) else node.value
            placed.add(id(inner))
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in facts.known.spelled
        ):
            followed.add(id(node.value))
    reads: list[ast.expr] = []
    for node in ast.walk(tree):
        read: ast.expr | None = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            table = node.value
            if (isinstance(table, ast.Name) and table.id in registries) or (
                written
                and isinstance(table, ast.Call)
                and isinstance(table.func, ast.Name)
                and table.func.id == "globals"
                and isinstance(node.slice, ast.Constant)  # (a computed key: dynamic_calls)
            ):
                read = node
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _READS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in registries
        ):
            read = node
        if read is not None and id(read) not in placed and id(read) not in followed:
            reads.append(read)
    return sorted(reads, key=lambda n: (n.lineno, n.col_offset))

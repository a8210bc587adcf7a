"""What a context manager of the file gives its ``with`` target, handed a device value: TP523.

``@contextlib.contextmanager def pair(t): yield torch.ones(2, 2), t`` (or a class whose
``__enter__`` returns such a pair), then ``with pair(model(x)) as (c, d): d @ c``: a ``with``
target's kind is its context expression's (``_kinds``: ``with open(p) as f``), what the manager
yields is not followed, so neither ``c`` nor ``d`` was known to meet the model and the port
said "0 left" with ``c`` on the CPU (x31an). :func:`entered_device_values` gives each ``with``
target of such a manager of the file that is handed a device value: what it gives back may
hold that value beside a host tensor, which the port cannot tell apart.
"""

from __future__ import annotations

import ast

from torchport.check.port._value_kind import Kind

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

    from torchport.check.port._facts import PortFacts

__all__ = ["entered_device_values"]

_MANAGERS = frozenset({"contextlib.contextmanager", "contextlib.asynccontextmanager"})


def _own_managers(facts: PortFacts) -> set[str]:
    """The names of the file's module-level context managers: a decorated generator function,
    a class defining ``__enter__``/``__aenter__``."""
    found: set[str] = set()
    for stmt in facts.ctx.tree.body:
        if (
            isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(facts.ctx.qualname(d) in _MANAGERS for d in stmt.decorator_list)
        ) or (
            isinstance(stmt, ast.ClassDef)
            and any(
                isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                and s.name in ("__enter__", "__aenter__")
                for s in stmt.body
            )
        ):
            found.add(stmt.name)
    return found


def entered_device_values(facts: PortFacts, kind_of: Callable[[ast.expr], Kind]) -> list[ast.expr]:
    """Each ``with`` target the module docstring says TP523 reports."""
    managers = _own_managers(facts)
    if not managers:
        return []
    found: list[ast.expr] = []
    for node in ast.walk(facts.ctx.tree):
        if not isinstance(node, (ast.With, ast.AsyncWith)):
            continue
        for item in node.items:
            call, target = item.context_expr, item.optional_vars
            if (
                target is not None
                and isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id in managers
                and any(
                    kind_of(a) is Kind.DEVICE
                    for a in (*call.args, *(k.value for k in call.keywords))
                    if not isinstance(a, ast.Starred)
                )
            ):
                found.append(target)
    return found

"""What a TP109 branch names, read apart from what it only shows or restores: ``shown_apart``.

A saved CUDA RNG state restored under a CUDA test, ``if "cuda" in state and
torch.cuda.is_available(): torch.cuda.set_rng_state_all(state["cuda"])`` (held-out sample AG,
a JEPA trainer's ``restore_rng``, judged noise), picks no device: the ``"cuda"`` index reads
the saved state's entry, and ``set_rng_state``/``set_rng_state_all`` restore generators
(``_cuda_choice._RNG_STATE``: seeding's kin). So, for TP109 alone (``records``), the state
those two calls are given (their first positional argument, or ``new_state=``/
``new_states=``) is read apart, as a record's key is (``semantic._devices.record_key``). Their
``device=`` argument, an index read anywhere else (``x.to(devices["cuda"])``), and a call of
another name (a module's own ``set_rng_state_all``, ``torch.cuda.set_device``) keep naming CUDA.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.semantic._devices import prints_or_logs, record_key

__all__ = ["shown_apart"]

_RESTORES = frozenset({"torch.cuda.set_rng_state", "torch.cuda.set_rng_state_all"})
_STATE_KEYWORDS = frozenset({"new_state", "new_states"})


def shown_apart(part: ast.AST, records: bool, ctx: Context) -> list[ast.AST]:
    """The nodes of ``part`` but what is only printed or logged and, with ``records``, a
    record's keys and the state a CUDA RNG state restore is given."""
    restores = records and ctx.mentions("set_rng_state")
    found: list[ast.AST] = []
    stack = [part]
    while stack:
        node = stack.pop()
        if prints_or_logs(node):
            continue
        found.append(node)
        state = _restored_state(node, ctx) if restores else None
        stack.extend(
            c
            for c in ast.iter_child_nodes(node)
            if c is not state and not (records and record_key(node, c))
        )
    return found


def _restored_state(node: ast.AST, ctx: Context) -> ast.AST | None:
    """The state argument (an expression, or its ``keyword``) of torch's
    ``torch.cuda.set_rng_state(_all)`` call ``node``; None for any other node."""
    if not isinstance(node, ast.Call) or ctx.qualname(node.func) not in _RESTORES:
        return None
    if node.args:
        return None if isinstance(node.args[0], ast.Starred) else node.args[0]
    return next((k for k in node.keywords if k.arg in _STATE_KEYWORDS), None)

"""CUDA-or-CPU choices where those two are all the devices the program can use, for TP109.

* A choice whose every use is another library's device (``_foreign_devices``: CTranslate2,
  ONNX Runtime, ...): not torch's.
* A module that imports Horovod (``_cuda_choice.serves_horovod``): its collectives take CPU
  or CUDA tensors only.
* A choice whose device places models or tensors that the same module shares with worker
  processes (sample W's class W1, issue 34: Popular-RL-Algorithms' ``td3_multiprocess.py``
  and ``ppo_continuous_multiprocess2.py``, judged low (f)). ``torch.multiprocessing`` shares
  CPU tensors through shared memory and CUDA tensors through CUDA IPC, and nothing else:
  ``Tensor.share_memory_()`` leaves any other device's storage where it is, and pickling one
  for a worker (``multiprocessing/reductions.py``, ``reduce_storage``) calls
  ``_share_filename_cpu_``/``_share_fd_cpu_`` on it, which only a CPU storage has. An MPS or
  XPU pick there would not run, so the advice changes nothing.

The choice's device must reach what is shared, in the same module: the choice is bound to a
plain name ``N`` (``device = torch.device("cuda" if ... else "cpu")``); a value is *placed*
where an assignment's value, or a statement of its own, calls ``.to(N)`` (``N`` as the
first argument or ``device=N``): ``self.actor = Policy(...).to(N)``, ``model.to(N)``; and a
placed value is *shared* where a name or attribute of the same last name (``ppo.actor``,
``model``) is the receiver of ``.share_memory()``/``.share_memory_()``, or an item of the
``args`` of a ``Process(...)`` of ``multiprocessing`` or ``torch.multiprocessing``, or of
``torch.multiprocessing.spawn``/``start_processes``. A module that only imports
multiprocessing (a DataLoader's ``num_workers=mp.cpu_count()``, pytorch-vqvae's ``vqvae.py``,
sample W, real), shares values the choice never placed, or uses a choice not bound to a name,
stays reported.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.rules._cuda_choice import NOT_TORCH, serves_horovod

__all__ = ["only_cpu_or_cuda"]


def only_cpu_or_cuda(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """Whether the choice at ``node`` picks between all the devices the module can use."""
    if serves_horovod(ctx) or _shares_with_workers(node, ctx):
        return True
    if not isinstance(node, ast.IfExp) or not any(m in ctx.source for m in NOT_TORCH):
        return False  # a cheap look first
    from torchport.check.rules._foreign_devices import only_foreign_uses  # on first use

    return only_foreign_uses(node, ctx, NOT_TORCH)


_SHARE = frozenset({"share_memory", "share_memory_"})
_PROCESSES = frozenset(
    {
        "multiprocessing.Process",
        "multiprocessing.context.Process",
        "torch.multiprocessing.Process",
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "torch.multiprocessing.spawn.spawn",
        "torch.multiprocessing.spawn.start_processes",
    }
)


def _shares_with_workers(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    if not any(word in ctx.source for word in ("share_memory", "Process", "spawn")):
        return False  # a cheap look first: no sharing named at all
    name = _bound_name(node, ctx)
    if name is None:
        return False
    key = f"cpu_or_cuda_only.shared.{name}"
    found = ctx.memo.get(key)
    if not isinstance(found, bool):
        placed = _placed(ctx.tree, name)
        found = ctx.memo[key] = bool(placed) and _shared(ctx, placed)
    return found


def _bound_name(node: ast.If | ast.IfExp, ctx: Context) -> str | None:
    """The plain name the choice is bound to (``N = <choice>``, ``N = torch.device(<choice>)``)."""
    if not isinstance(node, ast.IfExp):
        return None
    chain = ctx.ancestors
    i = len(chain) - 1
    while i >= 0 and isinstance(chain[i], ast.Call):
        i -= 1  # `torch.device(<choice>)`
    if i < 0:
        return None
    stmt = chain[i]
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target: ast.expr = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        target = stmt.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def _last_name(expr: ast.expr) -> str | None:
    """``model`` -> ``model``; ``ppo.actor`` -> ``actor``; anything else -> None."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def _moves_to(call: ast.Call, name: str) -> bool:
    """``x.to(N)``, ``x.to(N, ...)`` or ``x.to(device=N)``."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "to"):
        return False
    given = [*call.args[:1], *(kw.value for kw in call.keywords if kw.arg == "device")]
    return any(isinstance(arg, ast.Name) and arg.id == name for arg in given)


def _placed(tree: ast.Module, name: str) -> frozenset[str]:
    """The last names of the values the module places on ``name`` (above)."""
    placed: set[str] = set()
    for stmt in ast.walk(tree):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(
                isinstance(sub, ast.Call) and _moves_to(sub, name) for sub in ast.walk(stmt.value)
            ):
                placed.update(n for n in map(_last_name, targets) if n is not None)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if _moves_to(call, name) and isinstance(call.func, ast.Attribute):
                receiver = _last_name(call.func.value)
                if receiver is not None:
                    placed.add(receiver)
    placed.discard(name)
    return frozenset(placed)


def _shared(ctx: Context, placed: frozenset[str]) -> bool:
    """Whether a placed value is shared with worker processes (above)."""
    for call in ast.walk(ctx.tree):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _SHARE and not call.args:
            if _last_name(func.value) in placed:
                return True
            continue
        if ctx.qualname(func) not in _PROCESSES:
            continue
        given = [kw.value for kw in call.keywords if kw.arg == "args"]
        items = [i for g in given if isinstance(g, (ast.Tuple, ast.List)) for i in g.elts]
        if any(_last_name(item) in placed for item in items):
            return True
    return False

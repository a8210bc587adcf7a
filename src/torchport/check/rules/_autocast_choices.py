"""A CUDA-or-CPU test that picks a mixed-precision context, not a device, for TP109.

``torch.autocast("cuda", dtype=torch.bfloat16) if str(device).startswith("cuda") and
torch.cuda.is_available() else nullcontext()`` (held-out sample AF's N3, cosmos_distillation's
``run_generation``, judged noise): the arm taken on CUDA is torch's autocast with the device
type ``"cuda"`` and nothing else naming CUDA; the other arm is ``contextlib.nullcontext()``
with no argument. Either way the work stays on the device chosen elsewhere: nothing is placed
and nothing falls back to the CPU, so the choice TP109 speaks of is not made here (whether the
autocast should follow that device is TP113's subject, not this rule's).

The same as a statement (held-out sample AH's snake-dqn ``h100_apex_v1.py``, two rows judged
noise): ``if <CUDA test>:`` whose body is one ``with`` of torch's autocast on ``"cuda"`` (as
above) over work naming no CUDA, with no ``else`` or an ``else`` running the very same
statements without it (:func:`only_enters_autocast`): either way the same work runs on the
device chosen elsewhere. An ``else`` doing anything else (``model.cpu()``, other work), a
``with`` of anything besides its autocast, or CUDA named in its body keeps the finding.

Kept: any other second arm (``torch.autocast("cpu")``, ``"cpu"``, ``nullcontext(value)``), an
autocast whose other arguments name CUDA, a callee that is not torch's autocast (a function of
the module named ``autocast``), and a device string in the CUDA arm (``"cuda" if ... else
nullcontext()``).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import cuda_string
from torchport.check.rules._cuda_choice import moves_to_cuda

__all__ = ["only_enters_autocast", "only_picks_autocast"]

_AUTOCASTS = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
_NULL = "contextlib.nullcontext"


def only_picks_autocast(node: ast.IfExp, ctx: Context) -> bool:
    """Whether ``node`` is ``<torch's autocast on "cuda"> if ... else nullcontext()``."""
    body, other = node.body, node.orelse
    if not (isinstance(body, ast.Call) and isinstance(other, ast.Call)):
        return False
    if other.args or other.keywords or ctx.qualname(other.func) != _NULL:
        return False
    return _cuda_autocast(body, node.test, ctx)


def only_enters_autocast(node: ast.If, ctx: Context) -> bool:
    """Whether ``node`` is ``if ...:`` over one ``with <torch's autocast on "cuda">:`` whose
    work names no CUDA, with no ``else`` or one running the same statements."""
    if len(node.body) != 1 or not isinstance(node.body[0], ast.With):
        return False
    block = node.body[0]
    if len(block.items) != 1 or not isinstance(block.items[0].context_expr, ast.Call):
        return False
    if not _cuda_autocast(block.items[0].context_expr, node.test, ctx):
        return False
    same = [ast.dump(s) for s in block.body] == [ast.dump(s) for s in node.orelse]
    if node.orelse and not same:
        return False  # the other branch does something else: it may pick the CPU
    return not moves_to_cuda(ast.If(test=node.test, body=block.body, orelse=[]), ctx)


def _cuda_autocast(body: ast.Call, test: ast.expr, ctx: Context) -> bool:
    """Whether ``body`` is torch's autocast on ``"cuda"`` with nothing else naming CUDA."""
    if ctx.qualname(body.func) not in _AUTOCASTS:
        return False
    device = [k.value for k in body.keywords if k.arg == "device_type"] or body.args[:1]
    if not (device and isinstance(device[0], ast.Constant) and cuda_string(device[0])):
        return False
    rest = [a for a in body.args if a is not device[0]]
    rest += [k.value for k in body.keywords if k.value is not device[0]]
    if any(isinstance(a, ast.Starred) for a in rest) or any(k.arg is None for k in body.keywords):
        return False  # `*args`, `**kwargs`: what they hold is unknown
    # The other arguments name no CUDA (`enabled=x.cuda() is not None` keeps the finding).
    probe = ast.IfExp(
        test=test, body=ast.Tuple(elts=rest, ctx=ast.Load()), orelse=ast.Constant(None)
    )
    return not moves_to_cuda(probe, ctx)

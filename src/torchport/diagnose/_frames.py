"""Whose code a stack frame runs, as the audit needs to know it.

:mod:`torchport._origin` answers for every part: the user's, torch's, torchport's or
installed code. The audit needs three finer answers about torch's own frames, decided
here once per code object (the recorder caches them):

* **host bookkeeping**: torch code that reads tensors living on the host by design on
  every machine (optimizer step counters, ``torch.utils.data``'s permutations and
  seeds); which of its reads are such is decided per tensor in :mod:`._loading`
  (an optimizer's step also reads the loss, norms, state on the device);
* **module moves**: the per-tensor functions ``Module.to``/``.cpu`` apply, whose no-op
  moves on a CPU run predict a copy on an accelerator;
* **the audit's machinery**: ``__torch_function__`` dispatch and the Python-defined
  tensor methods the audit wraps, which sit between the caller and the watcher.
"""

from __future__ import annotations

import inspect
import os
from types import CodeType

import torch
from torch import nn

from torchport._origin import TORCH_DIR, TORCHPORT_DIR, is_installed
from torchport.diagnose import _ops

__all__ = [
    "HOST_SIDE",
    "INSTALLED",
    "MODULE_MOVE",
    "MODULE_MOVES",
    "OWN",
    "TORCH",
    "USER",
    "frame_origin",
    "module_move_codes",
]

USER, TORCH, HOST_SIDE, OWN, MODULE_MOVE, INSTALLED = 0, 1, 2, 3, 4, 5

# Torch code that reads tensors living on the host by design, on every machine: the
# optimizers' step counters (unless capturable/fused; _loading.is_host_state tells them
# from the other reads of a step) and the data loading machinery (sampler
# permutations, worker seeds, collation). The learning-rate
# schedulers are not: ReduceLROnPlateau.step(loss) reads the user's loss, on the
# device in a GPU run.
_HOST_SIDE_DIRS = tuple(
    os.path.join(TORCH_DIR, *parts) + os.sep for parts in (("optim",), ("utils", "data"))
)
_USER_READS_IN_TORCH = frozenset(
    {
        os.path.join(TORCH_DIR, "optim", "lr_scheduler.py"),
        os.path.join(TORCH_DIR, "optim", "swa_utils.py"),
    }
)


# The functions nn.Module.to() and .cpu() apply to each parameter and buffer: a move
# of the model, so on a CPU run their per-tensor no-op .to() predicts a real copy.
# Other torch code's .to() of host tensors (clip_grad_norm_'s norms) predicts none.
# Found through inspect.unwrap: torchport.redirect may have patched Module.to over
# the original by the time this module is imported (`torchport run`).
def module_move_codes() -> frozenset[CodeType]:
    """The code objects of the per-tensor functions ``Module.to``/``.cpu`` apply."""
    return frozenset(
        const
        for method in (nn.Module.to, nn.Module.cpu)
        for const in inspect.unwrap(method).__code__.co_consts
        if isinstance(const, CodeType)
    )


MODULE_MOVES = module_move_codes()


# Frames between the caller and a watcher that belong to the call itself: the
# dispatch of __torch_function__ and the Python-defined tensor methods it wraps.
_MACHINERY = frozenset(
    code
    for code in (
        getattr(torch.overrides.handle_torch_function, "__code__", None),
        getattr(torch._ops.OpOverload.__call__, "__code__", None),
        *(getattr(f, "__code__", None) for f in _ops.watched_methods()),
    )
    if code is not None
)


def frame_origin(code: CodeType) -> int:
    """Which of :data:`USER`, :data:`TORCH`, :data:`HOST_SIDE`, :data:`OWN`,
    :data:`MODULE_MOVE` or :data:`INSTALLED` a code object is."""
    name = code.co_filename
    if name.startswith(TORCHPORT_DIR) or code in _MACHINERY:
        return OWN
    if code in MODULE_MOVES:
        return MODULE_MOVE
    if name.startswith(_HOST_SIDE_DIRS) and name not in _USER_READS_IN_TORCH:
        return HOST_SIDE
    if name.startswith(TORCH_DIR):
        return TORCH
    return INSTALLED if is_installed(name) else USER

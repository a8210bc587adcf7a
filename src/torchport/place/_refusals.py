"""What a batch may not hold, and what to do instead: ``to_device``'s refusals.

Modules, optimizers, LR schedulers and ``GradScaler``s hold training state that has
its own rules, iterators without state of their own (generators, ``map``,
``zip``, a list's iterator) yield items that exist only once iterated, and storages
and random generators hold bytes or state outside any tensor that cannot be copied
to another device as a tensor is (a storage's ``.to`` makes a storage no tensor of
the batch views; a generator's state belongs to its device); the walker
(``place/_tree.py``) and ``to_device`` refuse them with a message saying what to do.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

from torchport.hardware import GRAD_SCALER, LR_SCHEDULER_BASES
from torchport.place._copying import has_state

__all__ = ["refusal"]

_HOST_STATE = (torch.UntypedStorage, torch.TypedStorage, torch.Generator)


def refusal(cls: type, where: str, device: str | None) -> str | None:
    """Why ``to_device`` refuses an object of type ``cls`` at ``where``, and what to do; or None.

    Args:
        cls: The object's type.
        where: Its path in the batch (``batch['model']``), or ``"the object"``.
        device: The target, for the advice (``None``: written as ``device``).
    """
    name = cls.__name__
    if device is None:
        return _refusal(cls, name, where, "device", "device.type")
    return _refusal(cls, name, where, repr(device), repr(device.split(":")[0]))


def _refusal(cls: type, name: str, where: str, device: str, kind: str) -> str | None:
    if issubclass(cls, Iterator) and not has_state(cls):
        return (
            f"{where} is an iterator ({name}): what it yields is made or read only when "
            "it is iterated, so to_device cannot move it and would hand it back with "
            "its tensors where they are; turn it into a list first (list(it)), or "
            "keep it out of the batch"
        )
    if issubclass(cls, nn.Module):
        return (
            f"{where} is a module ({name}), which to_device moves in place, so it cannot "
            f"be part of a batch that is copied; move it on its own with "
            f"tp.to_device(module, {device}) (it keeps its Parameter objects) and keep "
            "it out of the batch, or pass the key it is under in skip_keys"
        )
    if issubclass(cls, torch.optim.Optimizer):
        return (
            f"{where} is an optimizer ({name}), whose state must follow its parameters; "
            f"move the model first, then the optimizer on its own with "
            f"tp.to_device(optimizer, {device}), and keep it out of the batch"
        )
    if issubclass(cls, LR_SCHEDULER_BASES):
        return (
            f"{where} is an LR scheduler ({name}); it holds no tensors of its own, only "
            "its optimizer's learning rates, so there is nothing to move: move the "
            f"optimizer (tp.to_device(optimizer, {device}), after the model) and keep "
            "using the same scheduler"
        )
    if issubclass(cls, GRAD_SCALER):
        return (
            f"{where} is a GradScaler ({name}): its device is fixed when it is built and "
            "its scale lives on the device of the first outputs it scales, so it cannot "
            f"be moved; build it for the device, torch.amp.GradScaler({kind}), "
            "and to carry its state over call new.load_state_dict(old.state_dict())"
        )
    if issubclass(cls, _HOST_STATE):  # one test on the common path (an own-.to object)
        if issubclass(cls, torch.Generator):
            return (
                f"{where} is a random generator ({name}): its state belongs to the device "
                "it was made for and cannot be copied to another, so to_device would hand "
                f"it back where it is; make one for the target (torch.Generator({kind}) "
                "and seed it), or keep it out of the batch (or pass its key in skip_keys)"
            )
        return (
            f"{where} is a storage ({name}): to_device moves tensors, and a storage "
            "holds its bytes outside any tensor, so it would be handed back where it "
            "is; hold a tensor over it instead (torch.empty(0).set_(storage)) and move "
            "that, or keep it out of the batch (or pass its key in skip_keys)"
        )
    return None

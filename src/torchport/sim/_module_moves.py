"""Module moves onto the simulated device: the parameters keep their identity, as on CUDA.

``model.cuda()`` keeps each Parameter object and gives it the device's values
(``Module._apply`` assigns ``param.data``, since a CPU and a CUDA tensor are of
one tensor type). A simulated tensor is another type, so ``_apply`` swaps the
two tensor objects instead (``torch.utils.swap_tensors``), and that swap refuses
a parameter held inside an autograd graph, which ``param.data =`` never minds:
``torch.nn.utils.weight_norm`` computes ``weight`` from ``weight_g`` and
``weight_v`` when it is applied, so every such module's move raised
"Couldn't swap Conv1d.weight_g" on ``sim`` and moved on CUDA.

While a module moves (inside ``Module._apply``, unless the user asked for
swapping with ``torch.__future__.set_swap_module_params_on_conversion(True)``,
which refuses the same way on CUDA), a swap whose new tensor is on ``sim`` (a
move onto it, or a dtype change there: ``model.half()``) therefore goes ahead
whatever else holds the old tensor. What held it (the
graph) keeps the old values, as its old tensor; its gradient node is poisoned,
as ``swap_tensors`` poisons it, so a backward through a graph built before the
move raises instead of accumulating into the moved parameter. Every other swap
is torch's own.
"""

from __future__ import annotations

import copyreg
import functools
import threading
import weakref
from typing import Any

import torch

from torchport.sim._tensor import SimTensor

__all__ = ["install_module_moves"]

_moving = threading.local()


def _depth() -> int:
    depth: int = getattr(_moving, "depth", 0)
    return depth


def _poisoned(grad_outputs: Any) -> Any:
    raise RuntimeError(
        "backward reached a parameter through a graph built before its module moved to the "
        "simulated device (torchport); run forward again after .to(device), as on CUDA"
    )


def _swap_onto_device(t1: torch.Tensor, t2: torch.Tensor) -> None:
    """``torch.utils.swap_tensors(t1, t2)`` without its refusal of a ``t1`` held elsewhere."""
    if weakref.getweakrefs(t1) or weakref.getweakrefs(t2):
        raise RuntimeError("Cannot swap a tensor that has a weakref associated with it")
    slots = set(copyreg._slotnames(t1.__class__))  # type: ignore[attr-defined]
    if slots != set(copyreg._slotnames(t2.__class__)):  # type: ignore[attr-defined]
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    if t1.is_leaf and t1.requires_grad and not t1.is_inference():
        # Its gradient node is found through a view (``view_as``), which inference mode
        # makes without one: a move under ``torch.inference_mode()`` raised here. (An
        # inference tensor, a parameter made in inference mode, has no node to poison.)
        with torch.inference_mode(False):
            torch.autograd.graph.get_gradient_edge(t1).node.register_prehook(_poisoned)
    for name in ("__class__", "__dict__"):
        held = getattr(t1, name)
        setattr(t1, name, getattr(t2, name))
        setattr(t2, name, held)
    for slot in slots:
        first, second = hasattr(t1, slot), hasattr(t2, slot)
        if first and second:
            held = getattr(t1, slot)
            setattr(t1, slot, getattr(t2, slot))
            setattr(t2, slot, held)
        elif first:
            setattr(t2, slot, getattr(t1, slot))
            delattr(t1, slot)
        elif second:
            setattr(t1, slot, getattr(t2, slot))
            delattr(t2, slot)
    torch._C._swap_tensor_impl(t1, t2)


def install_module_moves() -> None:
    """Patch ``Module._apply`` (to know a move is under way) and ``torch.utils.swap_tensors``."""
    apply: Any = torch.nn.Module._apply
    swap: Any = torch.utils.swap_tensors

    @functools.wraps(apply)
    def _apply(self: torch.nn.Module, fn: Any, recurse: bool = True) -> Any:
        _moving.depth = _depth() + 1
        try:
            return apply(self, fn, recurse)
        finally:
            _moving.depth -= 1

    @functools.wraps(swap)
    def swap_tensors(t1: torch.Tensor, t2: torch.Tensor) -> None:
        if (
            _depth()
            and isinstance(t2, SimTensor)
            and not torch.__future__.get_swap_module_params_on_conversion()
        ):
            _swap_onto_device(t1, t2)  # CUDA assigns param.data here
            return
        swap(t1, t2)

    torch.nn.Module._apply = _apply  # type: ignore[method-assign]
    torch.utils.swap_tensors = swap_tensors

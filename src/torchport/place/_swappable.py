"""Whether torch can swap a module's parameters, asked before anything moves.

A module keeps its ``Parameter`` objects when it moves because torch swaps each one
with its moved copy (``torch.utils.swap_tensors``). torch refuses the swap of a tensor
something else holds: a weak reference to it (``weakref.ref(p)``, a
``WeakKeyDictionary`` keyed by it), or a computation graph (the output of a forward
pass that has not run backward keeps the parameters it used), and it finds that
only when it reaches that parameter, after the ones before it were swapped. Asked
here first, for every parameter and gradient, such a move raises before anything
moved, naming the parameter and what holds it. (A graph held on to through
``retain_graph`` or a view of a parameter counts as a computation graph; a view of a
parameter's ``.grad`` makes torch fail on the ``.grad`` after it swapped the parameter
and let go of the ``.grad``, which would be lost.)

A lazy module's uninitialized parameter is not swapped (a swap would make it a plain
tensor); torch's conversion keeps it by setting its data in place, which it cannot do
across some moves (to ``meta``; under ``set_overwrite_module_params_on_conversion``):
there it puts a plain empty ``Parameter`` instead, and the layer is no longer lazy.
:func:`lazy_refusal` tells such a move before anything moved.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator

import torch
from torch import nn

__all__ = ["lazy_refusal", "swap_refusal", "swapping"]


# torch.__future__'s swap flag is process-wide: torchport's conversions set it one at a time.
_SWAP_LOCK = threading.RLock()  # (a conversion that moves a module again nests)


@contextlib.contextmanager
def swapping(on: bool) -> Iterator[None]:
    """Run a module conversion with torch's swap flag ``on``, then set it back.

    One such conversion at a time in the process: a swap (the move that keeps each
    Parameter) and torch's set_data conversion (lazy layers, parameters torch cannot
    swap) each need the flag their way, whatever another thread's move or the user set.
    """
    with _SWAP_LOCK:
        previous = torch.__future__.get_swap_module_params_on_conversion()
        torch.__future__.set_swap_module_params_on_conversion(on)
        try:
            yield
        finally:
            torch.__future__.set_swap_module_params_on_conversion(previous)


def swap_refusal(module: nn.Module, target: torch.device) -> str | None:
    """Why torch would refuse to swap one of ``module``'s parameters or gradients; or None.

    Mirrors the checks of ``torch.utils.swap_tensors`` without their side effects
    (torch looks up a leaf's gradient accumulator, which creates one): a weak
    reference (other than those an RNN keeps to its weights and drops before the
    swap), or more holders than the tensor's own object and its gradient accumulator.
    """
    # An RNN keeps weak references to its own weights and drops them in its _apply.
    own = {
        id(ref)
        for sub in module.modules()
        if isinstance(sub, nn.RNNBase)
        for ref in vars(sub).get("_flat_weight_refs", ())
    }
    for name, p in module.named_parameters(remove_duplicate=True):
        if any(id(ref) not in own for ref in weakref.getweakrefs(p)):
            return _message(module, name, target, "something holds a weak reference to it", _WEAK)
        if p._use_count() > (2 if p.is_leaf else 1):  # type: ignore[attr-defined]
            return _message(module, name, target, "a computation graph still holds it", _GRAPH)
        grad = p.grad
        if grad is not None and weakref.getweakrefcount(grad):
            what = "something holds a weak reference to its .grad"
            return _message(module, name, target, what, _WEAK)
        # Its parameter and this local hold it (and its gradient accumulator, for a
        # .grad that requires grad); a view of it (another parameter's .grad set to a
        # slice of it, a slice kept by the caller) is one more holder, and torch, which
        # swaps a .grad after it swapped the parameter and let go of the .grad, would
        # fail half-way and drop it.
        if grad is not None and grad._use_count() > (  # type: ignore[attr-defined]
            3 if grad.is_leaf and grad.requires_grad else 2
        ):
            what = "something else holds its .grad (a view of it)"
            return _message(module, name, target, what, _GRAD_HELD)
    return None


def lazy_refusal(
    module: nn.Module, made: dict[int, torch.Tensor], target: torch.device
) -> str | None:
    """Why torch's conversion would break one of ``module``'s lazy layers; or None.

    ``made``: the copy of each tensor about to move, by id. An uninitialized parameter
    keeps its class only where torch sets its data in place (the copy's tensor type is
    one it can take, and the overwrite flag is off).
    """
    overwrite = torch.__future__.get_overwrite_module_params_on_conversion()
    for name, p in module.named_parameters(remove_duplicate=True):
        copy = made.get(id(p))
        if not isinstance(p, nn.UninitializedParameter) or copy is None:
            continue
        if overwrite:
            why = "torch.__future__.set_overwrite_module_params_on_conversion(True) is in force"
        elif not torch._has_compatible_shallow_copy_type(p, copy):
            why = f"torch cannot set its data in place from {p.device.type} to {target.type}"
        else:
            continue
        return (
            f"to_device({type(module).__name__}, {str(target)!r}): parameter {name!r} belongs "
            f"to a lazy layer and is not initialized yet; {why}, so torch's conversion would "
            "put a plain empty Parameter in its place and the layer would no longer be lazy; "
            "run one forward pass on a sample batch first (it initializes the lazy layers), "
            "or build the model where it will run. Nothing was moved"
        )
    return None


_WEAK = (
    "drop that reference before the move (or take it after), or move the model with "
    "model.to(device), which gives it new Parameter objects (then build the optimizer "
    "after the move)"
)
_GRAD_HELD = (
    "let go of what views the .grad (another parameter's .grad set to a slice of it, a "
    "slice kept elsewhere), or clear the gradients first (model.zero_grad(), which sets "
    "them to None)"
)
_GRAPH = (
    "run backward on the outputs of the last forward pass, or let them go (del loss, "
    "or .detach() what you keep), before moving the model; torch cannot swap a "
    "parameter a graph still uses"
)


def _message(module: nn.Module, name: str, target: torch.device, why: str, advice: str) -> str:
    return (
        f"to_device({type(module).__name__}, {str(target)!r}): parameter {name!r} cannot "
        f"keep its identity: {why}, so torch refuses to swap it with its moved copy; "
        f"{advice}. Nothing was moved"
    )

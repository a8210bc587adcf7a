"""Where the accelerator run holds a tensor, as far as a CPU run can tell.

A CPU run keeps every tensor on the host, so the audit follows the few facts it can
see about where the same tensors sit in the accelerator run:

* **Tensors a predicted move sent to the device** (:class:`Placement`). A module
  move (``model.to(device)``) sends each parameter and buffer there; a second move
  the same way, or a tied weight met again, copies nothing. ``x.to(device)`` sends a
  batch there; a library moving that same tensor again
  (``attention_mask.to(device=...)`` in transformers) copies nothing. Loading a state
  dict after the move (``model.load_state_dict(checkpoint)``,
  ``optimizer.load_state_dict(...)``) copies each value from the host to the
  device, unless it came from tensors a move sent there.
* **A copy to the host on one line** (:func:`copied_to_host`, :func:`spread`). The
  line's reads of the copy, and of what the line computes from it
  (``(pred.cpu() == y.cpu()).sum().item()``), are part of that copy, not syncs of
  their own; a read of another tensor on the same line (``loss.item()``) is one.

* **Checkpoints** (:func:`tensors_in`). ``torch.save`` of tensors on the device copies
  each of their storages to the host (a model's, the state of optimizers whose
  parameters are there); ``torch.load(..., map_location=device)`` copies what it loads
  to the device. A checkpoint loaded without a ``map_location`` goes where it was
  saved from, which a CPU run cannot know: it is not predicted.

Everything else a CPU run cannot place (a tensor created with ``device=device``
looks like one created on the host), and the audit treats it as the device's.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Container, Sequence
from typing import Any

import torch

from torchport.diagnose._methods import QuietCount
from torchport.errors import UnsupportedBatchError
from torchport.place import flatten_batch

__all__ = [
    "SPREAD",
    "STATE_LOADERS",
    "Placement",
    "copied_to_host",
    "spread",
    "tensors_in",
]


def _storage(tensor: torch.Tensor) -> int:
    """Where ``tensor``'s data lives (its storage's address, shared by its views), or 0."""
    try:
        return int(tensor.untyped_storage().data_ptr())
    except Exception:  # sparse, nested, meta and other tensors without one storage
        return 0


class Placement:
    """The tensors predicted moves sent to the device, and module moves' directions."""

    def __init__(self) -> None:
        # id -> (the tensor, sent to the host?): module moves hand the tensor itself
        self._moved: dict[int, tuple[weakref.ref[torch.Tensor], bool]] = {}
        # storage address -> a module's tensor sent to the device: a state dict loads into
        # it through views (p.data), and a tensor freed since is no longer there
        self._module_storage: dict[int, weakref.ref[torch.Tensor]] = {}
        # id -> a tensor the program sent to the device with x.to(device)
        self._sent: dict[int, weakref.ref[torch.Tensor]] = {}

    def moved_before(self, tensor: torch.Tensor, to_host: bool) -> bool:
        """Record a module move of ``tensor``; whether one already sent it this way (then
        this one copies nothing)."""
        seen = self._moved.get(id(tensor))
        if seen is not None and seen[0]() is tensor and seen[1] == to_host:
            return True
        ref = weakref.ref(tensor)
        self._moved[id(tensor)] = (ref, to_host)
        pointer = _storage(tensor)
        if pointer and to_host:
            self._module_storage.pop(pointer, None)
        elif pointer:
            self._module_storage[pointer] = ref
        return False

    def sent_to_device(self, tensor: torch.Tensor) -> None:
        """The program moved ``tensor`` to the device (on this host it stays where it is)."""
        self._sent[id(tensor)] = weakref.ref(tensor)

    def sent_before(self, tensor: torch.Tensor) -> bool:
        """Whether the program already moved this very tensor, or the tensor it is a view
        of, to the device.

        Asked for a library's move (transformers' ``attention_mask.view(...)`` moved with
        ``.to(device=...)``, of a batch the program moved), which copies nothing there.
        The program's own moves always count: a tensor it keeps on the host (a list of
        batches it walks every epoch) is copied again by each ``x.to(device)`` on the
        accelerator, though on this host the call hands back the same object.
        """
        for each in (tensor, tensor._base):
            ref = self._sent.get(id(each)) if each is not None else None
            if ref is not None and ref() is each:
                return True
        return False

    def on_device(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` or a view of its data is a module's tensor a predicted module
        move sent to the device."""
        if not self._module_storage:
            return False
        pointer = _storage(tensor)
        ref = self._module_storage.get(pointer) if pointer else None
        if ref is None:
            return False
        held = ref()
        if held is None or _storage(held) != pointer:
            del self._module_storage[pointer]  # freed: its address may hold another tensor
            return False
        return True

    def copied_in_from_host(self, args: Sequence[Any], held: Container[Any]) -> bool:
        """Whether ``dst.copy_(src)`` copies a tensor the accelerator run keeps on the host
        (``src`` in ``held``) into a module's tensor a module move sent to the device
        (NoisyLinear's ``self.weight_epsilon.copy_(torch.randn(n).ger(...))``): a copy to
        the device there."""
        src = args[1]
        return isinstance(src, torch.Tensor) and src in held and self.on_device(args[0])

    def loads_onto_device(self, dst: Any, src: Any) -> bool:
        """Whether loading ``src`` into ``dst`` (a state dict's value into a model's tensor,
        or an optimizer's state next to its parameter) copies it host to device in the
        accelerator run: ``dst`` was sent to the device, ``src`` was not.

        Only for loading: a value the program computed from the device's tensors
        (``p.copy_(p.clamp(-c, c))``) looks the same here and copies nothing there.
        """
        return (
            isinstance(dst, torch.Tensor)
            and isinstance(src, torch.Tensor)
            and self.on_device(dst)
            and not self.on_device(src)
            and not self.sent_before(src)
        )


def tensors_in(obj: Any, *, depth: int = 6) -> list[torch.Tensor]:
    """The tensors a checkpoint holds, each storage once (as ``torch.save`` writes them):
    a module's parameters and buffers, what dicts, lists and tuples hold, and what any
    other object holds as the tree walker sees it (dataclasses, attrs classes, objects
    with tensors in their ``__dict__``: :func:`torchport.place.flatten_batch`)."""
    found: dict[int, torch.Tensor] = {}
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, torch.Tensor):
            found.setdefault(_storage(item) or id(item), item)
        elif level >= depth:
            continue
        elif isinstance(item, torch.nn.Module):
            stack += [(t, level + 1) for t in item.state_dict(keep_vars=True).values()]
        elif isinstance(item, dict):
            stack += [(v, level + 1) for v in item.values()]
        elif isinstance(item, (list, tuple)):
            stack += [(v, level + 1) for v in item]
        elif not isinstance(item, _ATOMS):
            stack += [(t, level + 1) for t in _held_by(item)]
    return list(found.values())


# What holds no tensor and needs no walk (most of a checkpoint: epochs, names, rates).
_ATOMS = (str, bytes, int, float, complex, bool, type(None), torch.dtype, torch.device)


def _held_by(item: object) -> list[Any]:
    """The tensors inside ``item`` as the tree walker finds them; where it refuses the
    object (a module held inside it), the values of its ``__dict__``, looked into again."""
    try:
        return flatten_batch(item).tensors
    except UnsupportedBatchError:
        return list(getattr(item, "__dict__", {}).values())


# Where torch loads state dicts: Module copies each value into its tensor; Optimizer moves
# each state value to its parameter's device (step counters stay on the host)
# (unwrapped: torch wraps the first to keep dynamo out)
STATE_LOADERS = frozenset(
    inspect.unwrap(method).__code__
    for method in (
        torch.nn.Module._load_from_state_dict,
        torch.optim.Optimizer._process_value_according_to_param_policy,
    )
)


# Ops after a copy to the host whose results may still be read as part of it on its line:
# a line holds few; the bound keeps a copy whose line is never read again from costing
# every later op a look.
SPREAD = 32


def copied_to_host(local: QuietCount, where: tuple[Any, ...] | None, out: Any) -> None:
    """A copy to the host was made at ``where`` (``None``: a copy elsewhere, which ends the
    last one's line); ``out`` holds it, and so will what ops make from it."""
    if where is None:
        local.host_copy = local.host_ids = None
        return
    if local.host_copy != where or local.host_ids is None:
        local.host_copy, local.host_ids = where, set()
    local.host_ids.add(id(out))
    local.spread = SPREAD


def spread(local: QuietCount, args: Sequence[Any], out: Any) -> None:
    """The results of an op that read a host copy hold that copy too."""
    local.spread -= 1
    ids = local.host_ids
    if ids is None:
        return
    for arg in args:
        if id(arg) in ids or (
            isinstance(arg, (list, tuple)) and any(id(each) in ids for each in arg)
        ):
            if isinstance(out, torch.Tensor):
                ids.add(id(out))
            elif isinstance(out, (list, tuple)):
                ids.update(id(each) for each in out if isinstance(each, torch.Tensor))
            return

"""``torch.save`` and ``torch.load`` of tensors on the simulated accelerator, ``map_location`` kept.

A simulated tensor is saved as a CPU tensor whose storage is tagged ``sim:0``, so
a checkpoint says where its tensors lived, as a CUDA checkpoint does. Loading
asks torch's own ``map_location`` machinery where each storage goes: a storage
left at ``sim:0`` comes back as a simulated tensor, one mapped elsewhere
(``map_location="cpu"``, ``{"sim:0": "cpu"}``, ``lambda storage, loc: storage``)
as a plain CPU tensor, exactly as a CUDA checkpoint loads (each storage that comes back
on the device is one copy to it, as CUDA's ``storage.cuda()`` makes); ``map_location="sim"``
puts a checkpoint saved anywhere on the device. ``weights_only=True`` loads accept
the one rebuild function here.

Unlike a CUDA checkpoint, one saved on ``sim`` loads only where torchport's
simulator is installed (the rebuild function is torchport's): move tensors to the
CPU before saving a checkpoint meant for other machines.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any

import torch

from torchport import hardware
from torchport._crossings import CrossingKind
from torchport.sim._host import copied, copied_bytes

__all__ = ["install_serialization", "rebuild_sim_tensor", "reduce_sim_tensor"]

_saving: weakref.WeakValueDictionary[int, torch.Tensor] = weakref.WeakValueDictionary()
_loaded: set[int] = set()
_lock = threading.Lock()


def reduce_sim_tensor(tensor: Any) -> tuple[Any, tuple[Any, ...]]:
    """The pickle reduction of a simulated tensor: a tagged host copy and its Python state."""
    # The values themselves, not a copy: views of one storage stay one storage in the file.
    host = tensor._raw.detach()
    key = host.untyped_storage().data_ptr()
    if key not in _saving:  # each storage once, as torch.save writes it
        # CUDA's torch.save copies each storage to the host (storage.cpu()): one copy
        copied(
            CrossingKind.DEVICE_TO_HOST,
            "torch.save",
            tensor._raw,
            pinned=False,
            non_blocking=False,
            label="copy (torch.save of tensors on the device)",
        )
    _saving[key] = host
    state = {name: value for name, value in tensor.__dict__.items() if name != "_raw"}
    return rebuild_sim_tensor, (host, tensor.requires_grad, state)


def rebuild_sim_tensor(host: torch.Tensor, requires_grad: bool, state: dict[str, Any]) -> Any:
    """A simulated tensor again where the storage stayed at ``sim``; else the host tensor."""
    key = host.untyped_storage().data_ptr()
    with _lock:
        on_device = key in _loaded
        _loaded.discard(key)
    if not on_device:
        result: Any = host.requires_grad_(requires_grad) if host.is_floating_point() else host
        return result
    from torchport.sim._tensor import SimTensor

    result = SimTensor(host, requires_grad=requires_grad and host.is_floating_point())
    for name, value in state.items():
        setattr(result, name, value)
    return result


def _tag(storage: Any) -> str | None:
    if storage.device.type == "cpu" and storage.data_ptr() in _saving:
        return "sim:0"
    return None


def _restore(storage: Any, location: str) -> Any:
    if not location.startswith("sim"):
        return None
    # CUDA's torch.load restores a storage saved from the device with storage.cuda():
    # one copy to the device per storage, at the line that called torch.load
    copied_bytes(
        CrossingKind.HOST_TO_DEVICE,
        "torch.load",
        storage.nbytes(),
        label="copy (torch.load of tensors saved on the device)",
    )
    with _lock:
        _loaded.add(storage.data_ptr())
    return storage


def _names_sim(map_location: Any) -> bool:
    if isinstance(map_location, (str, torch.device)):
        return hardware.named_type(map_location) == "sim"
    if isinstance(map_location, dict) and map_location:
        return all(_names_sim(target) for target in map_location.values())
    return False


def _loading_onto_sim(original: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.load`` that puts every tensor on the device when ``map_location`` names it.

    torch maps storages through deserializers, which must return a storage of the
    target device; the simulated device has none, so a checkpoint saved elsewhere
    (``map_location="sim"`` on a CPU or CUDA checkpoint) is loaded to the host and
    then moved, as a whole, by ``to_device`` (sharing kept).
    """

    @functools.wraps(original)
    def load(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        if not _names_sim(map_location):
            return original(f, map_location, *args, **kwargs)
        from torchport.place import to_device

        return to_device(original(f, "cpu", *args, **kwargs), torch.device("sim", 0))

    return load


def install_serialization() -> None:
    """Teach ``torch.save``/``torch.load`` the ``sim`` location (once per process)."""
    torch.serialization.register_package(5, _tag, _restore)
    torch.serialization.add_safe_globals([rebuild_sim_tensor])
    torch.load = _loading_onto_sim(torch.load)

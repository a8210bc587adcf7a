"""Ops that reach a simulated tensor whole, which its generic dispatch would answer wrong.

``aten::to``, when it arrives instead of ``_to_copy``.

``Tensor.to`` is a composite op: with autograd on, it decomposes before the Python key
into ``_to_copy`` (which :func:`~torchport.sim._tensor.to_copy` answers) or into
nothing at all (it returns the tensor itself). Without an autograd key, the op
arrives at ``__torch_dispatch__`` as one of ``aten.to``'s overloads: an inference
tensor (made under ``torch.inference_mode()``), and a tensor copied from inside another
subclass's dispatch (a jagged nested tensor's ``.cpu()`` copies its offsets so). Run
as a plain op on the values inside, ``x.cpu()`` would return the CPU values wrapped as a
device tensor again: a host copy that silently stays on the device and shares its
memory. Here each overload is answered as torch's ``to`` answers it (``to_will_alias``
in ``TensorConversions.cpp``): the tensor itself when nothing changes, else a
``_to_copy`` with the same options.

A jagged nested tensor's view of device values (``_nested_view_from_jagged``, which
``torch.nested.nested_tensor(..., layout=torch.jagged, device=...)`` calls): the nested
tensor's own dispatch builds it, so the simulated tensor passes it on.

A value read: ``_local_scalar_dense``, and ``aten.item``/``aten.is_nonzero`` whole for an
inference tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchport.sim import _host

__all__ = ["PASSED_ON", "TO_OVERLOADS", "passed_on", "read_scalar", "to_overload"]

_aten = torch.ops.aten
TO_OVERLOADS = (
    _aten.to.device,
    _aten.to.dtype,
    _aten.to.other,
    _aten.to.dtype_layout,
)
PASSED_ON = (_aten._nested_view_from_jagged.default,)


def passed_on(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``NotImplemented``: torch then asks the next tensor subclass among the arguments."""
    return NotImplemented


def read_scalar(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A value read to Python (``.item()``, ``bool()``): waits for the device (a host sync)."""
    raw = args[0]._raw
    _host.waited(str(func), "scalar read (.item())", raw.element_size())
    return func(raw)


def _bound(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The op's arguments by name, defaults filled in from its schema."""
    named: dict[str, Any] = {}
    for position, argument in enumerate(func._schema.arguments):
        if position < len(args):
            named[argument.name] = args[position]
        elif argument.name in kwargs:
            named[argument.name] = kwargs[argument.name]
        elif argument.has_default_value():
            named[argument.name] = argument.default_value
    return named


def _same_device(asked: torch.device | None, held: torch.device) -> bool:
    # aten hands a Device argument over as a torch.device: parsed already
    return asked is None or (asked.type == held.type and asked.index in (None, held.index))


def to_overload(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, copy: Callable[..., Any]
) -> Any:
    """One of :data:`TO_OVERLOADS` on a simulated tensor, as torch's composite ``to`` runs it.

    ``copy`` is the simulated tensor's ``_to_copy`` (:func:`~torchport.sim._tensor.to_copy`):
    counted, and a blocking copy to the host waits for the device (a host sync).
    """
    named = _bound(func, args, kwargs)
    source: torch.Tensor = named["self"]
    other = named.get("other")
    if other is not None:  # to(other): other's device and dtype
        named["device"], named["dtype"] = other.device, other.dtype
    memory_format = named.get("memory_format")
    if (
        not named.get("copy", False)
        and _same_device(named.get("device"), source.device)
        and named.get("dtype") in (None, source.dtype)
        and named.get("layout") in (None, source.layout)
        and (
            memory_format in (None, torch.preserve_format)
            or source.is_contiguous(memory_format=memory_format)
        )
    ):
        return source
    options = {
        key: named[key]
        for key in ("dtype", "layout", "device", "pin_memory", "non_blocking", "memory_format")
        if named.get(key) is not None
    }
    return copy(_aten._to_copy.default, (source,), options)

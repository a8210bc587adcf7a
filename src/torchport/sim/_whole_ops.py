"""Ops that reach a simulated tensor whole and are not a composite of other ops.

Composite ops arriving whole (``aten.to`` of an inference tensor, ...) run by their parts
(:mod:`torchport.sim._composites`). Two kinds are answered here instead:

A jagged nested tensor's view of device values (``_nested_view_from_jagged``, which
``torch.nested.nested_tensor(..., layout=torch.jagged, device=...)`` calls): the nested
tensor's own dispatch builds it, so the simulated tensor passes it on.

A value read: ``_local_scalar_dense``, and ``aten.item``/``aten.is_nonzero``, which an
inference tensor brings whole: the read waits for the device, as their parts would.
"""

from __future__ import annotations

from typing import Any

import torch

from torchport.sim import _host

__all__ = ["PASSED_ON", "passed_on", "read_scalar"]

PASSED_ON = (torch.ops.aten._nested_view_from_jagged.default,)


def passed_on(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``NotImplemented``: torch then asks the next tensor subclass among the arguments."""
    return NotImplemented


def read_scalar(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A value read to Python (``.item()``, ``bool()``): waits for the device (a host sync)."""
    raw = args[0]._raw
    _host.waited(str(func), "scalar read (.item())", raw.element_size())
    return func(raw)

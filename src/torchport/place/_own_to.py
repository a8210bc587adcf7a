"""Calling an object's own ``.to``, passing a move's device and options as it takes them."""

from __future__ import annotations

import inspect
from typing import Any, NamedTuple

import torch

from torchport._device_types import HOST_TYPES
from torchport.place._lasting import forget_with, lasting

__all__ = ["call_own_to"]


class _Takes(NamedTuple):
    """What a class's ``.to`` accepts."""

    non_blocking: bool
    dtype: bool
    device_by_name: bool  # ``to(self, *, device, ...)``: torch's storages


_TAKES: dict[type, _Takes] = {}
forget_with(_TAKES)
# Per target device: whether a move there without a say is asynchronous (an accelerator).
_ASYNC: dict[torch.device, bool] = {}
_ASYNC_MAX = 64


def call_own_to(
    obj: Any, target: torch.device, non_blocking: bool | None, dtype: torch.dtype | None
) -> Any:
    """Call ``obj.to`` for a move to ``target``; may synchronize as that method does.

    ``non_blocking`` and ``dtype`` are passed only where the method takes them;
    ``non_blocking=None`` means asynchronous only for accelerator targets (which
    streams the object's copies use is unknown). Returns what ``.to`` returns, or
    ``obj`` itself when ``.to`` returns ``None`` (it moved ``obj`` in place).
    """
    # (One unpack: each field of a NamedTuple read by name is a descriptor call.)
    takes_non_blocking, takes_dtype, by_name = _TAKES.get(type(obj)) or _takes(type(obj))
    if takes_non_blocking and non_blocking is None:
        non_blocking = _ASYNC.get(target)  # hashed in C; target.type builds a string
        if non_blocking is None:
            non_blocking = target.type not in HOST_TYPES
            if len(_ASYNC) < _ASYNC_MAX:
                _ASYNC[target] = non_blocking
    if by_name or (takes_dtype and dtype is not None):
        kwargs: dict[str, Any] = {}
        if takes_non_blocking:
            kwargs["non_blocking"] = non_blocking
        if takes_dtype and dtype is not None:
            kwargs["dtype"] = dtype
        if by_name:  # to(self, *, device, ...): torch's storages
            kwargs["device"] = target
            moved = obj.to(**kwargs)
        else:
            moved = obj.to(target, **kwargs)
    elif takes_non_blocking:
        moved = obj.to(target, non_blocking=non_blocking)
    else:
        moved = obj.to(target)
    # A .to that works in place and returns nothing has moved the object itself (for an
    # object with state, the copy it was called on): that is the result, not None.
    return obj if moved is None else moved


def _takes(cls: type) -> _Takes:
    cached = _TAKES.get(cls)
    if cached is not None:
        return cached
    try:
        params = inspect.signature(cls.to).parameters  # type: ignore[attr-defined]
    except (TypeError, ValueError):  # a builtin without a signature
        result = _Takes(False, False, False)
    else:
        var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        device = params.get("device")
        by_name = device is not None and device.kind is inspect.Parameter.KEYWORD_ONLY
        result = _Takes(var_kw or "non_blocking" in params, var_kw or "dtype" in params, by_name)
    if lasting(cls):
        _TAKES[cls] = result
    return result

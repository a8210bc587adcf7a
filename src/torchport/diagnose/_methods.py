"""Watching Python-level tensor reads (``.item()``, ``.tolist()``, printing, ...) during an audit.

These calls never reach a dispatch mode as one op of their own, so
:func:`torchport.audit` needs to see them at the Python level. A
``TorchFunctionMode`` would, but it puts a Python call in front of *every* torch
function and tensor method of the block (about 2 µs each, 5% of a 5 ms CPU
training step). Only the dozen callables in :data:`._ops.METHOD_TABLE` matter,
so while at least one audit records, each of them is replaced where it lives
(``torch.Tensor.item``, ``torch.tensor``, ...) by a wrapper that costs nothing
to any other op.

The wrappers are process-wide, but record only for the audits active in the
calling thread (a thread-local stack), so other threads pass straight through.
Installing is reference-counted across threads and nested audits; the last
:func:`unwatch` restores every attribute exactly: attributes that were inherited
(``tolist`` comes from ``torch._C.TensorBase``) are deleted again rather than
shadowed.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, Protocol

import torch

from torchport.diagnose import _ops
from torchport.diagnose._ops import OpEntry

__all__ = ["Observer", "unwatch", "watch"]


class Observer(Protocol):
    """What a wrapper reports to: the audit's recorder."""

    quiet: int

    def guarded_observe(
        self,
        func: Any,
        entry: OpEntry,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        out: Any,
        *,
        python: bool,
    ) -> None: ...


_local = threading.local()  # .observers: list[Observer], the audits recording in this thread
_lock = threading.Lock()
_users = 0
# (owner, attribute name, the original, whether the owner defined it itself)
_installed: list[tuple[Any, str, Any, bool]] = []


def _observers() -> list[Observer]:
    observers: list[Observer] | None = getattr(_local, "observers", None)
    if observers is None:
        observers = _local.observers = []
    return observers


def _wrap(original: Callable[..., Any], entry: OpEntry) -> Callable[..., Any]:
    @functools.wraps(original)
    def watched(*args: Any, **kwargs: Any) -> Any:
        observers = getattr(_local, "observers", None)
        if not observers or not entry.matches(args, kwargs):
            return original(*args, **kwargs)
        active = list(observers)
        for observer in active:
            observer.quiet += 1  # the aten ops inside belong to this call
        try:
            out = original(*args, **kwargs)
        finally:
            for observer in active:
                observer.quiet -= 1
        for observer in active:
            if not observer.quiet:
                observer.guarded_observe(original, entry, args, kwargs, out, python=True)
        return out

    return watched


def _home(func: Any) -> tuple[Any, str]:
    """Where a watched callable is looked up: ``(torch.Tensor, "item")``, ``(torch, "tensor")``."""
    name = func.__name__
    if getattr(torch.Tensor, name, None) is func:
        return torch.Tensor, name
    if getattr(torch, name, None) is func:
        return torch, name
    raise LookupError(f"cannot find where {func!r} lives in torch")


def _install() -> None:
    for func, entry in _ops.METHOD_TABLE.items():
        owner, name = _home(func)
        own = name in vars(owner)
        _installed.append((owner, name, func, own))
        setattr(owner, name, _wrap(func, entry))


def _uninstall() -> None:
    while _installed:
        owner, name, original, own = _installed.pop()
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)


def watch(observer: Observer) -> None:
    """Start reporting the watched Python-level calls of this thread to ``observer``."""
    global _users
    with _lock:
        if _users == 0:
            _install()
        _users += 1
    _observers().append(observer)


def unwatch(observer: Observer) -> None:
    """Stop reporting to ``observer``; the last one out restores torch exactly."""
    global _users
    observers = _observers()
    if not any(o is observer for o in observers):
        return
    observers[:] = [o for o in observers if o is not observer]
    with _lock:
        _users -= 1
        if _users == 0:
            _uninstall()

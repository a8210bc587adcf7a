"""Tensors torch cannot copy to a target, named by their path in the batch.

``Tensor.to`` raises ``NotImplementedError`` for a tensor whose kind the target's
backend does not implement (a quantized or nested tensor to ``meta``, a meta tensor
to anywhere with data; on the simulated accelerator, a tensor subclass whose ``.to``
returns its own class), ``TypeError`` for a dtype the backend lacks (``float64`` to
MPS) and ``RuntimeError`` where a tensor subclass or a backend refuses the copy
itself. Running out of memory and a failed device (``torch.OutOfMemoryError``,
``torch.AcceleratorError``) are not the leaf's doing and propagate as torch raised
them, as do torchport's own errors. A move that meets a leaf failure raises
:class:`~torchport.UnsupportedBatchError` naming the path of the first such tensor,
its kind and torch's reason, so the caller learns which leaf and what to do.
"""

from __future__ import annotations

import contextlib
import functools
import operator
from typing import Any

import torch

from torchport.errors import TorchportError, UnsupportedBatchError
from torchport.hardware import DEVICE_FAILURES
from torchport.place._layout import BatchLayout
from torchport.place._locate import ROOT, find_path, find_state_path
from torchport.place._objects import on_device
from torchport.place._registrations import close_walk, open_walk
from torchport.place._tree import flatten_batch

__all__ = [
    "COPY_FAILURES",
    "check_hidden",
    "copy_failure",
    "leaf_failure",
    "named_copy_failure",
    "path_of",
    "uncopyable",
]

# What torch raises when it cannot copy a tensor to a device (see leaf_failure: not all of it).
COPY_FAILURES = (NotImplementedError, TypeError, RuntimeError)
# Of those, the failures that are not the tensor's own: memory, a broken device, torchport's.
_NOT_THE_LEAF: tuple[type, ...] = (TorchportError, *DEVICE_FAILURES)
_PLAIN = frozenset({torch.Tensor, torch.nn.Parameter})
_SUBCLASS = " (torch.Tensor subclass)"


def _kind(t: torch.Tensor) -> str:
    if t.is_quantized:
        return "quantized"
    if t.is_nested:
        return "nested"
    if t.layout is not torch.strided:
        return str(t.layout).removeprefix("torch.")
    if t.is_meta:
        return "meta (shape-only)"
    if type(t) not in _PLAIN:
        return f"{type(t).__qualname__}{_SUBCLASS}"
    return "dense"


_ADVICE = {
    "quantized": "dequantize it first (t.dequantize())",
    "nested": "pad it first (t.to_padded_tensor(0)) or unbind it into a list",
    "meta (shape-only)": "a meta tensor holds no values: materialize it on the target instead",
}


def leaf_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is torch failing to copy one tensor (its kind, dtype or class).

    Not out of memory, not a failed device, not one of torchport's own errors.
    """
    return isinstance(exc, COPY_FAILURES) and not isinstance(exc, _NOT_THE_LEAF)


def copy_failure(
    batch: Any, tensors: list[torch.Tensor], target: torch.device, exc: BaseException
) -> UnsupportedBatchError | None:
    """The error to raise for ``exc``, raised while copying ``tensors`` of ``batch``; or None.

    Each tensor is tried alone (to the CPU-side cost of one more copy each, only on
    this failure path) until one raises the same kind of error; None when none does
    (the failure came from elsewhere, and ``exc`` should propagate as it is).

    The path is found inside a walk of ``batch`` of its own: the walker's
    registrations of classes made at run time last only for the walk that made
    them (``place/_registrations.py``), and without them the path would stop at
    the first such object.
    """
    if not leaf_failure(exc):
        return None
    for t in tensors:
        try:
            t.to(target)  # noqa: TP107 (only whether it raises matters)
        except type(exc) as again:
            if leaf_failure(again):
                return uncopyable(path_of(batch, t), t, target, again, _LAST)
        except Exception:  # another failure: not the culprit of this one
            continue
    return None


def named_copy_failure(
    batch: Any, target: torch.device, exc: BaseException
) -> UnsupportedBatchError | None:
    """The error naming the tensor of ``batch`` torch could not copy, if that is what ``exc`` is.

    ``exc`` is torch's own (one of ``COPY_FAILURES``), or an ``UnsupportedBatchError``
    raised from one (an object's ``.to`` met it and the rebuild named only that
    object; torch's error is down its chain of causes and contexts); None
    otherwise. The result's ``__cause__`` is torch's error. A helper rather than
    code in the caller's ``except`` block, so that no frame of the move is kept in
    a cycle with the exception (which held the batch's tensors past one garbage
    collection).
    """
    cause: BaseException | None = exc
    for _ in range(8):  # down the chain: the rebuild's error, what raised it, torch's
        if cause is None or leaf_failure(cause):
            break
        cause = cause.__cause__ or cause.__context__
    if cause is None or not leaf_failure(cause):
        return None
    try:
        found = [batch] if isinstance(batch, torch.Tensor) else flatten_batch(batch).tensors
    except UnsupportedBatchError:
        return None
    failure = copy_failure(batch, found, target, cause)
    if failure is not None:
        failure.__cause__ = cause
    return failure


_LAST = "or pass the key it is under in skip_keys"
_INSIDE = " inside it)"  # how the walker's path of a tensor inside an own-.to object ends


def path_of(batch: Any, node: Any) -> str:
    """The path of ``node`` (by identity) in ``batch``, found inside a walk of its own.

    For error messages after a walk: see :func:`copy_failure`.
    """
    held = open_walk()
    try:
        if held is not None:
            with contextlib.suppress(UnsupportedBatchError):
                flatten_batch(batch)  # registers the run-time classes, held until the end
        wanted = functools.partial(operator.is_, node)
        path = find_path(batch, ROOT, wanted) or ROOT
        if path.endswith(_INSIDE):
            # In an object that moves with its own .to, whose tensors the walker does
            # not name: read on through its attributes and items (batch['g'].x).
            path = find_state_path(batch, ROOT, wanted) or path
        return path
    finally:
        if held is not None:
            close_walk(held)


def check_hidden(
    layout: BatchLayout, target: torch.device, dtype: torch.dtype | None = None
) -> None:
    """Raise if a tensor the rebuild of ``layout`` cannot reach would stay off ``target``.

    A numpy array of Python objects or a dict's values view holding tensors is
    returned as it is: that keeps the promise only while each of those tensors
    is already on ``target`` (and of ``dtype``, for a floating one).

    Raises:
        UnsupportedBatchError: One is not; the message names its path.
    """
    if layout.hidden is None:
        return
    root, found = layout.hidden
    for leaf, tensors in found:
        for t in tensors:
            if on_device(t, target) and (
                dtype is None or not t.is_floating_point() or t.dtype == dtype
            ):
                continue
            raise UnsupportedBatchError(
                f"{path_of(root, leaf)} is a {type(leaf).__name__} of Python objects holding "
                f"a tensor on {t.device} ({t.dtype}), which to_device cannot rebuild around a "
                "moved tensor (it would stay where it is); hold the tensors in a list, tuple "
                "or dict instead (list(values), arr.tolist()), or pass its key in skip_keys"
            )


def uncopyable(
    where: str, t: torch.Tensor, target: torch.device, exc: BaseException, last: str
) -> UnsupportedBatchError:
    """The error for ``t`` at ``where``, which torch could not copy to ``target`` (``exc``).

    ``last`` ends the advice (what else the caller may do).
    """
    kind = _kind(t)
    if kind in _ADVICE:
        advice = _ADVICE[kind]
    elif kind.endswith(_SUBCLASS):
        advice = "make it a plain tensor first (t.as_subclass(torch.Tensor))"
    else:
        advice = "convert it to a dense strided tensor first (t.to_dense())"
    return UnsupportedBatchError(
        f"{where} is a {kind} tensor ({t.dtype}, on {t.device}) that torch cannot copy "
        f"to {target} ({type(exc).__name__}: {str(exc).splitlines()[0]}); {advice}, {last}"
    )

"""Which tensors an accelerator run keeps on the host, as far as a CPU run can tell.

A CPU run holds every tensor on the host. An accelerator run holds there only what the
program made there or brought back, and what it computes from those alone:

* made by a factory that names no device, or names the host: ``torch.tensor(list)``,
  ``torch.zeros(n)``, ``torch.as_tensor(a)``, ``torch.arange(n, device="cpu")``
  (``torch.tensor(t)`` of a tensor goes where ``t`` is);
* brought back by a copy to the host: ``.cpu()``, ``.to("cpu")``; where the CPU run
  hands back the receiver itself, only when nothing else reaches it after the statement
  (:mod:`._move_alias`);
* computed by ops whose tensor arguments are all such tensors (a view of one, its sum,
  ``100 * rt.mean()``: Python numbers stay numbers at the dispatch level).

A move of one to the device (``x.to(device)``) takes it out again: on this host the
call hands back the very same object. Reads of these tensors are no wait on an
accelerator; a one-element one assigned through a mask runs as ``masked_fill_`` there;
a ``.cpu()`` of one copies nothing. What a CPU run cannot place (a factory given a
``torch.device`` that holds ``"cpu"`` here, ``torch.set_default_device``) is left to be
the device's, as before: the audit then predicts the wait. ``torch.from_numpy`` and
``torch.frombuffer`` reach no mode of torch's (their bindings skip the function-mode
check): the audit hears of them through its wrappers on the ``torch`` module and on
the program's own modules' names for them (``from torch import from_numpy`` run before
the audit started; :mod:`._methods`); a name bound inside a function, or in a namespace
that is no module, makes tensors that are not followed.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Mapping, Sequence
from types import CodeType, FrameType
from typing import Any

import torch

from torchport._device_types import CPU
from torchport.diagnose._indexing import MASK_DTYPES, masked_fill_dispatch, selects
from torchport.diagnose._two_faced import HOST_SIDE, Faces

__all__ = ["HOST_FACTORIES", "HostHeld", "follow_device", "made_on_host"]


class HostHeld:
    """The tensors of one audit that the accelerator run holds on the host."""

    def __init__(self, faces: Faces | None = None, side: str = HOST_SIDE) -> None:
        # id -> weak reference; an entry goes when its tensor does (ids are reused)
        self.held: dict[int, weakref.ref[torch.Tensor]] = {}
        # objects that are the host's or the device's by the name a line reads them by
        # (:mod:`._two_faced`), shared by the audit's two sets; ``side``: this set's
        self.faces = faces
        self.side = side
        self.host = side == HOST_SIDE
        # a held tensor sent to the device for one line only (see lend): its id, and the
        # id, code and line of the frame whose line it is
        self._lent: tuple[int, int, CodeType, int] | None = None

    def add(self, tensor: Any) -> None:
        """``tensor`` is on the host in the accelerator run (a tensor or a tuple of them).

        A tensor that is on an accelerator in this very run is never the host's (a real
        ``host.to(device)`` or ``.cuda()`` computed from host tensors alone): not added.
        """
        if isinstance(tensor, torch.Tensor):
            if self.host and not (tensor.is_cpu or tensor.is_meta):
                return
            key = id(tensor)
            held = self.held

            def gone(ref: weakref.ref[torch.Tensor], key: int = key) -> None:
                if held.get(key) is ref:
                    del held[key]

            # a tensor type without weak references is not followed
            with contextlib.suppress(TypeError):
                held[key] = weakref.ref(tensor, gone)
        elif isinstance(tensor, (list, tuple)):
            for each in tensor:
                if isinstance(each, torch.Tensor):
                    self.add(each)

    def watched(self) -> bool:
        """Whether any tensor is held here, or stands for two (:mod:`._two_faced`)."""
        return bool(self.held) or (self.faces is not None and bool(self.faces.faces))

    def two_faced(self, tensor: object) -> bool:
        """Whether ``tensor`` is the host's or the device's by the name it is read by."""
        faces = self.faces
        return faces is not None and bool(faces.faces) and tensor in faces

    def discard(self, tensor: Any) -> None:
        """``tensor`` was sent to the device (the same object on this host)."""
        ref = self.held.get(id(tensor))
        if ref is not None and ref() is tensor:
            del self.held[id(tensor)]

    def __contains__(self, tensor: object) -> bool:
        ref = self.held.get(id(tensor))
        if ref is None or ref() is not tensor:
            faces = self.faces
            if faces is not None and faces.faces and tensor in faces:
                if self.side != HOST_SIDE and not faces.placed(tensor):
                    return False  # a device side of unknown place: not known to be there
                return faces.side(tensor, sys._getframe(1)) == self.side
            return False
        return self._lent is None or not self._lent_here(tensor)

    def lend(self, tensor: torch.Tensor, frame: FrameType) -> None:
        """``tensor``, held here, is sent to the device by a move whose result the line at
        ``frame`` uses and lets go (``x[hidx.to(dev)]``): on this host the move hands back
        ``tensor`` itself, which the program still holds as the host's. Until ``frame``
        leaves that line it is not held here (the line indexes with the device copy);
        afterwards it is again. One lent tensor at a time: a later lend ends this one."""
        self._lent = (id(tensor), id(frame), frame.f_code, frame.f_lineno or 0)

    def _lent_here(self, tensor: object) -> bool:
        """Whether ``tensor`` is the lent one and its line is still running (the frame is
        on this thread's stack at that line); a lend whose line ended is forgotten."""
        lent = self._lent
        if lent is None or lent[0] != id(tensor):
            return False
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            if id(frame) == lent[1] and frame.f_code is lent[2]:
                if frame.f_lineno == lent[3]:
                    return True
                break
            frame = frame.f_back
        self._lent = None
        return False

    def mask_on_host(self, func: Any, args: Sequence[Any]) -> bool:
        """Whether ``x[mask]`` or ``x[mask] = v`` runs without a wait in the accelerator
        run: ``x`` is held on the host, or ``v`` is a one-element tensor held there
        (``index_put_`` runs as ``masked_fill_``; see :func:`._indexing.masked_fill_dispatch`)."""
        if args[0] in self:
            return True
        if func is _SETITEM and len(args) > 2 and not self.masks_on_host(args[1]):
            value = args[2]
            return isinstance(value, torch.Tensor) and value.numel() == 1 and value in self
        return False

    def copied_from_host(
        self, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> list[int]:
        """Bytes of each copy an op makes in the accelerator run from a tensor held on the
        host into one it does not hold there (empty: none): ``dst.copy_(src)``; index
        tensors held on the host that index a device tensor (:meth:`index_bytes`); and the
        one-element value ``index_put_`` copies (``x[idx] = torch.tensor(1.0)``; with a
        lone mask on the device it runs as ``masked_fill_`` instead)."""
        copies: list[int] = []
        if func in _INDEX_PUTS or func is _INDEX:
            base = args[0]
            if isinstance(base, torch.Tensor) and base not in self:
                copies = self.index_bytes(args[1] if len(args) > 1 else kwargs["indices"])
        if func is _COPY:
            dst, src = args[0], args[1] if len(args) > 1 else kwargs.get("src")
        elif func in _INDEX_PUTS and not masked_fill_dispatch(args, kwargs):
            dst, src = args[0], args[2] if len(args) > 2 else kwargs.get("values")
            if not isinstance(src, torch.Tensor) or src.numel() != 1:
                return copies
        else:
            return copies
        if not isinstance(src, torch.Tensor) or src not in self or dst in self:
            return copies
        return [*copies, int(src.numel() * src.element_size())]

    def index_bytes(self, index: Any) -> list[int]:
        """Bytes of each index tensor held on the host that indexing a tensor the
        accelerator run holds on the device copies there (``x[hi]``, ``m[:, hi]``,
        ``x[host_mask]``), as :func:`._on_device.copies_on_device` counts them: an
        integer index whole, a mask as the ``int64`` positions ``nonzero`` finds on the
        host. The caller checks that the indexed tensor is not held here.
        """
        parts = index if isinstance(index, (tuple, list)) else (index,)
        found = []
        for part in parts:
            if not isinstance(part, torch.Tensor) or part not in self or selects(part):
                continue  # a 0-dim integer tensor is read on the host and selected by
            if part.dtype in MASK_DTYPES:
                with torch._C.DisableTorchFunction():  # .numpy() reaches no mode of torch's
                    positions = int(part.numpy().astype(bool).sum())
                found.append(positions * max(part.dim(), 1) * 8)
            else:
                found.append(part.numel() * part.element_size())
        return found

    def masks_on_host(self, index: Any) -> bool:
        """Whether ``x[index]`` holds a mask and every mask in it is held on the host:
        ``nonzero`` runs there, so expanding it waits for nothing (its positions are
        copied, :meth:`index_bytes`)."""
        parts = index if isinstance(index, (tuple, list)) else (index,)
        masks = [p for p in parts if isinstance(p, torch.Tensor) and p.dtype in MASK_DTYPES]
        return bool(masks) and all(mask in self for mask in masks)

    def follow(self, args: Sequence[Any], out: Any) -> None:
        """An op ran: its results are on the host if every tensor it took is.

        The dispatch mode calls this per op while any tensor is held; in-place results
        (``out`` is an argument) keep their place.
        """
        held = self.held
        lent = self._lent
        faces = self.faces if self.faces is not None and self.faces.faces else None
        found = False
        for arg in args:
            if isinstance(arg, torch.Tensor):
                ref = held.get(id(arg))
                if ref is None or ref() is not arg:
                    if faces is None or arg is out or arg not in faces:
                        return
                    if faces.side(arg, sys._getframe(1)) != self.side:
                        return
                    found = True
                    continue
                if arg is out:
                    return
                if lent is not None and lent[0] == id(arg) and self._lent_here(arg):
                    return  # the device's on this line
                found = True
            elif type(arg) in (list, tuple):
                for each in arg:
                    if isinstance(each, torch.Tensor):
                        ref = held.get(id(each))
                        if ref is None or ref() is not each:
                            return
                        found = True
        if found:
            self.add(out)


def follow_device(device_only: HostHeld, args: Sequence[Any], out: Any) -> None:
    """An op ran: its results are the device's if any tensor it took is in ``device_only``
    (what the accelerator run holds on the device, as far as a CPU run can tell).

    On an accelerator an op with a tensor on the device runs there (a host tensor beside it
    is a 0-dim scalar, or the op raises), so ``x.double()``, ``x * h`` and ``x[mask]`` of a
    device ``x`` are the device's, and their ``.to(device)`` copies nothing. In-place
    results (``out`` is an argument) keep their place.
    """
    held = device_only.held
    faces = device_only.faces if device_only.faces is not None and device_only.faces.faces else None
    found = False
    for arg in args:
        if isinstance(arg, torch.Tensor):
            if arg is out:
                return
            if not found:
                ref = held.get(id(arg))
                found = ref is not None and ref() is arg
                if not found and faces is not None and arg in faces and faces.placed(arg):
                    found = faces.side(arg, sys._getframe(1)) == device_only.side
        elif not found and type(arg) in (list, tuple):
            for each in arg:
                ref = held.get(id(each))
                if ref is not None and ref() is each:
                    found = True
                    break
    if found:
        device_only.add(out)


def made_on_host(func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> bool:
    """Whether a factory call that names no device made its tensor on the host in the
    accelerator run too (one that names a device is the call site's to tell: a variable
    may hold ``"cpu"`` here and the accelerator there; the recorder asks it)."""
    if kwargs.get("device") is not None or torch.get_default_device().type != CPU:
        return False
    if func in _FROM_DATA:
        data = args[0] if args else kwargs.get("data", kwargs.get("obj"))
        return not isinstance(data, torch.Tensor)  # a tensor's copy goes where it is
    return True


_SETITEM = torch.Tensor.__setitem__
_COPY = torch.ops.aten.copy_.default
_INDEX = torch.ops.aten.index.Tensor
_INDEX_PUTS = frozenset(
    {
        torch.ops.aten.index_put_.default,
        torch.ops.aten.index_put.default,
        torch.ops.aten._index_put_impl_.default,
    }
)
# Taken at import: while an audit watches, these names may be looked up through its mode
_FROM_DATA = frozenset({torch.tensor, torch.as_tensor, torch.asarray})
HOST_FACTORIES = frozenset(
    {
        torch.from_numpy,
        torch.zeros,
        torch.ones,
        torch.empty,
        torch.full,
        torch.arange,
        torch.linspace,
        torch.eye,
        torch.rand,
        torch.randn,
        torch.randint,
        torch.randperm,
    }
)
"""Factories whose tensor is the host's when they name no device (see :func:`made_on_host`),
or name the host at their call site (the recorder reads it)."""

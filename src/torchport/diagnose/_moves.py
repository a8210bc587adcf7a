"""What a move copies: its source, destination and bytes, and where it was sent.

Asked of the op table's transfer entries (:mod:`._ops`) once they have run: the devices
and size of an aten copy or a Python-level move (:func:`transfer_of`), whether it was
asked to run asynchronously (:func:`non_blocking`), and, for a move that stays on this
host, whether its arguments alone name the host (:func:`names_host`; the recorder asks
the call site first, :mod:`._callsite`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from torchport import hardware
from torchport._device_types import CPU
from torchport.errors import DeviceError

__all__ = ["copies_of", "names_host", "non_blocking", "transfer_of"]

_Args = Sequence[Any]
_Kwargs = Mapping[str, Any]

# Taken at import, before the audit's wrappers stand in for them (a name looked up while
# an audit watches finds the wrapper, never the callable it is handed)
_CPU_METHOD, _TO_METHOD = torch.Tensor.cpu, torch.Tensor.to
_NEW_TENSOR = torch.Tensor.new_tensor
_CREATES = frozenset({torch.tensor, torch.as_tensor, torch.asarray})


def names_host(func: Any, args: _Args, kwargs: _Kwargs) -> bool:
    """Whether a move names the host as its target, judged from its arguments alone.

    ``.cpu()`` always does. Otherwise a device written as a string that names the CPU
    (``.to("cpu")``, ``torch.tensor(data, device="cpu")``) is taken for the host and a
    ``torch.device`` for the program's device. The recorder asks the call site first
    (:mod:`._callsite`), which tells a literal from a variable; this answers when the
    source cannot be read.
    """
    if func is _CPU_METHOD:
        return True
    if func is _TO_METHOD:
        target = kwargs.get("device", args[1] if len(args) > 1 else None)
    elif func in _CREATES:
        target = kwargs.get("device")
    else:
        return False
    if not isinstance(target, str):
        return False
    try:
        return hardware.device_spec(target).type == CPU
    except DeviceError:  # the call raised on it already; nothing was moved
        return False


def non_blocking(func: Any, args: _Args, kwargs: _Kwargs) -> bool:
    """Whether a transfer op was asked to run asynchronously (``non_blocking=True``)."""
    if kwargs.get("non_blocking"):
        return True
    name = getattr(getattr(func, "_schema", None), "name", "")
    # copy_(self, src, non_blocking) and _copy_from(self, dst, non_blocking) take it third
    return name in ("aten::copy_", "aten::_copy_from") and len(args) > 2 and bool(args[2])


_MOVES = (torch.Tensor.to, torch.Tensor.cpu)


def transfer_of(
    func: Any, args: _Args, kwargs: _Kwargs, out: Any
) -> tuple[torch.device, torch.device, int] | None:
    """Source device, destination device and bytes moved by a transfer op that has run.

    Args:
        func: The aten overload or Python-level callable (a :data:`OpKind.TRANSFER` entry).
        args: Its positional arguments.
        kwargs: Its keyword arguments.
        out: What it returned.

    Returns:
        ``(src, dst, nbytes)``, or ``None`` when the arguments hold no tensor to measure.
    """
    name = getattr(getattr(func, "_schema", None), "name", "")
    if name in ("aten::_copy_from", "aten::_copy_from_and_resize"):
        src, dst = args[0], args[1] if len(args) > 1 else kwargs["dst"]
    elif name == "aten::copy_":
        dst, src = args[0], args[1] if len(args) > 1 else kwargs["src"]
    elif isinstance(out, torch.Tensor) and (name == "aten::_to_copy" or func in _MOVES):
        src, dst = args[0], out
    elif isinstance(out, torch.Tensor):  # torch.tensor / new_tensor / ...: data from the host
        data = args[1] if func is _NEW_TENSOR else args[0] if args else None
        source = data.device if isinstance(data, torch.Tensor) else torch.device(CPU)
        return source, out.device, out.numel() * out.element_size()
    else:
        return None
    if not (isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor)):
        return None
    return src.device, dst.device, src.numel() * src.element_size()


def copies_of(tensor: Any, nbytes: int) -> list[int]:
    """The bytes of each copy a move of ``tensor`` makes on an accelerator: ``[nbytes]`` for
    a strided tensor; for a sparse one, one per non-empty component tensor, as ATen's
    ``_to_copy`` moves its indices and values apart (COO: 2; CSR/CSC/BSR/BSC: 3)."""
    layout = getattr(tensor, "layout", torch.strided)
    if layout is torch.strided or not isinstance(tensor, torch.Tensor):
        return [nbytes]
    parts: tuple[torch.Tensor, ...]
    if layout is torch.sparse_coo:
        parts = (tensor._indices(), tensor._values())
    elif layout in (torch.sparse_csr, torch.sparse_bsr):
        parts = (tensor.crow_indices(), tensor.col_indices(), tensor.values())
    elif layout in (torch.sparse_csc, torch.sparse_bsc):
        parts = (tensor.ccol_indices(), tensor.row_indices(), tensor.values())
    else:
        return [nbytes]
    return [part.numel() * part.element_size() for part in parts if part.numel()]

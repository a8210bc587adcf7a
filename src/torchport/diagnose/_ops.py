"""The op table: which aten ops and tensor methods copy between devices or wait for one.

This module holds per-op knowledge only, the way ``torch/utils/flop_counter.py``
keeps its registry apart from the mode that consults it. It knows nothing of
dispatch modes: the audit's recorder (:mod:`._recorder`) and wrappers
(:mod:`._methods`) ask it two questions, "what is this aten op?"
(:data:`ATEN_TABLE`, :func:`aten_entry`) and "which Python-level tensor calls
matter?" (:data:`METHOD_TABLE`), and get back an :class:`OpEntry` or ``None``.

Two levels exist because some host synchronizations never reach the dispatcher as
one op (``Tensor.tolist`` and ``Tensor.numpy`` of a CPU tensor, printing) while
others exist only there (``nonzero`` inside ``torch.where(cond)``). When a
Python-level entry matches, the audit ignores the aten ops it runs, so ``.item()``
counts once, as ``.item()``. Indexing by a boolean mask is known at both levels:
``x[mask]`` matches at the Python level, which keeps the op off the dispatch mode
(most of its cost under audit); ``x[mask, index_tensor]`` and what other code
calls ``aten::index`` with still count there.

The Python level also sees copies that a CPU run never makes but an accelerator run
would: ``x.to(device)`` and ``out.cpu()`` of a CPU tensor return it unchanged here
and reach no dispatch mode, yet move bytes on a GPU. Their entries match only then
(:func:`stays_on_host`), and the audit lists them beside the syncs a CPU run would
make; a real move (``cpu`` to ``meta``) goes on to the dispatch level as
``aten::_to_copy``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from torchport import hardware
from torchport._device_types import CPU
from torchport.diagnose._host_held import HOST_FACTORIES, made_on_host
from torchport.diagnose._indexing import (
    assigns_tensor_by_mask,
    has_bool_index,
    indexes_by_mask,
    masked_fill_dispatch,
    uint8_index,
)
from torchport.errors import DeviceError

__all__ = [
    "ATEN_TABLE",
    "MAY_WARN",
    "METHOD_TABLE",
    "NAMES",
    "READS",
    "OpEntry",
    "OpKind",
    "aten_entry",
    "method_entry",
    "op_name",
    "read_bytes",
    "stays_on_host",
    "watched_methods",
]

_Args = Sequence[Any]
_Kwargs = Mapping[str, Any]


class OpKind(enum.Enum):
    """What an op costs the host."""

    TRANSFER = "transfer"
    """Copies bytes between two different devices (host to device, device to host, ...)."""
    SYNC = "sync"
    """Makes the host wait for the device: a value is read back to Python."""
    SHAPE_SYNC = "shape sync"
    """Output shape depends on the data, so the host waits to learn the size."""
    NEITHER = "neither"


@dataclass(frozen=True, slots=True)
class OpEntry:
    """What the table knows of one op.

    Attributes:
        kind: The cost class.
        label: A short human label, e.g. ``"scalar read (.item())"``.
        applies: When set, the op only counts if this returns true for its
            ``(args, kwargs)``; ``x.to(same_device)`` is no transfer and
            ``x[index_tensor]`` is no sync, but ``x[bool_mask]`` is.
        quiet_otherwise: For a Python-level entry: when ``applies`` says no, the call
            still owns the aten ops it runs, which count for nothing (``F.one_hot``
            with ``num_classes`` given: its CPU kernel's range checks are no wait on
            an accelerator, where the kernel skips them).
        transfer: ``kind is OpKind.TRANSFER``, kept as a plain field for the audit's
            per-event path (an enum comparison and ``.value`` cost more).
        kind_name: ``kind.value``, for the same reason.
    """

    kind: OpKind
    label: str
    applies: Callable[[_Args, _Kwargs], bool] | None = None
    quiet_otherwise: bool = False
    transfer: bool = field(init=False, repr=False, compare=False)
    kind_name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "transfer", self.kind is OpKind.TRANSFER)
        object.__setattr__(self, "kind_name", self.kind.value)


def _device_changes(args: _Args, kwargs: _Kwargs) -> bool:
    target = kwargs.get("device")
    return target is not None and isinstance(args[0], torch.Tensor) and target != args[0].device


def _copy_crosses(args: _Args, kwargs: _Kwargs) -> bool:
    dst, src = args[0], args[1] if len(args) > 1 else kwargs.get("src")
    return (
        isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor) and src.device != dst.device
    )


def _copy_from_crosses(args: _Args, kwargs: _Kwargs) -> bool:
    src, dst = args[0], args[1] if len(args) > 1 else kwargs.get("dst")
    return isinstance(dst, torch.Tensor) and src.device != dst.device


def _assign_waits(args: _Args, kwargs: _Kwargs) -> bool:
    return has_bool_index(args, kwargs) and not masked_fill_dispatch(args, kwargs)


def _no_output_size(args: _Args, kwargs: _Kwargs) -> bool:
    return kwargs.get("output_size") is None


_SCALAR_READ = "scalar read"
_SHAPE = "data-dependent shape"
_MASK_INDEX = f"{_SHAPE} (boolean-mask indexing)"
_MASK_ASSIGN = "boolean-mask assignment (x[mask] = v)"

# packet name -> entry; an overload name ("repeat_interleave.Tensor") wins over its packet
_ATEN: dict[str, OpEntry] = {
    "_to_copy": OpEntry(OpKind.TRANSFER, "copy (.to()/.cpu()/.cuda())", _device_changes),
    "copy_": OpEntry(OpKind.TRANSFER, "copy (copy_)", _copy_crosses),
    "_copy_from": OpEntry(OpKind.TRANSFER, "copy (copy_)", _copy_from_crosses),
    "_copy_from_and_resize": OpEntry(OpKind.TRANSFER, "copy (copy_)", _copy_from_crosses),
    "_local_scalar_dense": OpEntry(OpKind.SYNC, _SCALAR_READ),
    "equal": OpEntry(OpKind.SYNC, "torch.equal (returns a Python bool)"),
    "_linalg_check_errors": OpEntry(OpKind.SYNC, "linalg error check (use the *_ex variant)"),
    "nonzero": OpEntry(OpKind.SHAPE_SYNC, f"{_SHAPE} (nonzero / where(cond) / argwhere)"),
    "masked_select": OpEntry(OpKind.SHAPE_SYNC, f"{_SHAPE} (masked_select)"),
    "_unique": OpEntry(OpKind.SHAPE_SYNC, f"{_SHAPE} (unique)"),
    "_unique2": OpEntry(OpKind.SHAPE_SYNC, f"{_SHAPE} (unique)"),
    "unique_dim": OpEntry(OpKind.SHAPE_SYNC, f"{_SHAPE} (unique)"),
    "unique_consecutive": OpEntry(OpKind.SHAPE_SYNC, f"{_SHAPE} (unique_consecutive)"),
    "unique_dim_consecutive": OpEntry(OpKind.SHAPE_SYNC, f"{_SHAPE} (unique_consecutive)"),
    "bincount": OpEntry(OpKind.SHAPE_SYNC, f"{_SHAPE} (bincount)"),
    "repeat_interleave.Tensor": OpEntry(
        OpKind.SHAPE_SYNC, f"{_SHAPE} (repeat_interleave, tensor repeats)", _no_output_size
    ),
    "repeat_interleave.self_Tensor": OpEntry(
        OpKind.SHAPE_SYNC, f"{_SHAPE} (repeat_interleave, tensor repeats)", _no_output_size
    ),
    "index.Tensor": OpEntry(OpKind.SHAPE_SYNC, _MASK_INDEX, has_bool_index),
    "allclose": OpEntry(OpKind.SYNC, "torch.allclose (returns a Python bool)"),
    "index_put_": OpEntry(OpKind.SYNC, _MASK_ASSIGN, _assign_waits),
    "index_put": OpEntry(OpKind.SYNC, _MASK_ASSIGN, _assign_waits),
    "_index_put_impl_": OpEntry(OpKind.SYNC, _MASK_ASSIGN, _assign_waits),
}


def _resolve(func: Any) -> OpEntry | None:
    schema = getattr(func, "_schema", None)
    if schema is None or not schema.name.startswith("aten::"):
        return None
    packet = schema.name[len("aten::") :]
    overload = f"{packet}.{schema.overload_name}" if schema.overload_name else packet
    entry = _ATEN.get(overload) or _ATEN.get(packet)
    return None if entry is None or entry.kind is OpKind.NEITHER else entry


class _OverloadTable(dict[int, "tuple[Any, OpEntry | None]"]):
    """``id(overload)`` -> (overload, entry), resolved on first sight, then one dict hit.

    Keyed by ``id``: ``OpOverload.__hash__`` is a Python method, and this lookup runs
    for every op an audit sees. The overload is kept in the value so its id stays its
    own (overloads live as long as torch.ops anyway).
    """

    def entry(self, func: Any) -> OpEntry | None:
        found = self.get(id(func))
        if found is None:
            found = self[id(func)] = (func, _resolve(func))
        return found[1]


ATEN_TABLE = _OverloadTable()
"""``ATEN_TABLE.entry(func)`` is :func:`aten_entry`; modes call it per op."""


def aten_entry(func: Any) -> OpEntry | None:
    """The entry for an aten ``OpOverload``, or ``None`` when it neither copies nor waits.

    Args:
        func: The overload a dispatch mode received, e.g. ``torch.ops.aten.nonzero.default``.
    """
    return ATEN_TABLE.entry(func)


_HOST = CPU  # where the audit predicts copies: a move to itself is free


def _creates_with_device(args: _Args, kwargs: _Kwargs) -> bool:
    """``torch.tensor(data, device=...)`` and kin: a copy, unless the device is the host's.

    Which it is on an accelerator the call site says (``device="cpu"`` stays on the host
    everywhere; ``device=device`` is the program's device): the recorder reads it there,
    so every call that names a device it can parse is watched.
    """
    device = kwargs.get("device")
    if device is None:
        return False
    if not isinstance(device, str):
        return True
    try:
        hardware.device_spec(device)
    except DeviceError:  # the call raises on it anyway; nothing to predict
        return False
    return True


def _creates(func: Any) -> Callable[[_Args, _Kwargs], bool]:
    """``torch.tensor(data, ...)`` and kin: watched when it names a device (a copy, see
    :func:`_creates_with_device`) or makes its tensor on the host (followed there)."""

    def applies(args: _Args, kwargs: _Kwargs) -> bool:
        return _creates_with_device(args, kwargs) or made_on_host(func, args, kwargs)

    return applies


def _makes_on_host(func: Any) -> Callable[[_Args, _Kwargs], bool]:
    # naming a device: the recorder asks the call site whether it names the host
    def applies(args: _Args, kwargs: _Kwargs) -> bool:
        return kwargs.get("device") is not None or made_on_host(func, args, kwargs)

    return applies


_MADE_ON_HOST = "made on the host (no device named)"


def _new_tensor_copies(args: _Args, kwargs: _Kwargs) -> bool:
    # new_tensor(data) copies host data to self's device; on a CPU tensor that is free here
    return len(args) > 1 or "data" in kwargs


def stays_on_host(args: _Args, kwargs: _Kwargs) -> bool:
    """Whether ``tensor.to(...)`` or ``tensor.cpu()`` is a no-op here that would copy on a GPU.

    True for a CPU tensor sent to a CPU device: the call returns it unchanged on this
    machine, while on an accelerator either the tensor or the target would be the
    device. A move to another device is a real copy and the dispatch level counts it.
    """
    tensor = args[0]
    if not isinstance(tensor, torch.Tensor) or not tensor.is_cpu:
        return False
    if len(args) == 2 and not kwargs and isinstance(args[1], torch.device):
        device: torch.device | None = args[1]  # x.to(device), the usual call: no parsing
    else:
        device = torch._C._nn._parse_to(*args[1:], **kwargs)[0]
    return device is not None and device.type == _HOST


# Taken at import, before the audit's wrappers stand in for them (a name looked up while
# an audit watches finds the wrapper, never the callable it is handed)
_CPU_METHOD = torch.Tensor.cpu


_CREATES = frozenset({torch.tensor, torch.as_tensor, torch.asarray})


def _cpu_stays(args: _Args, kwargs: _Kwargs) -> bool:
    tensor = args[0]
    return isinstance(tensor, torch.Tensor) and tensor.is_cpu


_WOULD_COPY = "would copy on an accelerator"


def _one_hot_reads_max(args: _Args, kwargs: _Kwargs) -> bool:
    classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
    return bool(classes == -1)


# Python-level callables the audit wraps (see ._methods). The copy inside
# torch.tensor(data, device=...) never reaches a dispatch mode, so it lives here.
METHOD_TABLE: Mapping[Any, OpEntry] = {
    torch.Tensor.item: OpEntry(OpKind.SYNC, f"{_SCALAR_READ} (.item())"),
    torch.Tensor.tolist: OpEntry(OpKind.SYNC, "read to Python (.tolist())"),
    torch.Tensor.numpy: OpEntry(OpKind.SYNC, "read to NumPy (.numpy())"),
    torch.Tensor.__array__: OpEntry(OpKind.SYNC, "read to NumPy (np.asarray(tensor))"),
    torch.Tensor.__bool__: OpEntry(OpKind.SYNC, f"{_SCALAR_READ} (bool(tensor) / if tensor:)"),
    torch.Tensor.__float__: OpEntry(OpKind.SYNC, f"{_SCALAR_READ} (float(tensor))"),
    torch.Tensor.__int__: OpEntry(OpKind.SYNC, f"{_SCALAR_READ} (int(tensor))"),
    torch.Tensor.__index__: OpEntry(OpKind.SYNC, f"{_SCALAR_READ} (tensor used as an index)"),
    torch.Tensor.__complex__: OpEntry(OpKind.SYNC, f"{_SCALAR_READ} (complex(tensor))"),
    torch.Tensor.__contains__: OpEntry(OpKind.SYNC, f"{_SCALAR_READ} (value in tensor)"),
    torch.Tensor.__repr__: OpEntry(OpKind.SYNC, "printing a tensor (repr/str/print)"),
    # the aten level sees these too (index.Tensor, index_put_); here the audit's mode
    # steps off the stack while they run, which is most of what they would cost it
    torch.Tensor.__getitem__: OpEntry(OpKind.SHAPE_SYNC, _MASK_INDEX, indexes_by_mask),
    torch.Tensor.__setitem__: OpEntry(OpKind.SYNC, _MASK_ASSIGN, assigns_tensor_by_mask),
    # CPU kernels check the range with two scalar reads; CUDA's skips them and reads
    # the max only to find num_classes (torch/aten/src/ATen/native/Onehot.cpp)
    torch.nn.functional.one_hot: OpEntry(
        OpKind.SYNC,
        f"{_SCALAR_READ} (F.one_hot without num_classes reads the max)",
        _one_hot_reads_max,
        quiet_otherwise=True,
    ),
    torch.Tensor.__format__: OpEntry(OpKind.SYNC, "formatting a tensor (f-string / format)"),
    torch.Tensor.to: OpEntry(OpKind.TRANSFER, "copy (.to(device))", stays_on_host),
    torch.Tensor.cpu: OpEntry(OpKind.TRANSFER, "copy (.cpu())", _cpu_stays),
    torch.Tensor.new_tensor: OpEntry(
        OpKind.TRANSFER, "copy (tensor.new_tensor(data))", _new_tensor_copies
    ),
    torch.tensor: OpEntry(
        OpKind.TRANSFER, "copy (torch.tensor(..., device=))", _creates(torch.tensor)
    ),
    torch.as_tensor: OpEntry(
        OpKind.TRANSFER, "copy (torch.as_tensor(..., device=))", _creates(torch.as_tensor)
    ),
    torch.asarray: OpEntry(
        OpKind.TRANSFER, "copy (torch.asarray(..., device=))", _creates(torch.asarray)
    ),
    # factories whose tensors the accelerator run keeps on the host (see ._host_held)
    **{
        factory: OpEntry(OpKind.NEITHER, _MADE_ON_HOST, _makes_on_host(factory))
        for factory in HOST_FACTORIES
    },
}


def _requires_grad(args: _Args) -> bool:
    """A tensor that requires grad read as a Python number: torch warns to detach it first."""
    tensor = args[0] if args else None
    return isinstance(tensor, torch.Tensor) and tensor.requires_grad


def _complex_source(args: _Args) -> bool:
    """A complex tensor moved or cast (``.to(torch.float32)``): torch may warn of the cast."""
    tensor = args[0] if args else None
    return isinstance(tensor, torch.Tensor) and tensor.is_complex()


def _always(args: _Args) -> bool:
    return True


# Python-level calls through which warnings of torch's C++ code surface, and when. A
# C++ warning names the innermost Python frame, which under the audit is the wrapper,
# so ._methods catches them and re-issues each at the caller's line (catching costs
# microseconds, so only when the arguments can warn). Torch 2.13's warnings on these
# paths: copy-constructing from a tensor (torch.tensor & co.), a uint8 mask in an
# index, a complex tensor cast to real (.to()), a tensor that requires grad
# converted to a scalar (float(t) today; the other scalar reads are listed beside it,
# as the check costs one attribute read). The wrappers of Python-defined methods
# (__array__, __format__, __repr__, __contains__) need none: torch's own frame is
# innermost there, as without the audit.
MAY_WARN: Mapping[Any, Callable[[_Args], bool]] = {
    torch.tensor: _always,
    torch.as_tensor: _always,
    torch.asarray: _always,
    torch.Tensor.new_tensor: _always,
    torch.Tensor.__getitem__: uint8_index,
    torch.Tensor.__setitem__: uint8_index,
    torch.Tensor.to: _complex_source,
    torch.Tensor.item: _requires_grad,
    torch.Tensor.__float__: _requires_grad,
    torch.Tensor.__int__: _requires_grad,
    torch.Tensor.__bool__: _requires_grad,
    torch.Tensor.__index__: _requires_grad,
    torch.Tensor.__complex__: _requires_grad,
}


def method_entry(func: Any) -> OpEntry | None:
    """The entry for a Python-level torch callable, or ``None`` when it is not watched.

    Args:
        func: The callable as torch defines it, e.g. ``torch.Tensor.item``.
    """
    try:
        return METHOD_TABLE.get(func)
    except TypeError:  # an unhashable callable is never in the table
        return None


NAMES: dict[int, tuple[Any, str]] = {}  # id -> (callable, name); see _OverloadTable


def op_name(func: Any) -> str:
    """A short name for an op: ``"aten::_to_copy"``, ``"Tensor.item"``, ``"torch.tensor"``."""
    found = NAMES.get(id(func))
    if found is None:
        found = NAMES[id(func)] = (func, _op_name(func))
    return found[1]


def _op_name(func: Any) -> str:
    schema = getattr(func, "_schema", None)
    if schema is not None:
        return str(schema.name)
    name = str(getattr(func, "__qualname__", repr(func)))
    for prefix, public in (("TensorBase.", "Tensor."), ("_VariableFunctionsClass.", "torch.")):
        if name.startswith(prefix):  # C methods report the class that holds them
            return public + name[len(prefix) :]
    return name


# Reads that copy data to the host: True for the whole tensor, False for one element.
# Keyed by id: the callables are module-level singletons, and OpOverload hashes in Python.
READS: dict[int, bool] = {
    id(torch.Tensor.tolist): True,
    id(torch.Tensor.numpy): True,
    id(torch.Tensor.__array__): True,
    id(torch.Tensor.item): False,
    id(torch.ops.aten._local_scalar_dense.default): False,
}


def read_bytes(func: Any, tensor: torch.Tensor) -> int:
    """Bytes a sync op reads back to the host from ``tensor`` (0 when it reads no data)."""
    whole = READS.get(id(func))
    if whole is None:
        return 0
    return tensor.numel() * tensor.element_size() if whole else tensor.element_size()


def watched_methods() -> list[Any]:
    """The Python-level callables that :func:`method_entry` knows."""
    return list(METHOD_TABLE)

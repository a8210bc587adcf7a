"""A tensor on the simulated accelerator: a CPU tensor behind a device that is not the CPU.

:class:`SimTensor` is a wrapper subclass: PyTorch sees a tensor whose device is
``sim:0`` (so ``.device``, ``.is_cpu``, module moves and autograd behave as on any
accelerator), and every aten op on it reaches :meth:`SimTensor.__torch_dispatch__`,
which checks CUDA's device rules, runs the op on the CPU tensors inside, and
wraps the results again. Copies across the boundary are real copies (a tensor
brought back with ``.cpu()`` never shares memory with the device's), counted and
published with the user's line.
"""

from __future__ import annotations

import copy
import enum
import functools
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._mode_utils import no_dispatch

from torchport._crossings import CrossingKind
from torchport.diagnose import copies_on_device, syncs_on_device
from torchport.errors import DeviceError
from torchport.sim import _host
from torchport.sim._cells import CPU_STANDINS
from torchport.sim._composites import composite
from torchport.sim._index_put import INDEX_PUTS, check_index_put
from torchport.sim._inference_views import wrap_result
from torchport.sim._ledger import LEDGER
from torchport.sim._rules import (
    HOST_OUTPUTS,
    check_devices,
    check_generator,
    check_written,
    layout_refusal,
    numpy_refusal,
)
from torchport.sim._whole_ops import PASSED_ON, passed_on, read_scalar
from torchport.sim._wrapper_check import argument_names

__all__ = ["SimTensor", "copy_to_device", "device", "to_host", "wrap"]

_CPU = torch.device("cpu")
_NO_TORCH_FUNCTION = torch._C._disabled_torch_function_impl
_aten = torch.ops.aten


@functools.cache
def device() -> torch.device:
    """``sim:0``; a device PyTorch knows only once the backend is installed."""
    return torch.device("sim", 0)


class SimTensor(torch.Tensor):
    """A tensor on ``sim:0`` whose values live in the CPU tensor ``_raw``."""

    _raw: torch.Tensor
    host_scalar = False
    """Built from a Python number for an op that CUDA gives it on the host (``x[mask] = 0.5``)."""

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @staticmethod
    def __new__(cls, raw: torch.Tensor, requires_grad: bool = False) -> SimTensor:
        if raw.layout != torch.strided:
            raise layout_refusal(raw.layout)
        if raw.is_conj() or raw.is_neg():  # lazy conjugation bits live on the wrapper's side
            raw = raw.resolve_conj().resolve_neg()
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls,
            raw.size(),
            strides=raw.stride(),
            storage_offset=raw.storage_offset(),
            dtype=raw.dtype,
            layout=raw.layout,
            device=device(),
            requires_grad=requires_grad,
        )
        wrapper._raw = raw
        LEDGER.charge(raw)
        return wrapper

    # A traceable wrapper subclass: module moves swap tensors in place, so a module's
    # Parameter objects keep their identity when it moves to the simulated device.
    def __tensor_flatten__(self) -> tuple[list[str], None]:
        return ["_raw"], None

    @staticmethod
    def __tensor_unflatten__(
        inner: dict[str, torch.Tensor], meta: None, size: Any, stride: Any
    ) -> SimTensor:
        return SimTensor(inner["_raw"])

    def numpy(self, *, force: bool = False) -> Any:
        """Refused as CUDA refuses it, also with ``force=True`` (which copies on CUDA)."""
        if force:
            return to_host(self, "numpy(force=True)").numpy()
        raise numpy_refusal(self.device)

    def tolist(self) -> Any:
        """The values as Python numbers; waits for the device (a host sync)."""
        raw = self._raw
        _host.waited("tolist", "read to Python (.tolist())", raw.numel() * raw.element_size())
        return self._raw.tolist()

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        # torch's printer formats element by element, which it does only for plain
        # tensors: format the values inside, and let it add device, dtype and grad_fn.
        if tensor_contents is None:
            raw = self._raw
            _host.waited("print", "print (reads the values)", raw.numel() * raw.element_size())
            tensor_contents = torch._tensor_str._tensor_str(  # type: ignore[no-untyped-call]
                self._raw.detach(), len("tensor(")
            )
        if getattr(self, "_is_param", False):  # a Parameter on the device prints as CUDA's do
            plain = SimTensor.__repr__(self.detach(), tensor_contents=tensor_contents)  # type: ignore[arg-type,call-arg]
            grad = ", requires_grad=True)" if self.requires_grad else ")"
            return "Parameter containing:\n" + plain[: plain.rindex(")")] + grad
        text: str = super().__repr__(tensor_contents=tensor_contents)  # type: ignore[no-untyped-call,call-arg]
        return "tensor(" + text.removeprefix(f"{type(self).__name__}(")

    def __format__(self, format_spec: str) -> str:
        if self.dim() == 0:
            text: str = self.item().__format__(format_spec)
            return text  # a value read: a host sync on CUDA
        return self.__repr__().__format__(format_spec)

    @property
    def data(self) -> torch.Tensor:
        """The tensor without autograd history (sharing values), as ``Tensor.data``."""
        return torch._C.TensorBase.data.__get__(self)  # type: ignore[attr-defined,no-any-return]

    @data.setter
    def data(self, value: torch.Tensor) -> None:
        # torch swaps the tensor's insides; the values inside must follow.
        torch._C.TensorBase.data.__set__(self, value)  # type: ignore[attr-defined]
        if isinstance(value, SimTensor):
            self._raw = value._raw

    def __deepcopy__(self, memo: dict[int, Any]) -> SimTensor:
        if id(self) in memo:
            return memo[id(self)]  # type: ignore[no-any-return]
        with torch.no_grad():
            raw = self._raw.clone()
        new = SimTensor(raw, self.requires_grad if self.is_leaf else False)
        memo[id(self)] = new
        if self.grad is not None:
            new.grad = copy.deepcopy(self.grad, memo)
        for name, value in self.__dict__.items():
            if name != "_raw":
                setattr(new, name, copy.deepcopy(value, memo))
        return new

    def __reduce_ex__(self, protocol: Any) -> Any:
        from torchport.sim._saving import reduce_sim_tensor

        return reduce_sim_tensor(self)

    @classmethod
    def __torch_dispatch__(  # type: ignore[override]
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        special = _SPECIAL.get(func) or composite(func)  # an op arriving whole: its parts
        if special is not None:
            return special(func, args, kwargs)
        tensors: list[torch.Tensor] = []
        raw_args = _unwrap(args, tensors)
        raw_kwargs = {key: _unwrap_one(value, tensors) for key, value in kwargs.items()}
        check_devices(func, tensors, device(), lambda: argument_names(func, args, kwargs))
        named = kwargs.get("device")  # zeros_like(x, device="cpu"): made there, from sizes only
        if named is not None and torch.device(named).type != "sim":
            return func(*raw_args, **raw_kwargs)
        check_generator(func, args, kwargs, device())
        check_index_put(func, args, kwargs)
        # Which ops wait and which copy inside is the audit's op table, asked the way a
        # dispatch mode on a device asks it (diagnose's *_on_device).
        asked = _as_cuda_sees(args) if func in _INDEXING else args
        entry = syncs_on_device(func, asked, kwargs)
        if entry is not None:
            _host.waited(str(func), entry.label)
        if func in _INDEXING:
            for source, _target_device, nbytes in copies_on_device(func, asked, kwargs):
                if source.type == "cpu":
                    _host.copied_bytes(CrossingKind.HOST_TO_DEVICE, str(func), nbytes)
        if func in INDEX_PUTS and not isinstance(args[0], SimTensor):
            # A host tensor written with a 0-dim device value (check_index_put let it by):
            # ATen moves the value to the host first, a copy that waits.
            to_host(args[2] if len(args) > 2 else kwargs["values"], str(func))
        elif _alias_kind(func) is _Alias.WRITES:
            for position, name in _written(func):
                check_written(func, kwargs[name] if name in kwargs else args[position], device())
        standin = CPU_STANDINS.get(func)
        out = func(*raw_args, **raw_kwargs) if standin is None else standin(*raw_args, **raw_kwargs)
        return _rewrap(func, args, kwargs, out)


# The dispatch path below is hand-written rather than torch.utils._pytree: aten
# arguments nest one level at most (Tensor[], Tensor?[]), and pytree's generality
# was most of the simulator's per-op cost.


def _unwrap_one(value: Any, tensors: list[torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return value._raw if isinstance(value, SimTensor) else value
    if isinstance(value, list | tuple):
        return _unwrap(value, tensors)
    if isinstance(value, torch.device) and value.type == "sim":
        return _CPU
    return value


def _unwrap(values: Any, tensors: list[torch.Tensor]) -> Any:
    unwrapped = [_unwrap_one(value, tensors) for value in values]
    return unwrapped if isinstance(values, list) else tuple(unwrapped)


def wrap(value: Any) -> Any:
    """Every plain tensor in ``value`` (computed on the device's behalf) as a :class:`SimTensor`."""
    if isinstance(value, torch.Tensor):
        return value if isinstance(value, SimTensor) else SimTensor(value)
    if isinstance(value, list | tuple):
        wrapped = [wrap(item) for item in value]
        return wrapped if isinstance(value, list) else tuple(wrapped)
    return value


def _rewrap(func: Any, args: Any, kwargs: Any, out: Any) -> Any:
    if _alias_kind(func) is _Alias.WRITES:
        # In place or out=: each result is the argument written, whose sizes may have
        # changed (out= resized, resize_, t_, squeeze_): they follow the values inside.
        written = [kwargs[name] if name in kwargs else args[i] for i, name in _written(func)]
        for tensor in written:
            if isinstance(tensor, SimTensor):
                _match_raw(tensor)
        return written[0] if len(written) == 1 else tuple(written)
    host = HOST_OUTPUTS.get(func)
    if host is not None and isinstance(out, tuple):
        return tuple(item if i in host else wrap(item) for i, item in enumerate(out))
    return wrap_result(out, args, SimTensor)  # inference tensors as torch makes them


def _match_raw(tensor: SimTensor) -> None:
    """Give ``tensor`` the sizes and strides of the values inside, after an op resized them."""
    raw = tensor._raw
    if (
        tensor.size() == raw.size()
        and tensor.stride() == raw.stride()
        and tensor.storage_offset() == raw.storage_offset()
    ):
        return
    # The wrapper's own storage holds no data: setting it with Meta's kernels changes
    # only the sizes (the way torch's return_and_correct_aliasing updates wrappers).
    with no_dispatch():
        meta = torch._C._meta_in_tls_dispatch_include()
        torch._C._set_meta_in_tls_dispatch_include(True)
        try:
            _aten.set_.source_Storage_storage_offset(
                tensor, tensor.untyped_storage(), raw.storage_offset(), raw.size(), raw.stride()
            )
        finally:
            torch._C._set_meta_in_tls_dispatch_include(meta)
    LEDGER.charge(raw)


class _Alias(enum.Enum):
    NONE = "none"
    """Fresh outputs, or views: a view's wrapper holds a view of the CPU tensor."""
    WRITES = "writes"
    """Every output is an argument written in place (``add_``, ``out=``, ``t_``, ``resize_``)."""


@functools.cache
def _alias_kind(func: Any) -> _Alias:
    returns = func._schema.returns
    written = [ret for ret in returns if ret.alias_info is not None and ret.alias_info.is_write]
    return _Alias.WRITES if written and len(written) == len(returns) else _Alias.NONE


@functools.cache
def _written(func: Any) -> tuple[tuple[int, str], ...]:
    """(position, name) of the argument each output of ``func`` is written into."""
    found = []
    for ret in func._schema.returns:
        for position, argument in enumerate(func._schema.arguments):
            alias = argument.alias_info
            if (
                alias is not None
                and alias.is_write
                and alias.before_set & ret.alias_info.before_set
            ):
                found.append((-1 if argument.kwarg_only else position, argument.name))
                break
        else:
            raise AssertionError(f"{func}: no argument is written for {ret}")
    return tuple(found)


# Ops inside which CUDA copies host data (indices, a mask's positions, a value) to the device.
_INDEXING = frozenset(
    {
        _aten.index.Tensor,
        _aten.index_put_.default,
        _aten.index_put.default,
        _aten._index_put_impl_.default,
    }
)


def _as_cuda_sees(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The arguments as CUDA holds them: a value built from a Python number on the host."""
    return tuple(
        arg._raw if isinstance(arg, SimTensor) and arg.host_scalar else arg for arg in args
    )


def _target(kwargs: dict[str, Any]) -> torch.device | None:
    named = kwargs.get("device")
    if named is None:
        return None
    target = torch.device(named)
    if target.type == "sim" and target.index not in (None, 0):
        raise DeviceError(
            f"{target}: the simulated accelerator has one device, sim:0; use 'sim' or 'sim:0'",
            argument="device",
            available=("cpu", "sim:0"),
        )
    return target


def to_host(
    tensor: SimTensor,
    op: str,
    *,
    non_blocking: bool = False,
    convert: Any = None,
) -> torch.Tensor:
    """A host copy of ``tensor``'s values (never sharing its memory), counted as a copy.

    A blocking copy waits for the device first; an asynchronous one returns a buffer
    that holds the values only after the next synchronization.

    Args:
        tensor: The simulated tensor.
        op: What copied it, for the count.
        non_blocking: The copy was asked to be asynchronous.
        convert: Applied to the host values before they land (a dtype cast of ``.to``).
    """
    if not non_blocking:
        _host.synchronize()
    _host.copied(
        CrossingKind.DEVICE_TO_HOST, op, tensor._raw, pinned=False, non_blocking=non_blocking
    )
    with torch.no_grad():
        real = tensor._raw.detach().clone()
        if convert is not None:
            real = convert(real)
    return _host.early_host_copy(real) if non_blocking else real


def copy_to_device(tensor: torch.Tensor, kwargs: dict[str, Any]) -> Any:
    """``tensor.to(sim)`` of a host tensor, from the ``PrivateUse1`` kernel: a counted copy.

    Reached by ``x.to(device)``, and by data PyTorch builds on the host for the device
    (``torch.tensor(data, device=...)``, the index tensor of a list index).
    """
    _refuse_subclass(tensor)
    _host.copied(
        CrossingKind.HOST_TO_DEVICE,
        "aten._to_copy.default",
        tensor,
        pinned=_pinned(tensor),
        non_blocking=bool(kwargs.get("non_blocking", False)),
        label="copy to the device (.to(), torch.tensor(data, device=...), a list index)",
    )
    rest = {key: value for key, value in kwargs.items() if key not in ("device", "non_blocking")}
    return SimTensor(_aten._to_copy.default(tensor, **rest, device=_CPU))


def _refuse_subclass(tensor: torch.Tensor) -> None:
    """Refuse to copy a tensor subclass whose ``.to`` would hand back its own class.

    Every tensor on the simulated accelerator is a :class:`SimTensor`, and torch gives a
    tensor one Python object: a subclass whose ``__torch_function__`` converts results
    to itself (``torch.Tensor``'s default, torchvision's ``tv_tensors``) would fail in
    torch after the copy with a bare ``RuntimeError`` ("Creating a new Tensor subclass
    ... already associated to ... SimTensor"). Raised as ``NotImplementedError``, what
    torch raises for a kind of tensor a backend cannot hold, so ``to_device``,
    ``DeviceLoader`` and module moves name the tensor's path. Subclasses whose ``.to``
    returns a plain tensor (``nn.Parameter``, any with torch functions disabled) pass.

    Raises:
        NotImplementedError: ``tensor`` is such a subclass.
    """
    cls = type(tensor)
    if cls is torch.Tensor or getattr(cls, "__torch_function__", None) is _NO_TORCH_FUNCTION:
        return
    raise NotImplementedError(
        f"the simulated accelerator holds plain tensors only, and {cls.__qualname__} is a "
        "torch.Tensor subclass whose .to returns its own class (on a real accelerator this "
        "copy works); test it on the CPU, or make it a plain tensor first "
        "(t.as_subclass(torch.Tensor))"
    )


def to_copy(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``_to_copy`` to or from the device: host copies counted, another device refused."""
    source = args[0]
    target = _target(kwargs)
    rest = {key: value for key, value in kwargs.items() if key not in ("device", "non_blocking")}
    non_blocking = bool(kwargs.get("non_blocking", False))
    if target is None or target.type == "sim":
        if not isinstance(source, SimTensor):  # host to device
            _host.copied(
                CrossingKind.HOST_TO_DEVICE,
                str(func),
                source,
                pinned=_pinned(source),
                non_blocking=non_blocking,
            )
            return SimTensor(func(source, **rest, device=_CPU))
        return SimTensor(func(source._raw, **rest))
    if not isinstance(source, SimTensor):
        return func(source, **kwargs)
    if target.type == "cpu":
        convert = (lambda real: func(real, **rest)) if rest else None
        return to_host(source, str(func), non_blocking=non_blocking, convert=convert)
    check_devices(func, [source], device())  # another device (meta): refused, as between GPUs
    return func(source._raw, **kwargs)


def _pinned(tensor: torch.Tensor) -> bool:
    from torchport.sim._pinning import is_pinned

    return is_pinned(tensor)


def _copy_(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    dst, src = args[0], args[1]
    non_blocking = bool(args[2] if len(args) > 2 else kwargs.get("non_blocking", False))
    if isinstance(dst, SimTensor):
        if isinstance(src, SimTensor):
            if src.host_scalar and src.dim() == 0 and dst.dim() == 0:
                # x[0] = 1.0: CUDA wraps the number on the host and TensorIndexing.h's
                # copy_to copies it into the 0-dim view (diagnose._indexing.assigned_number_bytes)
                _host.copied(
                    CrossingKind.HOST_TO_DEVICE,
                    str(func),
                    src._raw,
                    pinned=False,
                    non_blocking=False,
                )
            dst._raw.copy_(src._raw)
            return dst
        _host.copied(
            CrossingKind.HOST_TO_DEVICE,
            str(func),
            src,
            pinned=_pinned(src),
            non_blocking=non_blocking,
        )
        dst._raw.copy_(src)
        return dst
    if not non_blocking:
        dst.copy_(to_host(src, str(func)))
        return dst
    # An asynchronous copy to the host: the buffer holds the values only after a sync.
    _host.copied(CrossingKind.DEVICE_TO_HOST, str(func), src._raw, pinned=False, non_blocking=True)
    with torch.no_grad():
        real = src._raw.to(dst.dtype).expand_as(dst).clone()
    _host.early_host_copy_into(dst, real)
    return dst


_SPECIAL: dict[Any, Callable[..., Any]] = {
    _aten._to_copy.default: to_copy,
    _aten.copy_.default: _copy_,
    _aten._local_scalar_dense.default: read_scalar,
    # An inference tensor has no autograd key, so aten::item and aten::is_nonzero (bool())
    # reach this subclass whole instead of as _local_scalar_dense: the same read and wait.
    _aten.item.default: read_scalar,
    _aten.is_nonzero.default: read_scalar,
    **dict.fromkeys(PASSED_ON, passed_on),  # a jagged nested tensor's view: its own dispatch's
}

"""Moving things to a device: ``to_device``.

A batch is flattened once by the one walker (``place/_tree.py``), every distinct
tensor is copied with one ``Tensor.to`` call (cast and move together), and the
batch is rebuilt around the copies. Modules and optimizers are moved in place.
"""

from __future__ import annotations

import inspect
import operator
import warnings
from collections.abc import Collection, Iterable, Sequence
from typing import Any, TypeVar

import torch
from torch import nn

from torchport.errors import ConfigError, UnsupportedBatchError
from torchport.hardware import parse_device
from torchport.place._tree import flatten_batch, flatten_tensors

__all__ = ["UnregisteredTensorWarning", "to_device"]

T = TypeVar("T")

# Attributes every nn.Module has; never user tensors.
_MODULE_INTERNALS = frozenset(vars(nn.Module()))
# Per type: which keyword arguments its .to accepts (non_blocking, dtype).
_TO_KWARGS: dict[type, tuple[bool, bool]] = {}
_UNSET = object()
_ACCELERATOR: bool | None = None
_PLAIN_DEVICES: dict[object, torch.device] = {
    key: torch.device(name) for name in ("cpu", "meta") for key in (name, torch.device(name))
}
_PACK: Any = _UNSET
_IS_CPU = operator.attrgetter("is_cpu")
_DEVICE = operator.attrgetter("device")


class UnregisteredTensorWarning(UserWarning):
    """A module holds tensors as plain attributes, which ``module.to()`` does not move."""


def to_device(
    obj: T,
    device: str | torch.device | int,
    *,
    non_blocking: bool | None = None,
    dtype: torch.dtype | None = None,
    pack: bool | None = None,
    skip_keys: Collection[str] = (),
) -> T:
    """Move a tensor, a nested batch, a module or an optimizer to ``device``.

    * Tensors and containers at any depth (dict, ``defaultdict``, ``OrderedDict``,
      list, tuple, namedtuple, dataclasses incl. frozen ones): a new batch of the
      same structure is returned; the input is not modified. A tensor that
      appears twice is copied once and stays shared; a tensor already on
      ``device`` with the right dtype is returned as is. Objects with a ``.to``
      method are moved with it; every other leaf comes back as it is.
    * ``nn.Module``: moved in place with ``module.to`` and returned. Tensors held
      as plain attributes (not registered parameters or buffers) that are not on
      ``device`` afterwards are named in one :class:`UnregisteredTensorWarning`.
    * ``torch.optim.Optimizer``: each parameter's state tensors are moved to that
      parameter's device (move the model first) and floating state is cast to
      its dtype, as ``Optimizer.load_state_dict`` does; ``step`` stays on the CPU
      unless the parameter group is ``capturable`` or ``fused``. Returned as the
      same object.

    Synchronization, with ``non_blocking=None`` (the default, "as fast as is
    safe"):

    * Copies into CUDA and other accelerators are asynchronous and this does not
      wait for them. From pinned memory the copy is truly asynchronous (do not
      write to the pinned source until the current stream has passed the copy);
      from pageable memory CUDA stages the copy and the source may be reused as
      soon as this returns. Pageable sources are not pinned first: that would
      cost a host copy plus a pinned allocation to save a staging copy CUDA
      does anyway.
    * Copies to the CPU are issued asynchronously, then the host waits ONCE, on
      the current stream of each accelerator the sources are on, before this
      returns. Copies to MPS likewise end with one MPS synchronization. So the
      caller never sees a half-written tensor.
    * Packing (see ``pack``) may wait for an earlier packed copy that still reads
      the staging buffer it needs.
    * A module's parameters and buffers follow the same rules (one wait after
      all of them when the target is the CPU or MPS). Objects with their own
      ``.to`` synchronize as that method does (they get ``non_blocking=True``
      only for accelerator targets and MPS).

    ``non_blocking=True`` issues every copy asynchronously and never waits:
    before reading a result on the CPU (or on MPS) the caller must synchronize
    the source device (e.g. ``torch.accelerator.synchronize()``).
    ``non_blocking=False`` makes every copy blocking.

    Args:
        obj: What to move.
        device: Target device: a string, a ``torch.device`` or an index on the
            current accelerator. ``"cuda"`` without an index means the current
            CUDA device, as for ``Tensor.to``.
        non_blocking: ``None`` for the safe fast default described above.
        dtype: Cast floating-point tensors (and a module's floating parameters)
            to this dtype in the same copy; integer and bool tensors are untouched.
        pack: ``True`` copies the batch's tensors through one staging buffer in
            one copy; ``None`` decides by count and size; ``False`` copies tensor
            by tensor. Tensors that need grad, sparse, quantized or nested tensors
            and tensors already on ``device`` are never packed.
        skip_keys: Values under these dict keys are left as they are.

    Returns:
        The moved object, of the same type.

    Raises:
        DeviceError: ``device`` is malformed or not present.
        ConfigError: ``dtype`` is not a floating-point dtype.
        UnsupportedBatchError: The batch holds a container that cannot be
            rebuilt, or a cycle; the message names its path.
    """
    # The two devices that need no probing skip validation's Python work.
    target = _PLAIN_DEVICES.get(device) if isinstance(device, str | torch.device) else None
    if target is None:
        target = parse_device(device, argument="device")
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ConfigError(
            f"dtype={dtype!r} is not a floating-point dtype; to_device casts floating "
            "tensors only, so pass e.g. torch.float16 or torch.bfloat16, or None"
        )
    if isinstance(obj, torch.Tensor):
        moved = _copy_all([obj], target, non_blocking, dtype, pack)
        return moved[0]  # type: ignore[return-value]
    if isinstance(obj, nn.Module):
        _move_module(obj, target, non_blocking, dtype)
        return obj
    if isinstance(obj, torch.optim.Optimizer):
        _move_optimizer(obj, non_blocking)
        return obj
    layout = flatten_batch(obj, skip_keys=skip_keys)
    if not layout.movers:
        return layout.rebuild(  # type: ignore[return-value]
            _copy_all(layout.tensors, target, non_blocking, dtype, pack)
        )
    # Movers first, so that the one synchronization in _copy_all covers them too.
    new_movers = [_call_to(m, target, non_blocking, dtype) for m in layout.movers]
    new_tensors = _copy_all(layout.tensors, target, non_blocking, dtype, pack)
    return layout.rebuild(new_tensors, new_movers)  # type: ignore[return-value]


def _copy_all(
    tensors: list[torch.Tensor],
    target: torch.device,
    non_blocking: bool | None,
    dtype: torch.dtype | None,
    pack: bool | None,
) -> list[torch.Tensor]:
    """Copy each tensor to ``target``; waits as :func:`to_device` documents."""
    # In the default mode every copy is issued asynchronously and the waiting,
    # if any, happens once below.
    nb = True if non_blocking is None else non_blocking
    # Automatic packing only pays where bytes cross a link (not to the CPU or meta).
    kind = target.type
    packed = None
    if pack or (pack is None and kind != "cpu" and kind != "meta" and len(tensors) > 1):
        packed = _try_pack(tensors, target, nb, dtype, force=pack is True)
    if packed is not None:
        new = packed
    elif dtype is None:
        if tensors and tensors[0].device == target and _all_on(tensors, target):
            return list(tensors)  # nothing to move, so nothing to wait for
        # Positional arguments: torch parses them faster than keywords.
        new = [t.to(target, None, nb) for t in tensors]
    else:
        new = _copy_each(tensors, target, nb, dtype)
    # Without an accelerator no tensor can be on one, so a CPU target needs no wait.
    if non_blocking is None and (kind == "mps" or (kind == "cpu" and _accelerator_present())):
        _wait_for_copies(tensors, target)
    return new


def _all_on(tensors: list[torch.Tensor], target: torch.device) -> bool:
    """Whether every tensor is already on ``target``, checked at C speed (no ``.to`` calls)."""
    if target.type == "cpu":
        return all(map(_IS_CPU, tensors))
    return set(map(_DEVICE, tensors)) == {target}


def _wait_for_copies(sources: Sequence[torch.Tensor], target: torch.device) -> None:
    """Synchronize once after asynchronous copies to the CPU or MPS (host waits here).

    To the CPU: the current stream of each accelerator the sources live on. To
    MPS: the MPS device.
    """
    if target.type == "mps":
        _synchronize(target)
    elif target.type == "cpu":
        for source in {t.device for t in sources if not t.is_cpu and not t.is_meta}:
            _synchronize(source)


def _accelerator_present() -> bool:
    """Whether torch reports an accelerator; asked once per process, as it cannot change."""
    global _ACCELERATOR
    if _ACCELERATOR is None:
        _ACCELERATOR = torch.accelerator.current_accelerator(check_available=True) is not None
    return _ACCELERATOR


def _copy_each(
    tensors: list[torch.Tensor], target: torch.device, nb: bool, dtype: torch.dtype | None
) -> list[torch.Tensor]:
    # Tensor.to returns the tensor itself when it is already there. Positional
    # arguments (device, dtype, non_blocking): torch parses them faster than keywords.
    if dtype is None:
        return [t.to(target, None, nb) for t in tensors]
    return [t.to(target, dtype if t.is_floating_point() else None, nb) for t in tensors]


def _try_pack(
    tensors: list[torch.Tensor],
    target: torch.device,
    nb: bool,
    dtype: torch.dtype | None,
    *,
    force: bool,
) -> list[torch.Tensor] | None:
    """Copy the packable tensors through one staging buffer; None when packing does not apply."""
    _pack = _pack_module()
    if _pack is None:
        return None
    if not force and not _pack.should_pack(tensors, target):
        return None
    packable = [i for i, t in enumerate(tensors) if _packable(t, target, dtype)]
    if len(packable) < 2:
        return None
    chosen = [tensors[i] for i in packable]
    packed = _pack.pack_to_device(chosen, target, non_blocking=nb, dtype=dtype)
    new = list(tensors)
    for i, t in zip(packable, packed, strict=True):
        new[i] = t
    if len(packable) < len(tensors):
        taken = set(packable)
        rest = [i for i in range(len(tensors)) if i not in taken]
        for i, t in zip(
            rest, _copy_each([tensors[i] for i in rest], target, nb, dtype), strict=True
        ):
            new[i] = t
    return new


def _pack_module() -> Any:
    """``torchport.feed._pack``, imported on first use (feed imports place, not the reverse)."""
    global _PACK
    if _PACK is _UNSET:
        try:
            from torchport.feed import _pack
        except ImportError:
            _PACK = None
        else:
            _PACK = _pack
    return _PACK


def _packable(t: torch.Tensor, target: torch.device, dtype: torch.dtype | None) -> bool:
    """Whether ``t`` may go through the staging buffer: a plain dense copy that must happen."""
    stays = _same_device(t.device, target) and (
        dtype is None or not t.is_floating_point() or t.dtype == dtype
    )
    return (
        not stays
        and not t.requires_grad
        and t.layout == torch.strided
        and not t.is_quantized
        and not t.is_nested
    )


def _same_device(a: torch.device, b: torch.device) -> bool:
    return a.type == b.type and (a.index is None or b.index is None or a.index == b.index)


def _synchronize(device: torch.device) -> None:
    """Wait for the work queued on ``device``'s current stream (host-device sync)."""
    if device.type == "mps":
        torch.mps.synchronize()
        return
    accelerator = torch.accelerator.current_accelerator()
    if accelerator is not None and accelerator.type == device.type:
        torch.accelerator.current_stream(device).synchronize()
        return
    module = getattr(torch, device.type, None)
    synchronize = getattr(module, "synchronize", None)
    if callable(synchronize):
        synchronize(device)


def _call_to(
    obj: Any, target: torch.device, non_blocking: bool | None, dtype: torch.dtype | None
) -> Any:
    """Move a leaf that has its own ``.to``; may synchronize as that method does."""
    takes_nb, takes_dtype = _to_kwargs(type(obj))
    kwargs: dict[str, Any] = {}
    if takes_nb:
        # Safe default: we cannot know which streams the object's copies use, so
        # only host-to-accelerator copies (and MPS, synchronized at the end) go async.
        nb = target.type not in ("cpu", "meta") if non_blocking is None else non_blocking
        kwargs["non_blocking"] = nb
    if takes_dtype and dtype is not None:
        kwargs["dtype"] = dtype
    return obj.to(target, **kwargs)


def _to_kwargs(cls: type) -> tuple[bool, bool]:
    cached = _TO_KWARGS.get(cls)
    if cached is not None:
        return cached
    try:
        params = inspect.signature(cls.to).parameters  # type: ignore[attr-defined]
    except (TypeError, ValueError):  # a builtin without a signature
        result = (False, False)
    else:
        var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        result = (var_kw or "non_blocking" in params, var_kw or "dtype" in params)
    _TO_KWARGS[cls] = result
    return result


def _move_module(
    module: nn.Module, target: torch.device, non_blocking: bool | None, dtype: torch.dtype | None
) -> None:
    """Move a module in place; waits once for copies to the CPU or MPS (see to_device)."""
    # Devices before the move: module.to swaps `.data` in place, so afterwards
    # the parameters report the target.
    sources: set[torch.device] = set()
    if non_blocking is None and target.type == "cpu" and _accelerator_present():
        for t in (*module.parameters(), *module.buffers()):
            if not t.is_cpu and not t.is_meta:
                sources.add(t.device)
    nb = target.type != "meta" if non_blocking is None else non_blocking
    if dtype is None:
        module.to(target, non_blocking=nb)
    else:
        module.to(target, dtype, non_blocking=nb)
    if non_blocking is None and target.type == "mps":
        _synchronize(target)
    for device in sources:
        _synchronize(device)
    strays = list(_unregistered_tensors(module, target))
    if strays:
        listing = ", ".join(f"{path!r} ({device})" for path, device in strays)
        noun, them = (
            ("tensor attribute is", "it") if len(strays) == 1 else ("tensor attributes are", "them")
        )
        warnings.warn(
            UnregisteredTensorWarning(
                f"{len(strays)} {noun} not registered as parameters or buffers of "
                f"{type(module).__name__}, so module.to() left {them} off {target}: {listing}; "
                "register each with self.register_buffer(name, tensor) "
                "(persistent=False keeps it out of state_dict) or wrap it in nn.Parameter"
            ),
            stacklevel=3,
        )


def _unregistered_tensors(
    module: nn.Module, target: torch.device
) -> Iterable[tuple[str, torch.device]]:
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if name in _MODULE_INTERNALS:
                continue
            if isinstance(value, torch.Tensor):
                found: Sequence[torch.Tensor] = [value]
            elif isinstance(value, list | tuple | dict):
                try:
                    found, _ = flatten_tensors(value)
                except UnsupportedBatchError:  # a cyclic attribute: not ours to judge
                    continue
            else:
                continue
            path = f"{prefix}.{name}" if prefix else name
            for t in found:
                if not _same_device(t.device, target):
                    yield path, t.device
                    break


def _move_optimizer(optimizer: torch.optim.Optimizer, non_blocking: bool | None) -> None:
    """Move optimizer state next to its parameters; may synchronize (see to_device)."""
    pending: set[torch.device] = set()
    for group in optimizer.param_groups:
        step_on_device = bool(group.get("capturable") or group.get("fused"))
        for param in group["params"]:
            state = optimizer.state.get(param)
            if not state:
                continue
            device = param.device
            nb = device.type != "meta" if non_blocking is None else non_blocking
            for key, value in list(state.items()):
                if not isinstance(value, torch.Tensor):
                    continue
                if key == "step":
                    if not step_on_device:
                        continue  # a CPU scalar: reading it costs no device sync
                    new = value.to(device, torch.float32, non_blocking=nb)
                elif value.is_floating_point() and param.is_floating_point():
                    new = value.to(device, param.dtype, non_blocking=nb)
                else:
                    new = value.to(device, non_blocking=nb)
                if new is not value:
                    state[key] = new
                    if non_blocking is None:
                        if device.type == "cpu" and not value.is_cpu and not value.is_meta:
                            pending.add(value.device)
                        elif device.type == "mps":
                            pending.add(device)
    for device in pending:
        _synchronize(device)

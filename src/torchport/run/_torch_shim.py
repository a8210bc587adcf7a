"""Stand-ins for CUDA-bound torch API outside ``torch.cuda``: amp, checkpoints, distributed.

Each maps a CUDA choice the script made (``"cuda"`` autocast, a ``"nccl"``
process group, a checkpoint saved from a GPU, ``module.cuda()``) onto the
redirect target, and leaves every other choice as the script made it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import serialization

from torchport import hardware
from torchport._device_types import HOST_TYPES
from torchport.errors import DeviceError, RedirectError
from torchport.run._cuda_shim import (
    _LEGACY_DTYPES,
    Patch,
    _synchronize,
    stand_in_class,
    stand_in_function,
)
from torchport.run._notice import acting
from torchport.sim import is_simulated

__all__ = ["is_cuda", "names_device", "torch_patches"]

# torch leaves this untyped; the annotation keeps mypy strict here.
_restore_default: Callable[[Any, str], Any] = serialization.default_restore_location


def is_cuda(value: object) -> bool:
    """Whether ``value`` names a CUDA device: ``"cuda"``, ``"cuda:1"``, ``torch.device("cuda")``."""
    if isinstance(value, torch.device):
        found = value.type == "cuda"
    elif not isinstance(value, str) or "cuda" not in value:
        found = False
    else:
        try:
            found = hardware.device_spec(value).type == "cuda"
        except DeviceError:  # not a device string: torch raises on it, with or without the redirect
            found = False
    if found:
        acting()  # the redirect is about to rewrite it
    return found


def names_device(value: object) -> bool:
    """Whether ``value`` in a device position means CUDA: a CUDA name, or a bare int ordinal."""
    # torch reads a bare int in a device position as an accelerator ordinal (.to(rank)).
    if type(value) is int:
        acting()
        return True
    return is_cuda(value)


def _amp_patches(target: torch.device) -> list[Patch]:
    kind = target.type

    class autocast(torch.amp.autocast):  # stands in for torch.autocast
        def __init__(
            self,
            device_type: str,
            dtype: torch.dtype | None = None,
            enabled: bool = True,
            cache_enabled: bool | None = None,
        ) -> None:
            if device_type == "cuda" and not torch.amp.is_autocast_available(kind):
                # no autocast on the target (meta): the region runs as written, in full
                # precision, as autocast itself does when disabled
                device_type, dtype, enabled = "cpu", None, False
            super().__init__(
                kind if device_type == "cuda" else device_type,
                dtype=dtype,
                enabled=enabled,
                cache_enabled=cache_enabled,
            )

    class cuda_autocast(autocast):
        # torch.cuda.amp.autocast defaults to float16; on the target its own
        # autocast dtype (bfloat16 on the CPU) is the one it supports best.
        def __init__(
            self, enabled: bool = True, dtype: torch.dtype | None = None, cache_enabled: bool = True
        ) -> None:
            super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(torch.amp.GradScaler):
        def __init__(self, device: str = "cuda", *args: Any, **kwargs: Any) -> None:
            super().__init__(kind if device == "cuda" else device, *args, **kwargs)

    class CudaGradScaler(GradScaler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(kind, *args, **kwargs)

    def custom_fwd(fwd: Any = None, *, cast_inputs: torch.dtype | None = None) -> Any:
        return torch.amp.custom_fwd(fwd, device_type=kind, cast_inputs=cast_inputs)

    def custom_bwd(bwd: Any = None) -> Any:
        return torch.amp.custom_bwd(bwd, device_type=kind)

    for cls, original in (
        (autocast, torch.amp.autocast),
        (cuda_autocast, torch.cuda.amp.autocast),
        (GradScaler, torch.amp.GradScaler),
        (CudaGradScaler, torch.cuda.amp.GradScaler),
    ):
        cls.__name__ = original.__name__
        cls.__qualname__ = original.__qualname__
        cls.__module__ = original.__module__
    return [
        (torch, "autocast", autocast),
        (torch.amp, "autocast", autocast),
        (torch.amp, "GradScaler", GradScaler),
        (torch.cuda.amp, "autocast", cuda_autocast),
        (torch.cuda.amp, "GradScaler", CudaGradScaler),
        (torch.cuda.amp, "custom_fwd", custom_fwd),
        (torch.cuda.amp, "custom_bwd", custom_bwd),
    ]


def _map_location(map_location: Any, target: torch.device) -> Any:
    """The ``map_location`` that sends CUDA storages to ``target`` and keeps the others."""
    if is_cuda(map_location):
        return target
    if map_location is not None and not isinstance(map_location, dict):
        return map_location  # another device, or the script's own callable
    table: dict[str, Any] = dict(map_location or {})

    def restore(storage: Any, location: str) -> Any:
        location = str(table.get(location, location))
        if is_cuda(location):
            return _restore_default(storage, str(target))
        return _restore_default(storage, location)

    return restore


def _load_patches(target: torch.device) -> list[Patch]:
    original = torch.load

    @functools.wraps(original)
    def load(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        """``torch.load`` with CUDA storages restored on the redirect target."""
        return original(f, _map_location(map_location, target), *args, **kwargs)

    load.__torchport_original__ = original  # type: ignore[attr-defined]
    return [(torch, "load", load), (torch.serialization, "load", load)]


def _module_patches(target: torch.device) -> list[Patch]:
    to_original: Callable[..., Any] = torch.nn.Module.to

    def cuda(self: torch.nn.Module, device: Any = None) -> torch.nn.Module:
        """``Module.cuda()`` moves the module to the redirect target instead."""
        acting()
        return self.to(target)

    @functools.wraps(to_original)
    def to(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        # Module.to parses its arguments in C (torch._C._nn._parse_to), out of the
        # function mode's sight, and an int there means "accelerator ordinal":
        # model.to(rank) fails on a machine without one. Rewrite before parsing.
        if args and names_device(args[0]):
            args = (target, *args[1:])
        if names_device(kwargs.get("device")):
            kwargs = {**kwargs, "device": target}
        return to_original(self, *args, **kwargs)

    return [(torch.nn.Module, "cuda", cuda), (torch.nn.Module, "to", to)]


NO_SIM_GENERATOR = (
    "torch.Generator(device={device!r}) cannot follow this run to the simulated accelerator: "
    "PyTorch gives a device backend written in Python no generator of its own (a device "
    "generator comes from PrivateUse1HooksInterface.getNewGenerator, a C++ hook), and a CPU "
    "generator given to a random op on the device is refused, as CUDA refuses it. Seed the "
    "global generator instead (torch.manual_seed(seed): random ops on sim draw from it, with "
    "the CPU's values) and drop the generator argument for this run, or run the script with "
    "--device cpu, where the generator is the CPU's."
)


def _default_device_patches(target: torch.device) -> list[Patch]:
    """``torch.Generator(device="cuda")``, ``set_default_device("cuda")`` and legacy CUDA types."""
    generator: Any = torch.Generator
    set_default_device: Callable[..., None] = torch.set_default_device
    set_default_tensor_type: Callable[..., None] = torch.set_default_tensor_type

    def make_generator(device: Any = "cpu") -> Any:
        # torch.Generator is a C type that the function mode never sees being built.
        if not names_device(device):
            return generator(device=device)
        try:
            return generator(device=target)
        except RuntimeError as exc:  # e.g. meta has no generators
            if is_simulated(target):
                raise RedirectError(NO_SIM_GENERATOR.format(device=device)) from None
            raise RedirectError(
                f"torch.Generator(device={device!r}) cannot follow this run to {target}: "
                f"{exc}. Run on a device with its own generators (cpu, cuda, mps, xpu), "
                "or build the generator without a device (it draws on the CPU)."
            ) from None

    def set_device(device: Any) -> None:
        set_default_device(target if names_device(device) else device)

    def set_tensor_type(kind: Any) -> None:
        name = kind if isinstance(kind, str) else getattr(kind, "__module__", "") + "."
        name = name if isinstance(kind, str) else name + getattr(kind, "__name__", "")
        legacy = name.removeprefix("torch.cuda.") if name.startswith("torch.cuda.") else None
        if legacy not in _LEGACY_DTYPES:
            set_default_tensor_type(kind)
            return
        # A CUDA tensor type sets two defaults at once: the dtype and the device.
        acting()
        torch.set_default_dtype(_LEGACY_DTYPES[str(legacy)])
        set_default_device(None if target.type == "cpu" else target)

    return [
        # these announce the redirect only when they rewrite a CUDA device (names_device)
        (torch, "Generator", stand_in_class(generator, make_generator, announce=False)),
        (
            torch,
            "set_default_device",
            stand_in_function(set_default_device, set_device, announce=False),
        ),
        (
            torch,
            "set_default_tensor_type",
            stand_in_function(set_default_tensor_type, set_tensor_type, announce=False),
        ),
    ]


def _release_group_after_reducer(ddp: Any) -> None:
    """Make ``ddp`` drop its reducer before its process group: the group then dies without the GIL.

    Every gloo work copies its caller's thread-local state, the redirect's
    function mode included (``at::ThreadLocalState`` in ``AsyncWork``). A Python
    torch function pops that mode and pushes it back as a new holder, so the
    gloo worker can own the last holder of the old one and must take the GIL to
    release it. ``~ProcessGroupGloo`` joins its workers: from the group's own
    Python object it releases the GIL first (pytorch#154976), but from the C++
    reducer, freed while Python deallocates the DDP model, it holds the GIL and
    the worker never gets it (the hang of issue 30; pytorch#56297 is the class).
    A Python object frees its attributes in the order they were set: moving
    ``process_group`` after ``reducer`` lets the group's Python object drop the
    last reference. Outlives the redirect, as the model does.
    """
    state = vars(ddp)
    if "process_group" in state:
        state["process_group"] = state.pop("process_group")


def _distributed_patches(target: torch.device) -> list[Patch]:
    if not torch.distributed.is_available():
        return []
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    def backend(name: Any) -> Any:
        # "nccl" and "cpu:gloo,cuda:nccl" both need CUDA; gloo runs everywhere.
        return "gloo" if isinstance(name, str) and "nccl" in name else name

    init_original: Callable[..., Any] = dist.init_process_group
    new_group_original: Callable[..., Any] = dist.new_group

    @functools.wraps(init_original)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        if args:
            args = (backend(args[0]), *args[1:])
        if "backend" in kwargs:
            kwargs["backend"] = backend(kwargs["backend"])
        if is_cuda(kwargs.get("device_id")) or type(kwargs.get("device_id")) is int:
            kwargs["device_id"] = None
        return init_original(*args, **kwargs)

    @functools.wraps(new_group_original)
    def new_group(*args: Any, **kwargs: Any) -> Any:
        if "backend" in kwargs:
            kwargs["backend"] = backend(kwargs["backend"])
        return new_group_original(*args, **kwargs)

    ddp_init: Callable[..., None] = DistributedDataParallel.__init__

    @functools.wraps(ddp_init)
    def ddp_init_redirected(self: Any, module: Any, *args: Any, **kwargs: Any) -> None:
        # device_ids / output_device name GPUs; DDP rejects them for other modules.
        args = tuple(None if index < 2 else value for index, value in enumerate(args))
        kwargs.pop("device_ids", None)
        kwargs.pop("output_device", None)
        ddp_init(self, module, *args, **kwargs)
        _release_group_after_reducer(self)

    return [
        (dist, "init_process_group", init_process_group),
        (dist, "new_group", new_group),
        (DistributedDataParallel, "__init__", ddp_init_redirected),
    ]


def torch_patches(target: torch.device) -> list[Patch]:
    """Every attribute outside ``torch.cuda`` to replace while redirected to ``target``."""
    return [
        *_amp_patches(target),
        *_load_patches(target),
        *_module_patches(target),
        *_default_device_patches(target),
        *_distributed_patches(target),
        *_accelerator_patches(target),
    ]


def _accelerator_patches(target: torch.device) -> list[Patch]:
    """``torch.accelerator.synchronize()`` on a host target, on a machine without an accelerator.

    A script whose CUDA work the redirect sent to the host and that waits for it with
    ``torch.accelerator.synchronize()`` (what ``torchport fix`` writes) would raise "none is
    available": the wait is for the target, as ``torch.cuda.synchronize()``'s is. The other
    ``torch.accelerator`` answers stay torch's: the program asked what the machine has.
    """
    if target.type not in HOST_TYPES or hardware.accelerator_type() is not None:
        return []
    if hardware.accelerator_function("synchronize") is None:
        return []
    wait = _synchronize(target, by="torch.accelerator.synchronize")
    return [(torch.accelerator, "synchronize", wait)]

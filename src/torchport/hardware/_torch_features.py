"""What this torch offers: the one place in torchport that knows torch's version.

torchport's runtime supports torch 2.6 and newer (the floor in ``pyproject.toml``).
Every API that appeared, moved or changed meaning inside that range is reached
through a function here, and each one asks torch what it has (does the function
take the argument, does the attribute exist) instead of comparing version strings,
so a backport, a nightly or a vendor build answers for what it is.
``tests/hardware/test_torch_features.py`` fails when another module makes such a
check itself.

What changed, and where torchport meets it:

* ``torch.accelerator.current_accelerator(check_available=True)`` (2.7): on 2.6
  the function takes no argument and returns the compiled-in accelerator even
  where none is usable, so availability is asked separately
  (:func:`current_accelerator`).
* ``torch.accelerator.memory_allocated`` and its siblings (2.8) and
  ``torch.accelerator.get_memory_info`` (2.9): :func:`accelerator_function`.
* ``torch.optim.lr_scheduler.LRScheduler`` (2.0; ``_LRScheduler`` before) and
  ``torch.amp.GradScaler`` (2.3): :data:`LR_SCHEDULER_BASES`, :data:`GRAD_SCALER`.
* dtypes added over the range (``uint16``..``uint64`` in 2.3, ``float8_e8m0fnu`` in 2.7):
  :func:`dtypes_named`.
* the Python device-backend API (2.7: ``torch._C._acc``, ``Library.fallback``) the
  simulated accelerator is built on: :func:`python_device_backend`.
* legacy typed storages (``torch.FloatStorage``), which later torches may drop:
  :func:`legacy_storage`.
* torch's private CUDA getters (``torch._C._cuda_getDriverVersion``,
  ``_cuda_hasPrimaryContext``, ``_cuda_get_sync_debug_mode``), absent from builds
  without CUDA: :func:`cuda_private`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import torch

__all__ = [
    "FLOOR",
    "GRAD_SCALER",
    "LR_SCHEDULER_BASES",
    "accelerator_function",
    "below_floor",
    "cuda_private",
    "current_accelerator",
    "dtypes_named",
    "legacy_storage",
    "python_device_backend",
    "setitem_number_copies_into_a_zero_dim_view",
    "setitem_number_fills_by_index",
]


FLOOR = "2.6"
"""The oldest torch torchport supports: ``torch>=`` in ``pyproject.toml`` says the same."""


def below_floor(version: str | None = None) -> bool:
    """Whether ``version`` (default: this torch) is older than :data:`FLOOR`.

    The one version comparison in torchport: doctor reports it, so that a failing
    probe on an old torch is not blamed on the driver.
    """
    from torch.torch_version import TorchVersion

    return bool(TorchVersion(version or torch.__version__) < FLOOR)


def _takes(function: Callable[..., Any], argument: str) -> bool:
    """Whether ``function`` accepts a keyword ``argument`` (False where it cannot be told)."""
    try:
        return argument in inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def current_accelerator() -> torch.device | None:
    """The accelerator torch would use now (its type; index None), or None where none is usable.

    A CUDA build on a machine without a GPU reports None. Asked anew on each
    call (tests and the simulated accelerator change the answer); creates no
    context.
    """
    ask = torch.accelerator.current_accelerator
    if _takes(ask, "check_available"):  # torch >= 2.7
        found: torch.device | None = ask(check_available=True)
        return found
    # torch 2.6: the function takes no argument, returns the compiled-in
    # accelerator whether or not a device is there, and raises where none is built.
    if not torch.accelerator.is_available():
        return None
    return ask()


def accelerator_function(name: str) -> Callable[..., Any] | None:
    """``torch.accelerator.<name>`` where this torch has it, else None.

    The device-generic memory API came late (``memory_allocated`` and its
    siblings in 2.8, ``get_memory_info`` in 2.9); callers fall back to the
    backend's own module where this returns None.
    """
    found = getattr(torch.accelerator, name, None)
    return found if callable(found) else None


def cuda_private(name: str) -> Callable[..., Any] | None:
    """``torch._C.<name>`` (one of torch's private CUDA getters) where this build has it.

    Builds without CUDA lack them; None then. Only names starting ``_cuda`` are
    asked for here.
    """
    if not name.startswith("_cuda"):
        raise ValueError(f"{name!r} is not one of torch's private CUDA functions (_cuda...)")
    found = getattr(torch._C, name, None)
    return found if callable(found) else None


def python_device_backend() -> bool:
    """Whether a device backend can be set up from Python (``PrivateUse1``; torch 2.7+)."""
    acc = getattr(torch._C, "_acc", None)
    registration = getattr(torch.utils, "backend_registration", None)
    return (
        acc is not None
        and hasattr(acc, "PrivateUse1Hooks")
        and hasattr(acc, "DeviceGuard")
        and hasattr(registration, "_setup_privateuseone_for_python_backend")
        and hasattr(torch.library.Library, "fallback")
    )


@functools.cache
def setitem_number_fills_by_index() -> bool:
    """Whether ``x[index] = number`` with one advanced index runs as ``index_fill_``.

    Newer torch (2.15 does, 2.13 does not) passes the number to the kernel, so nothing
    crosses; older torch wraps it in a host tensor for ``index_put_``, which CUDA copies
    to the device. Asked of this torch once, by watching one such assignment on the CPU.
    """
    target = torch.zeros(3)
    seen = _dispatched(lambda: target.__setitem__([0, 1], 1.0))
    return torch.ops.aten.index_fill_ in seen and torch.ops.aten.index_put_ not in seen


@functools.cache
def setitem_number_copies_into_a_zero_dim_view() -> bool:
    """Whether ``x[0] = number`` (a 0-dim view) copies the number in as a host tensor.

    Torch 2.13 wraps the number in a 0-dim host tensor and ``copy_``s it into the view
    (``copy_to`` in TensorIndexing.h), which CUDA copies to the device; 2.15 runs ``fill_``
    with the number, and nothing crosses. Asked of this torch once, by watching one such
    assignment on the CPU.
    """
    target = torch.zeros(3)
    return torch.ops.aten.copy_ in _dispatched(lambda: target.__setitem__(0, 1.0))


def _dispatched(action: Callable[[], object]) -> list[Any]:
    """The aten ops (overload packets) ``action`` dispatches, in order, on the CPU."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[Any] = []

    class _Watch(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            seen.append(func.overloadpacket)
            return func(*args, **(kwargs or {}))

    with _Watch():  # type: ignore[no-untyped-call]
        action()
    return seen


def legacy_storage(name: str) -> Any:
    """``torch.<name>`` for a legacy typed storage class (``"FloatStorage"``), or None."""
    return getattr(torch, name, None) if name.endswith("Storage") else None


def dtypes_named(names: Iterable[str]) -> frozenset[torch.dtype]:
    """The dtypes among ``names`` that this torch defines (newer ones are skipped)."""
    found = (getattr(torch, name, None) for name in names)
    return frozenset(dtype for dtype in found if isinstance(dtype, torch.dtype))


def _first_class(owner: object, *names: str) -> tuple[type, ...]:
    for name in names:
        found = getattr(owner, name, None)
        if isinstance(found, type):
            return (found,)
    return ()


LR_SCHEDULER_BASES: tuple[type, ...] = _first_class(
    torch.optim.lr_scheduler, "LRScheduler", "_LRScheduler"
) + _first_class(torch.optim.lr_scheduler, "ReduceLROnPlateau")
"""The base classes of torch's learning-rate schedulers (for ``isinstance``)."""

GRAD_SCALER: tuple[type, ...] = _first_class(torch.amp, "GradScaler")
"""``torch.amp.GradScaler`` as a one-class tuple, empty where this torch lacks it."""

DEVICE_FAILURES: tuple[type, ...] = _first_class(torch, "OutOfMemoryError") + _first_class(
    torch, "AcceleratorError"
)
"""torch's errors for a device out of memory or failed (where this torch has them): not a
tensor's own failure to copy."""

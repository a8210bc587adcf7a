"""Choosing a device: ``pick_device``, ``pick_device_with_reason`` and ``available_devices``.

This module is policy only: which device a process should use. What devices
exist, their memory and how a device string is parsed are facts that
``torchport.hardware`` (the ground floor) owns; nothing here asks torch about
hardware itself.

Nothing here writes ``os.environ`` or global torch state (no ``set_device``, no
``set_default_device``). Free memory is read through NVML where torch can (it
creates no CUDA context); ``available_devices`` alone may fall back to the
backend, which creates a context on each device it asks about.
"""

from __future__ import annotations

import os

import torch

from torchport import hardware
from torchport._device_types import CPU
from torchport._sizes import format_bytes
from torchport.hardware import DeviceInfo
from torchport.place._redirected import names_cuda, redirect_target

__all__ = [
    "ENV_VAR",
    "DeviceInfo",
    "available_devices",
    "is_automatic",
    "pick_device",
    "pick_device_with_reason",
]

ENV_VAR = "TORCHPORT_DEVICE"


def is_automatic(value: object) -> bool:
    """Whether ``value`` leaves the choice to :func:`pick_device`: ``None`` or ``"auto"``.

    ``"auto"`` is read as device strings are (white space around it and case
    ignored); an empty ``TORCHPORT_DEVICE`` counts as unset, an empty ``prefer`` does not.
    """
    return value is None or (isinstance(value, str) and value.strip().lower() == "auto")


def pick_device(prefer: str | torch.device | int | None = None) -> torch.device:
    """Return the device this process should use.

    Order: ``prefer`` > the ``TORCHPORT_DEVICE`` environment variable > the
    accelerator that ``torch.accelerator`` reports (CUDA, ROCm, MPS, XPU, ...) >
    the CPU. On an accelerator, the index is ``LOCAL_RANK`` when it is set (as
    under torchrun), else the device with the most free memory (index 0 where
    free memory cannot be read). A device type without an index (``"cuda"``)
    gets its index the same way. ``"auto"`` (or an empty ``TORCHPORT_DEVICE``)
    means the automatic choice. ``"meta"`` is accepted when asked for and never
    chosen automatically. ``"cpu:0"`` is the CPU. Inside
    ``torchport.redirect(target)`` (and so under ``torchport run``) the automatic
    choice, and a CUDA device named by ``prefer`` or ``TORCHPORT_DEVICE``, is the
    redirect's target, where ``.cuda()`` goes there.

    Never changes ``os.environ`` or global torch state, except that naming ``"sim"``
    installs the simulated accelerator (:func:`torchport.testing.simulate_accelerator`);
    does not synchronize.
    :func:`pick_device_with_reason` returns the same device and says why.

    Args:
        prefer: A device string (``"cuda:1"``, ``"mps"``, ``"cpu"``), a
            ``torch.device``, or an index on the current accelerator.

    Returns:
        The chosen device, with an index for accelerators.

    Raises:
        DeviceError: ``prefer``, ``TORCHPORT_DEVICE`` or ``LOCAL_RANK`` names a
            device that is malformed, unknown to this build of torch or not
            present; the message names which and lists the devices that are.
    """
    return pick_device_with_reason(prefer)[0]


def pick_device_with_reason(
    prefer: str | torch.device | int | None = None,
) -> tuple[torch.device, str]:
    """:func:`pick_device`'s choice and one sentence saying why it was made.

    The reason names the rule that decided (``prefer``, ``TORCHPORT_DEVICE``,
    ``LOCAL_RANK``, most free memory, a single device, no accelerator), so a
    report such as ``torchport doctor`` can print it instead of re-deriving it.

    Raises:
        DeviceError: as :func:`pick_device`.
    """
    redirected = redirect_target()
    if not is_automatic(prefer):
        if redirected is not None and names_cuda(prefer, "prefer"):
            return redirected, f"prefer={prefer!r} names CUDA, which {_redirect_says(redirected)}"
        device, how = _parse(prefer, "prefer")
        return device, f"prefer={prefer!r} was passed{how}"
    env = os.environ.get(ENV_VAR, "")
    if env.strip() and not is_automatic(env):
        if redirected is not None and names_cuda(env.strip(), ENV_VAR):
            return redirected, f"{ENV_VAR}={env!r} names CUDA, which {_redirect_says(redirected)}"
        device, how = _parse(env, ENV_VAR)
        return device, f"{ENV_VAR}={env!r} is set{how}"
    if redirected is not None:
        # The script sees CUDA and .cuda() lands on the target: so does the automatic choice.
        return redirected, f"{_redirect_says(redirected)}, so the automatic choice is {redirected}"
    kind = hardware.accelerator_type()
    if kind is None:
        return torch.device(CPU), "torch reports no accelerator, so the CPU"
    index, why = _choose_index(kind)
    return torch.device(kind, index), f"{kind} is the accelerator torch reports; {why}"


def _redirect_says(target: torch.device) -> str:
    return f"torchport.redirect sends to {target} (as it does .cuda())"


def available_devices() -> list[DeviceInfo]:
    """List the devices this process can use, best first.

    Accelerators come first, the one with the most free memory leading; the CPU
    is last. Reading free memory goes through NVML where available and otherwise
    through the backend, which creates a context on each accelerator. Does not
    synchronize.
    """
    infos = hardware.list_devices(allow_context=True)
    # Stable sort: equal or unknown free memory keeps index order; the CPU stays last.
    infos.sort(key=lambda info: (info.type == CPU, -(info.free_memory or 0)))
    return infos


def _simulate_if_named(value: object) -> None:
    """Install the simulated accelerator when ``value`` names it (``"sim"``, ``"sim:0"``).

    The one global change :func:`pick_device` makes, and only when asked for by name:
    ``TORCHPORT_DEVICE=sim`` runs an unchanged program on the simulated device.
    """
    if hardware.named_type(value) == "sim":
        # Imported here, on demand: the simulator sits above place (it reads the
        # audit's op table), and a program that never names it never loads it.
        from torchport import sim

        sim.simulate_accelerator()


def _parse(value: object, argument: str) -> tuple[torch.device, str]:
    """Parse with the choice policy for a bare type; returns the device and how its index came."""
    why: list[str] = []

    def choose(kind: str) -> int:
        index, reason = _choose_index(kind)
        why.append(reason)
        return index

    _simulate_if_named(value)
    device = hardware.parse_device(value, argument=argument, bare_index=choose)
    return device, f"; {why[0]}" if why else ""


def _choose_index(kind: str) -> tuple[int, str]:
    """Index for an accelerator type and why: LOCAL_RANK, else most free memory, else 0."""
    count = hardware.device_count(kind)
    plural = "s" if count != 1 else ""
    local_rank = os.environ.get("LOCAL_RANK")
    if local_rank is not None:
        try:
            rank = int(local_rank)
        except ValueError:
            raise hardware.device_error(
                f"LOCAL_RANK={local_rank!r} is not an integer", "LOCAL_RANK"
            ) from None
        if not 0 <= rank < count:
            # Wrapping the rank (rank % count) would silently put two ranks on one device.
            raise hardware.device_error(
                f"LOCAL_RANK={rank} but this process sees {count} {kind} device{plural}; "
                f"launch at most {count} processes per node, or, if each process is given "
                f"one device (e.g. via CUDA_VISIBLE_DEVICES), set {ENV_VAR}={kind}:0",
                "LOCAL_RANK",
            )
        return rank, f"index {rank} from LOCAL_RANK={local_rank!r} (one device per local rank)"
    if count <= 1:
        return 0, f"index 0, the only {kind} device"
    best, best_free = 0, -1
    for index in range(count):
        free, _ = hardware.memory_info(torch.device(kind, index), allow_context=False)
        if free is None:
            # Unknown for one means no fair comparison.
            return 0, (
                f"index 0 of {count} {kind} devices: free memory of {kind}:{index} cannot be "
                "read without creating a context (install nvidia-ml-py to compare)"
            )
        if free > best_free:
            best, best_free = index, free
    return best, (
        f"index {best} has the most free memory of {count} {kind} devices "
        f"({format_bytes(best_free)})"
    )

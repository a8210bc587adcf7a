"""Where torchport's own API sends "cuda" while ``torchport.redirect`` sends CUDA elsewhere.

Under ``tp.redirect("cpu")`` (what ``torchport run --device cpu`` enters) the
script's ``.cuda()`` lands on the CPU; ``tp.to_device(x, "cuda")``,
``tp.DeviceLoader(loader, "cuda")`` and ``tp.pick_device()`` must agree with it,
or a redirected script fails (or, worse, splits its tensors between two devices)
the moment it calls torchport. ``torchport.run`` is above this part, so it tells
this module when a redirect starts and ends (:func:`push_redirect`,
:func:`pop_redirect`); everything in ``place`` and ``feed`` that reads a device
from the user goes through :func:`resolve_device`.

Inside a redirect, a device that names CUDA (``"cuda"``, ``"cuda:1"``,
``torch.device("cuda", 0)``) and a bare index (an accelerator ordinal, as in
``.to(rank)``) mean the redirect's target, whatever the index, as they do for
``.cuda()`` there. Every other device means itself. Outside a redirect nothing
changes, and neither does it in a thread the redirect does not reach (one that
was running before it started: its ``.cuda()`` is not redirected either).
torchport's internal calls (``doctor``, the hardware floor) keep seeing the real
machine: they do not read devices through here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch

from torchport import hardware
from torchport._device_types import CUDA

__all__ = [
    "ACTIVE",
    "names_cuda",
    "pop_redirect",
    "push_redirect",
    "redirect_target",
    "resolve_device",
]

# The targets of the redirects in force, innermost last. Read on the hot path of
# to_device (one truth test), so it is a plain list.
ACTIVE: list[torch.device] = []
# For each of them: whether it applies to the calling thread (None: to every thread).
_APPLIES: list[Callable[[], bool] | None] = []
_LOCK = threading.Lock()


def push_redirect(target: torch.device, applies: Callable[[], bool] | None = None) -> None:
    """A redirect to ``target`` starts: "cuda" now means ``target`` to torchport's API.

    Args:
        target: Where CUDA goes.
        applies: Says whether the redirect applies to the calling thread, as the
            redirect's ``.cuda()`` does (threads started before it do not see it);
            ``None``: every thread.
    """
    with _LOCK:
        ACTIVE.append(target)
        _APPLIES.append(applies)


def pop_redirect(target: torch.device) -> None:
    """The innermost redirect, to ``target``, ends.

    Raises:
        ValueError: ``target`` is not the innermost redirect's.
    """
    with _LOCK:
        if not ACTIVE or ACTIVE[-1] != target:
            raise ValueError(f"pop_redirect({target}): the innermost redirect is {ACTIVE[-1:]}")
        ACTIVE.pop()
        _APPLIES.pop()


def redirect_target() -> torch.device | None:
    """The target of the innermost redirect that applies to this thread, or None."""
    for target, applies in zip(reversed(ACTIVE[:]), reversed(_APPLIES[:]), strict=False):
        if applies is None or applies():
            return target
    return None


def names_cuda(value: object, argument: str = "device") -> bool:
    """Whether ``value``, in a device position, means CUDA under a redirect.

    Raises:
        DeviceError: ``value`` is a string that is not a device.
    """
    if type(value) is int:
        return True  # an accelerator ordinal, as .to(rank) and .cuda(rank) read it
    if isinstance(value, torch.device):
        return value.type == CUDA
    if isinstance(value, str) and CUDA in value:
        return hardware.device_spec(value, argument=argument).type == CUDA
    return False


def resolve_device(value: object, *, argument: str = "device") -> torch.device:
    """:func:`torchport.hardware.parse_device`, following a redirect in force.

    Raises:
        DeviceError: ``value`` is malformed or names a device that is not present
            (and not redirected).
    """
    if ACTIVE and names_cuda(value, argument):
        target = redirect_target()
        if target is not None:
            return target
    return hardware.parse_device(value, argument=argument)

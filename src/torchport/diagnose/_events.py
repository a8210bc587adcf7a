"""The words and records of one counted audit event, shared by the recorder and its parts."""

from __future__ import annotations

from typing import NamedTuple

import torch

from torchport._device_types import HOST_TYPES
from torchport.diagnose._ops import OpKind

__all__ = [
    "DATA_LOADING",
    "HOST_TYPES",
    "LOADING_TO_DEVICE",
    "TO_DEVICE",
    "TO_HOST",
    "TRANSFER",
    "Counted",
    "Row",
    "Where",
    "on_accelerator",
    "route",
]

# Devices whose scalar reads cost no wait (the vocabulary's HOST_TYPES): the audit still
# lists them, labelled as points that would synchronize on an accelerator.

# What a predicted copy's direction is called: the run's device is the host here, so
# both ends are "cpu"; on an accelerator one of them is the device.
TO_DEVICE, TO_HOST = "host→device", "device→host"
DATA_LOADING = "data loading"
"""The phase of an event made while a DataLoader fetched (see :mod:`._host_work`)."""
# ... and of a predicted copy made there to the program's device: device work (its entry's
# phase reads DATA_LOADING)
LOADING_TO_DEVICE = "data loading, to the device"
TRANSFER = OpKind.TRANSFER.value


class Where(NamedTuple):
    """The program's line an event is charged to, and the installed code it went through.

    Attributes:
        file: The user's source file (``"<backward/C++>"`` when no Python frame made it).
        line: Its line number (0: unknown).
        function: The function holding that line.
        via_file: The innermost installed file passed on the way, or ``""``.
        via_line: Its line, or 0.
    """

    file: str
    line: int
    function: str
    via_file: str = ""
    via_line: int = 0


class Row(NamedTuple):
    """What is counted together: one kind of event at one line (a dict key of the tally).

    Attributes:
        kind: ``OpKind`` value: ``"transfer"``, ``"sync"``, ``"shape sync"``.
        label: What happened, e.g. ``"scalar read (.item())"``.
        op: The aten op or tensor method.
        device: A transfer's route (``"cpu→meta"``, ``"host→device"``) or a read's device.
        would_sync: Free on this host device, a copy or a wait on an accelerator.
        phase: ``""``, :data:`DATA_LOADING` or :data:`LOADING_TO_DEVICE`.
        where: The line it is charged to.
    """

    kind: str
    label: str
    op: str
    device: str
    would_sync: bool
    phase: str
    where: Where


def skipped_wait(by: str, device: str, where: Where) -> Row:
    """The row of a host wait a stand-in skipped on the CPU (``torch.cuda.synchronize``
    under ``torchport run``): a wait on an accelerator."""
    return Row(OpKind.SYNC.value, "host wait (synchronize)", by, device, True, "", where)


class Counted(NamedTuple):
    """A row with how often it happened and the bytes it moved or read."""

    row: Row
    times: int
    nbytes: int


_ROUTES: dict[tuple[torch.device, torch.device], str] = {}


def route(src: torch.device, dst: torch.device) -> str:
    """A copy's direction as the report writes it (``"cpu→meta"``); formatting a
    ``torch.device`` costs microseconds, so each route is named once."""
    named = _ROUTES.get((src, dst))
    if named is None:
        named = _ROUTES[(src, dst)] = f"{src}→{dst}"
    return named


def on_accelerator(row: Row) -> bool:
    """Whether ``row`` happened on an accelerator in this very run (not a prediction): a
    read of a tensor there, or a copy to or from one. Its device is as ``str(device)``
    writes it (``"cuda:0"``, ``"cpu→sim:0"``): the type is before the colon."""
    if row.would_sync:
        return False
    return any(end.partition(":")[0] not in HOST_TYPES for end in row.device.split("→"))

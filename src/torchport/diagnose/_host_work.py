"""Host work inside a training loop: which of it the audit counts, sets apart or leaves out.

The audit describes the run on the accelerator. A CPU run does everything on the
host, so each place where host-only code runs inside a training loop is decided
here once, and the recorder (:mod:`._recorder`) follows the decision:

* **Data loading** (set apart). Everything that runs while a
  ``torch.utils.data.DataLoader`` makes an iterator or fetches a batch (sampler,
  ``Dataset.__getitem__`` or an ``IterableDataset``'s ``__iter__``, transforms,
  ``collate_fn``, ``pin_memory``) runs on the host in an accelerator run too: with
  ``num_workers=0`` in the main process, which is what this module recognises
  (:func:`loading`: a frame of the loader's ``_get_iterator``, ``_reset`` or
  ``_next_data`` on the stack of the event, asked only when an event is recorded;
  nothing of the loader is replaced). Its scalar reads and
  would-be copies are host work, listed in the report's separate "data loading
  (host)" part and never counted as accelerator copies or syncs. A copy that
  really crosses devices inside it (a ``Dataset`` that calls ``.to("cuda")``) is
  device work wherever it runs: it stays in the main part, marked as made in data
  loading; so does a predicted copy to the program's device (a ``collate_fn`` that
  returns ``batch.to(device)``), while a move to the host or to a batch tensor's own
  device (``device=row.device``) copies nothing in the accelerator run either
  (:mod:`._callsite` reads which). A loader wrapped by ``tqdm`` or
  ``torchport.DeviceLoader`` is still iterated by the ``DataLoader`` itself, so the
  same holds.
* **Worker processes** (left out). With ``num_workers > 0`` the same code runs in
  other processes, which an audit in this one never sees; a worker forked while an
  audit runs stops recording at the fork (an at-fork handler in :mod:`._recorder`), so
  it also stops paying for the audit.
* **Logging of Python numbers** (nothing to count). Formatting a ``float`` or an
  ``int`` runs no tensor op. Reading a tensor to log it (``loss.item()``,
  ``f"{loss:.3f}"``, ``print(loss)``) is a sync on an accelerator and is counted
  at the user's line.
* **Progress bars** (as their parts). ``tqdm(loader)`` iterates the loader: data
  loading. Its own formatting of numbers: nothing. A tensor handed to it
  (``bar.set_postfix(loss=loss)``) is read inside tqdm: counted, at the user's line
  that handed it over, naming the tqdm line it went through.
* **Metric accumulation on host values** (nothing, or one event). Python numbers
  (``total += loss.item()`` counts the ``.item()`` only) run no op. A copy to the
  host read at once (``out.cpu().numpy()``, ``.cpu().tolist()``,
  ``.to("cpu").numpy()``, ``float(x.cpu())``) is one device-to-host copy, not a
  copy and a sync. A host tensor built later from such copies
  (``torch.cat(kept).numpy()`` on another line) cannot be told apart, on a CPU
  run, from a tensor that would sit on the accelerator; its reads are listed as
  would-be syncs.
* **Host bookkeeping inside torch** (left out). Optimizer step counters and NAdam's
  ``mu_product`` (unless the group is capturable or fused; ASGD keeps all of its state
  on the parameters' device) and ``torch.utils.data`` outside a loader
  (``random_split``'s permutation) stay on the host on every machine. What else an
  optimizer's ``step()`` reads is device work and counted: the loss its closure
  returns (``LBFGS``), norms of parameters and updates (``Adafactor``), state kept
  on the device (``ASGD``'s ``eta`` and ``mu``). The optimizer whose ``step()`` runs
  is known from torch's global step hooks, installed while an audit watches. A
  learning-rate scheduler reading the loss (``ReduceLROnPlateau.step(loss)``) is
  counted.
* **Loops that are not a DataLoader** (counted). A generator or a list of batches
  the program slices itself may hold device tensors in the accelerator run; the
  audit cannot know, so what it does counts as the training loop's.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

import torch
from torch.optim import optimizer as _optimizer
from torch.utils.data import dataloader
from torch.utils.hooks import RemovableHandle

__all__ = [
    "LOADER_CODES",
    "device_state",
    "forget_steps",
    "is_host_state",
    "loading",
    "watch_optimizer_steps",
]


# The loader's inner calls (not __iter__/__next__, which the program's own wrappers of a
# loader may stand in for): while one of their frames is on the stack, data loads.
_CALLS: tuple[tuple[type, str], ...] = (
    (dataloader.DataLoader, "_get_iterator"),
    *(
        (cls, name)
        for cls in (
            dataloader._BaseDataLoaderIter,
            dataloader._SingleProcessDataLoaderIter,
            dataloader._MultiProcessingDataLoaderIter,
        )
        for name in ("_reset", "_next_data")
        if name in vars(cls)
    ),
)
LOADER_CODES: frozenset[CodeType] = frozenset(vars(cls)[name].__code__ for cls, name in _CALLS)
"""The code objects whose frames mark data loading."""


def loading(frame: FrameType | None) -> bool:
    """Whether ``frame`` or a frame above it runs inside a DataLoader's fetch.

    Walks the whole stack (a dataset's ``__getitem__`` is user code under the loader's
    frame); called per recorded event, never per op.
    """
    codes = LOADER_CODES
    while frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


class _Stepping(threading.local):
    """Per thread: the optimizers whose ``step()`` is running, innermost last."""

    def __init__(self) -> None:
        self.optimizers: list[torch.optim.Optimizer] = []


_STEPPING = _Stepping()
# Scalar state torch creates without a device (so on the host) unless the group is
# capturable or fused; ASGD creates every state tensor on the parameter's device
_HOST_KEYS = frozenset({"step", "mu_product"})
_DEVICE_STATE: tuple[type, ...] = (torch.optim.ASGD,)
# per optimizer: (how many parameters had state, ids of its host-side state tensors)
_HOST_IDS: weakref.WeakKeyDictionary[torch.optim.Optimizer, tuple[int, frozenset[int]]] = (
    weakref.WeakKeyDictionary()
)


_STEPPED: weakref.WeakSet[torch.optim.Optimizer] = weakref.WeakSet()


def _pre_step(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    _HOST_IDS.pop(opt, None)  # state may have been replaced since (load_state_dict)
    _STEPPING.optimizers.append(opt)
    _STEPPED.add(opt)


def device_state(on_device: Callable[[torch.Tensor], bool]) -> set[int]:
    """Ids of the state tensors of the optimizers that stepped while an audit watched,
    kept next to parameters ``on_device`` says are on the device (step counters torch
    keeps on the host left out)."""
    found: set[int] = set()
    for opt in list(_STEPPED):
        host = _host_ids(opt)
        for param, state in list(opt.state.items()):
            if isinstance(param, torch.Tensor) and on_device(param):
                found.update(
                    id(v)
                    for v in state.values()
                    if isinstance(v, torch.Tensor) and id(v) not in host
                )
    return found


def _post_step(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    stack = _STEPPING.optimizers
    if stack and stack[-1] is opt:
        stack.pop()


def watch_optimizer_steps() -> list[RemovableHandle]:
    """Hear which optimizer's ``step()`` runs, through torch's global step hooks.

    Returns:
        The hooks' handles; remove them when the audit ends.
    """
    return [
        _optimizer.register_optimizer_step_pre_hook(_pre_step),
        _optimizer.register_optimizer_step_post_hook(_post_step),
    ]


def forget_steps() -> None:
    """Forget the optimizers this thread saw step (one that raised never told it ended)."""
    _STEPPING.optimizers.clear()


def _host_ids(opt: torch.optim.Optimizer) -> frozenset[int]:
    known = _HOST_IDS.get(opt)
    if known is not None and known[0] == len(opt.state):
        return known[1]
    ids: set[int] = set()
    if not isinstance(opt, _DEVICE_STATE):
        for group in opt.param_groups:
            if group.get("capturable") or group.get("fused"):
                continue
            for param in group["params"]:
                for key, value in opt.state.get(param, {}).items():
                    if key in _HOST_KEYS and isinstance(value, torch.Tensor):
                        ids.add(id(value))
    found = frozenset(ids)
    _HOST_IDS[opt] = (len(opt.state), found)
    return found


def is_host_state(tensor: torch.Tensor | None) -> bool:
    """Whether a read made by ``torch.optim`` or ``torch.utils.data`` code is host bookkeeping.

    Outside an optimizer's ``step()`` (``random_split``, loading a state dict): yes.
    Inside one: only when ``tensor`` is the stepping optimizer's scalar state that torch
    keeps on the host (a step counter, NAdam's ``mu_product``), not a loss, a norm or
    state on the device.
    """
    stack = _STEPPING.optimizers
    if not stack:
        return True
    if tensor is None:
        return False
    return id(tensor) in _host_ids(stack[-1])

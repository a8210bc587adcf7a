"""The other libraries' ways of moving a batch, each an optional import.

A suite asks for a competitor and gets a :class:`Strategy`; when the library is
not installed the strategy carries the reason instead of a function, and the
suite reports a "not installed" row rather than failing.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import torch

LeafOp = Callable[["torch.Tensor"], "torch.Tensor"]


@dataclass(frozen=True)
class Strategy:
    """A named way to process a batch, or the reason it is unavailable.

    Attributes:
        label: Shown in the table, e.g. ``"accelerate send_to_device"``.
        run: Takes the batch and returns the moved batch; ``None`` when unavailable.
        missing: Why ``run`` is ``None`` (``"not installed: accelerate"``).
    """

    label: str
    run: Callable[[Any], Any] | None
    missing: str | None = None


def optional_import(name: str) -> ModuleType | None:
    """Import ``name``, or return ``None`` when it (or one of its imports) is missing."""
    try:
        # Third-party import-time deprecation warnings are not the bench's
        # business, and under `-W error` they would abort the whole run.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(name)
    except ImportError:
        return None


def version_of(module: ModuleType) -> str:
    """The module's ``__version__``, or ``"?"``."""
    return str(getattr(module, "__version__", "?"))


def accelerate_send(device: torch.device | str, *, non_blocking: bool = False) -> Strategy:
    """``accelerate.utils.send_to_device(batch, device, non_blocking=...)``."""
    label = "accelerate send_to_device"
    module = optional_import("accelerate.utils")
    if module is None:
        return Strategy(label, None, "not installed: accelerate")
    send = module.send_to_device
    top = optional_import("accelerate")
    if top is not None:
        label = f"accelerate {version_of(top)} send_to_device"
    return Strategy(label, lambda batch: send(batch, device, non_blocking=non_blocking))


def lightning_move(device: torch.device) -> Strategy:
    """Lightning's batch mover, from whichever Lightning package is installed.

    ``lightning.fabric`` (or the standalone ``lightning_fabric``) provides
    ``move_data_to_device``; with only ``lightning-utilities`` installed the
    equivalent is ``apply_to_collection(batch, Tensor, t.to(device, non_blocking=True))``,
    which is what ``move_data_to_device`` does for CUDA targets. The label says which.
    """
    for name in ("lightning.fabric.utilities.apply_func", "lightning_fabric.utilities.apply_func"):
        module = optional_import(name)
        if module is not None:
            move = module.move_data_to_device
            package = name.split(".utilities", 1)[0]
            return Strategy(f"{package} move_data_to_device", _bind_device(move, device))
    apply = _lightning_apply()
    if apply is None:
        return Strategy(
            "lightning move_data_to_device",
            None,
            "not installed: lightning, lightning_fabric or lightning-utilities",
        )
    return Strategy(
        "lightning-utilities apply_to_collection(.to)",
        lambda batch: apply(batch, _tensor_type(), lambda t: t.to(device, non_blocking=True)),
    )


def lightning_apply(op: LeafOp) -> Strategy:
    """``lightning_utilities.apply_to_collection(batch, Tensor, op)``."""
    apply = _lightning_apply()
    if apply is None:
        return Strategy(
            "lightning-utilities apply_to_collection", None, "not installed: lightning-utilities"
        )
    return Strategy(
        "lightning-utilities apply_to_collection",
        lambda batch: apply(batch, _tensor_type(), op),
    )


def pytree_map(op: LeafOp) -> Strategy:
    """``torch.utils._pytree.tree_map`` applying ``op`` to tensor leaves."""
    import torch
    from torch.utils import _pytree

    def leaf(x: Any) -> Any:
        return op(x) if isinstance(x, torch.Tensor) else x

    return Strategy("torch.utils._pytree.tree_map", lambda batch: _pytree.tree_map(leaf, batch))


def optree_map(op: LeafOp) -> Strategy:
    """A bare ``optree.tree_map(op, batch)``: the floor for any optree-based walker."""
    module = optional_import("optree")
    if module is None:
        return Strategy("optree.tree_map (bare)", None, "not installed: optree")
    tree_map = module.tree_map
    return Strategy("optree.tree_map (bare)", lambda batch: tree_map(op, batch))


def tensordict_consolidate(device: torch.device) -> Strategy:
    """``TensorDict(batch, batch_size=[]).consolidate().to(device, non_blocking=True)``."""
    module = optional_import("tensordict")
    if module is None:
        return Strategy("tensordict consolidate+to", None, "not installed: tensordict")
    tensordict_type = module.TensorDict

    def run(batch: Any) -> Any:
        packed = tensordict_type(batch, batch_size=[]).consolidate()
        return packed.to(device, non_blocking=True)

    return Strategy(f"tensordict {version_of(module)} consolidate+to", run)


def torchport_to_device(device: torch.device | str, **kwargs: Any) -> Strategy:
    """``torchport.to_device(batch, device, **kwargs)``."""
    suffix = ", ".join(f"{key}={value!r}" for key, value in kwargs.items())
    label = f"torchport.to_device({suffix})" if suffix else "torchport.to_device"
    try:
        from torchport.place import to_device
    except ImportError:
        return Strategy(label, None, "unavailable: this build has no torchport.to_device")
    return Strategy(label, lambda batch: to_device(batch, device, **kwargs))


def _bind_device(move: Callable[..., Any], device: torch.device) -> Callable[[Any], Any]:
    return lambda batch: move(batch, device)


def _lightning_apply() -> Callable[..., Any] | None:
    module = optional_import("lightning_utilities.core.apply_func")
    return None if module is None else cast(Callable[..., Any], module.apply_to_collection)


def _tensor_type() -> type:
    import torch

    return torch.Tensor

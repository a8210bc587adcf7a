"""What names and values mean in one file: the checker's semantic model.

Scopes and bindings (:class:`ScopeMap`), which binding reaches a node, the
device checks that enclose it, where a value lives, and where a fix may write
``import torch`` and the one ``device``. Rules ask these through the walk's
:class:`~torchport.check._context.Context`. Nothing here imports the engine at
run time, nor torch.
"""

from __future__ import annotations

from torchport.check.semantic._binding import Binding, BindingKind, Scope, ScopeKind, TorchImport
from torchport.check.semantic._flow import FlowAnalysis
from torchport.check.semantic._guards import Guard, device_guard
from torchport.check.semantic._residence import (
    bound_value,
    known_device_object,
    known_on_cpu,
    known_on_device,
)
from torchport.check.semantic._scope import ScopeMap

__all__ = [
    "Binding",
    "BindingKind",
    "FlowAnalysis",
    "Guard",
    "Scope",
    "ScopeKind",
    "ScopeMap",
    "TorchImport",
    "bound_value",
    "device_guard",
    "known_device_object",
    "known_on_cpu",
    "known_on_device",
]

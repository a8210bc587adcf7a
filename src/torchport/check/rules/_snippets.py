"""Source lines that the fixes write, spelled out once for the rules' examples."""

from __future__ import annotations

__all__ = ["DEVICE_LINE"]

DEVICE_LINE = (
    "device = torch.accelerator.current_accelerator() "
    'if torch.accelerator.is_available() else torch.device("cpu")\n'
)

"""Staging buffers for ``feed``: the pool lives at the hardware floor; these are its names.

Kept so ``torchport.feed._staging`` imports keep working; new code imports
``torchport.hardware``.
"""

from __future__ import annotations

from torchport.hardware._staging import StagingPool, default_pool

__all__ = ["StagingPool", "default_pool"]

"""torchport.feed: host-to-device copies that overlap compute and fill the link."""

from __future__ import annotations

from torchport.feed._loader import DeviceLoader
from torchport.feed._pack import pack_to_device, should_pack
from torchport.feed._stats import FeedStats
from torchport.hardware import StagingPool

__all__ = ["DeviceLoader", "FeedStats", "StagingPool", "pack_to_device", "should_pack"]

"""The pytest plugin torchport gives its users: a ``device`` fixture and a ``devices`` marker.

pytest loads the plugin by itself (entry point ``pytest11``); nothing needs importing.
"""

from __future__ import annotations

from torchport.testing._plugin import default_devices, missing_reason

__all__ = ["default_devices", "missing_reason"]

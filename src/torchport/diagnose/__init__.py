"""diagnose: which tensor is on the wrong device, where code copies or waits, is the environment right."""

from __future__ import annotations

__all__: list[str] = []

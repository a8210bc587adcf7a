"""Measured host<->device copy bandwidth, pinned and pageable, each way.

Each copy is timed on the device's own clock (``torch.Event`` with timing) where the backend
has one, and by the host clock around a synchronize elsewhere (MPS). The source is refilled
with fresh random bytes before every copy so no layer can serve a cached or compressed page,
the first copies are discarded as warm-up, and the median of the rest is reported.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from torchport import hardware
from torchport._device_types import CUDA, HOST_TYPES, XPU

__all__ = ["NOT_REQUESTED", "CopyBandwidth", "measure_bandwidth", "median_rate"]

NOT_REQUESTED = "not measured"
"""``CopyBandwidth.reason`` when no measurement was asked for; the renderer says how to ask."""

_EVENT_TIMED = (CUDA, XPU)


@dataclass(frozen=True)
class CopyBandwidth:
    """Copy bandwidth in GB/s (10^9 bytes per second), ``None`` where not measured.

    Attributes:
        device: The device copied to and from; ``None`` when not applicable.
        size_bytes: Bytes per copy.
        repeats: Timed copies per figure (the median is reported).
        h2d_pinned: Host to device from pinned (page-locked) memory.
        h2d_pageable: Host to device from ordinary memory.
        d2h_pinned: Device to host into pinned memory.
        d2h_pageable: Device to host into ordinary memory.
        reason: Why nothing (or not everything) was measured.
        link: The PCIe link the device sits on, at its rated speed (``"PCIe 32 GT/s
            x16"``); ``None`` where unknown (not Linux, not PCIe, not CUDA).
        link_peak: That link's peak one way in GB/s, after line encoding (63.0 for
            PCIe 5.0 x16): what the pinned figures are measured against.
    """

    device: str | None
    size_bytes: int = 0
    repeats: int = 0
    h2d_pinned: float | None = None
    h2d_pageable: float | None = None
    d2h_pinned: float | None = None
    d2h_pageable: float | None = None
    reason: str | None = None
    link: str | None = None
    link_peak: float | None = None


def measure_bandwidth(
    device: torch.device, *, size_bytes: int = 64 * 2**20, repeats: int = 7, warmup: int = 2
) -> CopyBandwidth:
    """Measure pinned and pageable copy bandwidth between the host and ``device``.

    Synchronizes the device after every copy; allocates ``size_bytes`` on the device and
    up to twice that in host memory for the duration.

    Args:
        device: An accelerator device; on ``cpu`` the result says why it is not applicable.
        size_bytes: Bytes per copy.
        repeats: Timed copies per figure.
        warmup: Untimed copies before them.

    Returns:
        The four medians, or ``None`` each with ``reason`` where not measurable.
    """
    if device.type in HOST_TYPES:
        return CopyBandwidth(
            device=None,
            reason=f"not applicable: {device.type} has no separate device memory to copy to",
        )
    if device.index is None:
        device = torch.device(device.type, hardware.current_index(device.type))
    on_device = torch.empty(size_bytes, dtype=torch.uint8, device=device)
    pageable = torch.empty(size_bytes, dtype=torch.uint8)
    reason: str | None = None
    try:
        pinned: torch.Tensor | None = torch.empty(size_bytes, dtype=torch.uint8, pin_memory=True)
    except RuntimeError as exc:
        pinned = None
        reason = f"pinned memory unavailable: {str(exc).splitlines()[0]}"

    def rate(dst: torch.Tensor, src: torch.Tensor, async_ok: bool) -> float:
        times = [
            _time_copy(dst, src, device, non_blocking=async_ok) for _ in range(warmup + repeats)
        ]
        return median_rate(times, size_bytes, warmup=warmup)

    link = hardware.pcie_link(device)
    return CopyBandwidth(
        device=str(device),
        size_bytes=size_bytes,
        repeats=repeats,
        h2d_pinned=rate(on_device, pinned, True) if pinned is not None else None,
        h2d_pageable=rate(on_device, pageable, False),
        d2h_pinned=rate(pinned, on_device, True) if pinned is not None else None,
        d2h_pageable=rate(pageable, on_device, False),
        reason=reason,
        link=None if link is None else str(link),
        link_peak=None if link is None else link.peak_gbps,
    )


def median_rate(seconds: list[float], size_bytes: int, *, warmup: int) -> float:
    """GB/s of the median copy time after dropping the first ``warmup`` times.

    The first copies pay for lazy initialization (pinned-memory registration, the copy
    engine's first use), so they say nothing about the link.
    """
    timed = seconds[warmup:]
    if not timed:
        raise ValueError(f"no timed copies: {len(seconds)} times with warmup={warmup}")
    return size_bytes / statistics.median(timed) / 1e9


def _time_copy(
    dst: torch.Tensor, src: torch.Tensor, device: torch.device, *, non_blocking: bool
) -> float:
    """Seconds for one ``dst.copy_(src)``, with ``src`` refilled with fresh random bytes."""
    src.random_()
    hardware.synchronize(device)
    if device.type in _EVENT_TIMED:
        stream = hardware.current_stream(device)
        start = hardware.new_event(timing=True)
        end = hardware.new_event(timing=True)
        start.record(stream)
        dst.copy_(src, non_blocking=non_blocking)
        end.record(stream)
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    begin = time.perf_counter()
    dst.copy_(src, non_blocking=non_blocking)
    hardware.synchronize(device)
    return time.perf_counter() - begin


CopyBandwidth.__module__ = "torchport"

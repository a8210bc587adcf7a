"""The PCIe link between the host and a CUDA device, as Linux reports it, and its peak rate.

``doctor --bandwidth`` sets the copies it measures beside what the link can carry:
one direction of PCIe moves ``GT/s x lanes x encoding / 8`` GB/s (the encoding is
128b/130b from PCIe 3.0's 8 GT/s on, 8b/10b below). The link is read from sysfs
(``max_link_speed``, ``max_link_width`` of the device's PCI function), found by the
PCI address the backend reports; anywhere that is not there (another OS, a device not on
PCIe, a torch without the address) the link is unknown, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from torchport._device_types import CUDA
from torchport.hardware import _backend

__all__ = ["PcieLink", "pcie_link"]

_PCI_DEVICES = Path("/sys/bus/pci/devices")


@dataclass(frozen=True)
class PcieLink:
    """A PCIe link at its rated speed.

    Attributes:
        transfers: Giga-transfers per second per lane (``32.0`` for PCIe 5.0).
        lanes: Its width (``16``).
    """

    transfers: float
    lanes: int

    @property
    def peak_gbps(self) -> float:
        """GB/s one way, after the line encoding: the most any copy can reach."""
        encoding = 128 / 130 if self.transfers >= 8 else 8 / 10
        return self.transfers * self.lanes * encoding / 8

    def __str__(self) -> str:
        return f"PCIe {self.transfers:g} GT/s x{self.lanes}"


def pcie_link(device: torch.device) -> PcieLink | None:
    """The rated PCIe link of a CUDA ``device`` (with an index); None where unknown."""
    if device.type != CUDA or device.index is None:
        return None
    address = _backend.ACTIVE.pci_address(device.type, device.index)
    if address is None:
        return None
    domain, bus, slot = address
    function = _PCI_DEVICES / f"{domain:04x}:{bus:02x}:{slot:02x}.0"
    try:
        speed = (function / "max_link_speed").read_text(encoding="ascii").split()[0]
        width = (function / "max_link_width").read_text(encoding="ascii").strip()
        link = PcieLink(transfers=float(speed), lanes=int(width))
    except (OSError, ValueError, IndexError):
        return None
    return link if link.transfers > 0 and link.lanes > 0 else None

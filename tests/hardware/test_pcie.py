"""The PCIe link a CUDA device sits on, read from a faked sysfs, and its published peak rates."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from torchport.hardware import _pcie, pcie_link

CUDA0 = torch.device("cuda", 0)

# One direction of an x16 link, as the PCI-SIG's published figures put it (GB/s).
PUBLISHED_X16 = {"2.5": 4.0, "5.0": 8.0, "8.0": 15.75, "16.0": 31.5, "32.0": 63.0, "64.0": 126.0}


@pytest.fixture
def sysfs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A fake /sys/bus/pci/devices, with cuda:0 at 0000:1b:00.0."""
    props = SimpleNamespace(pci_domain_id=0, pci_bus_id=0x1B, pci_device_id=0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    monkeypatch.setattr(_pcie, "_PCI_DEVICES", tmp_path)
    function = tmp_path / "0000:1b:00.0"
    function.mkdir()
    return function


@pytest.mark.parametrize("speed", sorted(PUBLISHED_X16))
def test_the_peak_of_an_x16_link_is_the_published_one(sysfs: Path, speed: str) -> None:
    (sysfs / "max_link_speed").write_text(f"{speed} GT/s PCIe\n")
    (sysfs / "max_link_width").write_text("16\n")
    link = pcie_link(CUDA0)
    assert link is not None and (link.transfers, link.lanes) == (float(speed), 16)
    assert link.peak_gbps == pytest.approx(PUBLISHED_X16[speed], rel=0.01)
    assert str(link) == f"PCIe {float(speed):g} GT/s x16"


def test_a_narrower_link_scales_with_its_lanes(sysfs: Path) -> None:
    (sysfs / "max_link_speed").write_text("16.0 GT/s PCIe\n")
    (sysfs / "max_link_width").write_text("4\n")
    link = pcie_link(CUDA0)
    assert link is not None and link.peak_gbps == pytest.approx(31.5 / 4, rel=0.01)


@pytest.mark.parametrize(
    "files",
    [{}, {"max_link_speed": "Unknown\n", "max_link_width": "16\n"},
     {"max_link_speed": "32.0 GT/s PCIe\n", "max_link_width": "0\n"},
     {"max_link_speed": "\n", "max_link_width": "16\n"}],
    ids=["absent", "unknown-speed", "no-lanes", "empty"],
)  # fmt: skip
def test_an_unreadable_link_is_unknown_never_guessed(sysfs: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (sysfs / name).write_text(text)
    assert pcie_link(CUDA0) is None


def test_no_link_without_a_pci_address_or_off_cuda(
    sysfs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (sysfs / "max_link_speed").write_text("32.0 GT/s PCIe\n")
    (sysfs / "max_link_width").write_text("16\n")
    assert pcie_link(torch.device("cpu")) is None
    assert pcie_link(torch.device("cuda")) is None  # no index: which device is unknown
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: SimpleNamespace())
    assert pcie_link(CUDA0) is None

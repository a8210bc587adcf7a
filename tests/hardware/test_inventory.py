"""The inventory reads the backend: a faked backend of any type is reported whole.

A backend named nowhere in the inventory (``"npu"``, ``"sim"``) shows up in
``accelerator_info`` and ``gpu_properties`` as CUDA does: nothing in
``_inventory.py`` lists backends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from torchport import hardware
from torchport._device_types import ACCELERATOR_TYPES

GIB = 1 << 30


@pytest.mark.parametrize("kind", ["cuda", "xpu", "npu", "musa", "sim"])
def test_accelerator_info_reports_the_backends_type(
    fake_accelerator: Callable[..., Any], kind: str
) -> None:
    fake_accelerator([GIB, GIB, None], kind=kind)
    info = hardware.accelerator_info()
    assert (info.current, info.count) == (kind, 3)
    assert info.built == info.available == (kind,)
    assert info.cuda_available is (kind == "cuda")
    assert info.xpu_available is (kind == "xpu")
    assert not info.mps_built and not info.mps_available


@pytest.mark.parametrize("kind", ["cuda", "xpu", "npu"])
def test_gpu_properties_lists_each_device(fake_accelerator: Callable[..., Any], kind: str) -> None:
    fake_accelerator([GIB, GIB], kind=kind)
    found = hardware.gpu_properties(kind)
    assert [p.device for p in found] == [f"{kind}:0", f"{kind}:1"]
    assert all(p.total_memory == 80 * GIB for p in found)
    other = "mps" if kind != "mps" else "cuda"
    assert hardware.gpu_properties(other) == ()


def test_allocator_stat_refuses_what_is_no_counter() -> None:
    import torch

    with pytest.raises(LookupError, match="not an allocator counter"):
        hardware.allocator_stat(torch.device("cpu"), "bytes_in_use")


def test_the_real_backend_answers_for_every_type_without_raising() -> None:
    backend = hardware.Backend()
    for kind in sorted(ACCELERATOR_TYPES):
        assert isinstance(backend.built(kind), bool)
        assert isinstance(backend.available(kind), bool)
    assert backend.available("xla") is False and backend.built("xla") is False


# -- the driver's version where torch has no getter for it -------------------------------


class _DriverLibrary:
    """``libcuda`` as ctypes loads it: ``cuDriverGetVersion(int*)`` writes ``version``."""

    def __init__(self, version: int, status: int = 0) -> None:
        self.version, self.status = version, status

    def cuDriverGetVersion(self, out: Any) -> int:
        out._obj.value = self.version
        return self.status


@pytest.mark.parametrize(
    ("library", "expected"),
    [(_DriverLibrary(13000), 13000), (_DriverLibrary(13000, status=3), 0), (OSError, 0)],
    ids=["driver", "driver-refuses", "no-driver"],
)
def test_driver_version_asks_the_driver_library_when_torch_has_no_getter(
    monkeypatch: pytest.MonkeyPatch, library: Any, expected: int
) -> None:
    import sys

    import torch

    from torchport.hardware import _inventory, _torch_features

    def load(name: str) -> Any:
        assert name == {"linux": "libcuda.so.1", "win32": "nvcuda.dll"}[sys.platform]
        if library is OSError:
            raise OSError(f"{name}: cannot open shared object file")
        return library

    monkeypatch.setattr(_torch_features, "cuda_private", lambda name: None)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(_inventory.ctypes, "CDLL", load)
    if sys.platform not in ("linux", "win32"):
        pytest.skip("the driver library is looked up on Linux and Windows")
    assert _inventory.driver_version() == expected


def test_driver_version_is_none_for_a_build_without_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from torchport.hardware import _inventory, _torch_features

    monkeypatch.setattr(_torch_features, "cuda_private", lambda name: None)
    monkeypatch.setattr(torch.version, "cuda", None)
    assert _inventory.driver_version() is None

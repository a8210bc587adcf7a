"""pytest plugin: a ``device`` fixture and a ``devices`` marker that run a test once per device.

Loaded by pytest (entry point ``pytest11``) in every run of every project in
the environment, so importing it must stay cheap: torch is imported only when a
collected test asks for ``device``.

* ``@pytest.mark.devices("cpu", "cuda", "mps")`` runs the test once per listed
  device, with ids ``[cpu]``, ``[cuda]``, ``[mps]``. A device this machine lacks
  is skipped with the reason, e.g. ``cuda not available on this machine``.
  ``"meta"`` and indexed devices (``"cuda:1"``) are accepted.
* A test that takes ``device`` without the marker runs on ``cpu`` plus the
  accelerator ``torch.accelerator`` reports, if any; the environment variable
  ``TORCHPORT_TEST_DEVICES=cpu,meta`` replaces that default list.
* ``"sim"`` is the simulated accelerator (real values, CUDA's device rules, on any
  machine): ``TORCHPORT_TEST_DEVICES=cpu,sim`` runs device tests in a CPU-only CI.
* The ``device`` argument is a :class:`torch.device`, with an index for accelerators.

A project that defines its own ``device`` fixture keeps it: the plugin only
parametrizes tests that use the plugin's fixture. With torchport's checker-only
install (no torch), the plugin stays inert at collection and a test that asks
for its ``device`` fails, saying to install the runtime extra.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import torch

__all__ = ["default_devices", "device", "missing_reason"]

_ENV = "TORCHPORT_TEST_DEVICES"
_MARKER = (
    "devices(*names): run the test once per device ('cpu', 'cuda', 'mps', 'meta', 'cuda:1', ...) "
    "through the `device` fixture; devices this machine lacks are skipped"
)


def _runtime_missing() -> str | None:
    """Why the plugin's fixture cannot run here (no torch), or None."""
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        return None
    return (
        "torchport's `device` fixture and `devices` marker need torch, which is not "
        "installed here (torchport's checker-only install); install the runtime: "
        "pip install 'torchport[torch]'"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("devices")
    if "device" not in metafunc.fixturenames:
        if marker is not None:
            pytest.fail(
                f"{metafunc.definition.nodeid} is marked devices(...) but takes no 'device' "
                "argument; add a `device` parameter or drop the marker",
                pytrace=False,
            )
        return
    if not _uses_plugin_fixture(metafunc) or _parametrized_directly(metafunc):
        return
    if _runtime_missing():
        return  # inert: the fixture says why when a test asks for it
    names = [str(name) for name in marker.args] if marker is not None else default_devices()
    if not names:
        pytest.fail(
            f"{metafunc.definition.nodeid}: devices() needs at least one device", pytrace=False
        )
    params = []
    for name in names:
        reason = missing_reason(name)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        params.append(pytest.param(name, id=name, marks=marks))
    metafunc.parametrize("device", params, indirect=True)


@pytest.fixture
def device(request: pytest.FixtureRequest) -> torch.device:
    """The device this run of the test is for; see the module docstring."""
    missing = _runtime_missing()
    if missing:
        pytest.fail(missing, pytrace=False)
    from torchport import hardware, place
    from torchport._device_types import CPU, HOST_TYPES

    device = hardware.device_spec(getattr(request, "param", CPU))
    if device.index is None and device.type not in HOST_TYPES:
        # A bare "cuda" or "sim" is the device pick_device would choose, with its index,
        # so `tensor.device == device` holds for what the test makes there.
        return place.pick_device(device.type)
    return device


def default_devices() -> list[str]:
    """Devices for tests that take ``device`` without the ``devices`` marker."""
    configured = os.environ.get(_ENV, "").strip()
    if configured:
        return [name.strip() for name in configured.split(",") if name.strip()]
    from torchport import hardware
    from torchport._device_types import CPU

    accelerator = hardware.accelerator_type()
    return [CPU] if accelerator is None else [CPU, accelerator]


def missing_reason(name: str) -> str | None:
    """Why the device ``name`` cannot run tests here, or None when it can.

    Fails the collecting test (``pytest.fail``) when ``name`` is not a device string.
    """
    from torchport import hardware
    from torchport._device_types import HOST_TYPES
    from torchport.errors import DeviceError

    if hardware.named_type(name) == "sim":
        from torchport.sim import simulate_accelerator

        simulate_accelerator()  # "sim" is always available: it is installed on first use
    dev = None
    if isinstance(name, str):
        with contextlib.suppress(DeviceError):
            dev = hardware.device_spec(name, argument="devices()")
    if dev is None:  # failed outside the except block, so the report shows no chained error
        pytest.fail(
            f"devices() got {name!r}, which is not a device; use e.g. 'cpu', 'cuda', 'mps', "
            "'meta' or 'cuda:1'",
            pytrace=False,
        )
    if dev.type in HOST_TYPES:
        return None
    count = hardware.device_count(dev.type)
    if count == 0:
        return f"{dev.type} not available on this machine"
    if dev.index is not None and dev.index >= count:
        return f"{dev} not available on this machine (it has {count} {dev.type} device(s))"
    return None


def _uses_plugin_fixture(metafunc: pytest.Metafunc) -> bool:
    """Whether the ``device`` the test gets is this plugin's, not one the project defines."""
    # _arg2fixturedefs is pytest-internal; without it, assume ours (the common case).
    definitions = getattr(metafunc, "_arg2fixturedefs", {}).get("device")
    if not definitions:
        return True
    return getattr(definitions[-1].func, "__module__", None) == __name__


def _parametrized_directly(metafunc: pytest.Metafunc) -> bool:
    """Whether the test parametrizes ``device`` itself, with ``@pytest.mark.parametrize``."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [name.strip() for name in names.split(",")]
        if "device" in names:
            return True
    return False

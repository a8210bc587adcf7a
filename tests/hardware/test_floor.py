"""Only the backend asks torch about hardware.

Every ``torch.cuda``/``torch.mps``/``torch.xpu``/``torch.accelerator`` call, the
backends' availability flags and the private CUDA getters are made in
``hardware/_backend.py`` (the object tests replace with a fake) or in
``hardware/_torch_features.py`` (which knows torch's version and feature-tests it);
every other module of the floor asks the backend, and every other part asks
the floor (the few exceptions are listed with their reasons). Read from the source
with ``ast``, so docstrings and messages that name those APIs do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from torchport._device_types import ACCELERATOR_TYPES

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "torchport"

# torch's device modules: every accelerator of the vocabulary (`torch.npu` once an extension
# registers it), and the generic one.
HARDWARE_MODULES = frozenset({*ACCELERATOR_TYPES, "accelerator"})
HARDWARE_BACKENDS = ("cuda", "cudnn", "mps")

# Code that must name the hardware API itself, and why.
ALLOWED = {
    # torchport run's stand-ins replace torch.cuda's API while a script is redirected.
    "run/_cuda_shim.py",
    "run/_torch_shim.py",
    "run/_redirect.py",
    # The simulated accelerator makes torch.accelerator's C++-only functions answer for it.
    "sim/_install.py",
    # A baseline written the way users write it, which DeviceLoader is measured against.
    "bench/_suite_loader.py",
}


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _backend_lookup(node: ast.AST) -> str | None:
    """``getattr(torch, kind)``: a device module looked up by a name the scan cannot read."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and _dotted(node.args[0]) == "torch"
    ):
        return None
    name = node.args[1]
    if isinstance(name, ast.Constant) and name.value not in HARDWARE_MODULES:
        return None  # `getattr(torch, "float8_e4m3fn", None)`: no device module
    return f"getattr(torch, {ast.unparse(name)})"


def hardware_calls(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    found = []
    for node in ast.walk(tree):
        lookup = _backend_lookup(node)
        if lookup is not None:
            found.append((node.lineno, lookup))
        if not isinstance(node, ast.Attribute) or id(node) in inner:
            continue
        name = _dotted(node)
        if name is None:
            continue
        parts = name.split(".")
        if parts[0] != "torch" or len(parts) < 2:
            continue
        if (
            parts[1] in HARDWARE_MODULES  # `torch.cuda.x`, and `torch.cuda` handed on as a value
            or (parts[1] == "backends" and parts[2:3] and parts[2] in HARDWARE_BACKENDS)
            or (parts[1] == "_C" and parts[2:3] and parts[2].startswith("_cuda"))
        ):
            found.append((node.lineno, name))
    return sorted(set(found))


SOURCES = sorted(
    path
    for path in PACKAGE.rglob("*.py")
    if path.relative_to(PACKAGE).parts[0] not in ("hardware", "check")
)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_floor_asks_torch_about_hardware(path: Path) -> None:
    if str(path.relative_to(PACKAGE)) in ALLOWED:
        pytest.skip("allowed: see ALLOWED")
    assert hardware_calls(path.read_text(encoding="utf-8")) == []


# Inside the floor: the backend, and the module that feature-tests torch's version.
BACKEND_MODULES = {
    "_backend.py": "the backend tests replace with a fake",
    "_torch_features.py": "the one place that knows torch's version: feature tests, getters",
}
FLOOR_SOURCES = sorted((PACKAGE / "hardware").glob("*.py"))


@pytest.mark.parametrize("path", FLOOR_SOURCES, ids=lambda p: p.name)
def test_inside_the_floor_only_the_backend_asks(path: Path) -> None:
    if path.name in BACKEND_MODULES:
        pytest.skip(f"allowed: {BACKEND_MODULES[path.name]}")
    assert hardware_calls(path.read_text(encoding="utf-8")) == []


def test_the_scan_sees_calls_and_ignores_text() -> None:
    source = (
        '"""torch.cuda.is_available() in a docstring does not count."""\n'
        "import torch\n"
        "n = torch.cuda.device_count()\n"
        "f = torch.backends.mps.is_available\n"
        "g = torch._C._cuda_getDriverVersion\n"
        "ok = torch.nn.Linear\n"
        "m = getattr(torch, device.type, None)\n"
        "npu = torch.npu.synchronize\n"
        "mod = torch.mtia\n"
        "dtype = getattr(torch, 'float8_e4m3fn', None)\n"
        "ok = torch.device\n"
    )
    names = [name for _, name in hardware_calls(source)]
    assert names == [
        "torch.cuda.device_count",
        "torch.backends.mps.is_available",
        "torch._C._cuda_getDriverVersion",
        "getattr(torch, device.type)",
        "torch.npu.synchronize",
        "torch.mtia",
    ]


# Outside the floor, code that may wait on the host for a device or make streams and events.
WAITS_ALLOWED = {
    "sim/": "the simulated accelerator's own queue",
    "run/": "torchport run's stand-ins for torch.cuda's streams and events",
    "diagnose/_bandwidth.py": "times copies with its own events, as doctor --bandwidth reports",
    "bench/_timing.py": "times with its own events",
}
_MAKERS = {"torch.Stream", "torch.Event"}


def host_waits(source: str) -> list[tuple[int, str]]:
    """(line, call) of each ``.synchronize()`` call and each stream or event made."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = _dotted(node.func) or node.func.attr
        if name.startswith("hardware."):
            continue  # asking the floor is the point
        if node.func.attr == "synchronize" or name in _MAKERS:
            found.append((node.lineno, name))
    return found


def _waits_allowed(relative: str) -> bool:
    return any(relative == a or (a.endswith("/") and relative.startswith(a)) for a in WAITS_ALLOWED)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_host_waits_streams_and_events_come_from_the_floor(path: Path) -> None:
    """``hardware/__init__.py``: synchronize/wait_for_copies are the host waits of the runtime."""
    relative = path.relative_to(PACKAGE).as_posix()
    if _waits_allowed(relative):
        pytest.skip("allowed: see WAITS_ALLOWED")
    assert host_waits(path.read_text(encoding="utf-8")) == []


def test_the_wait_scan_finds_waits() -> None:
    source = "end.synchronize()\ntorch.cuda.synchronize()\ns = torch.Stream()\nx.sum()\n"
    assert [name for _, name in host_waits(source)] == [
        "end.synchronize",
        "torch.cuda.synchronize",
        "torch.Stream",
    ]

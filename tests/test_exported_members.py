"""Pins the public surface: adding or removing a name is a deliberate act."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
import textwrap

import pytest

import torchport

EXPECTED = [
    "AcceleratorInfo",
    "AuditEntry",
    "AuditReport",
    "ConfigError",
    "CopyBandwidth",
    "CudaToolkit",
    "DeviceChoice",
    "DeviceError",
    "DeviceInfo",
    "DeviceLoader",
    "DeviceMismatchError",
    "DoctorFinding",
    "DoctorReport",
    "DriverInfo",
    "FeedStats",
    "GpuInfo",
    "HostInfo",
    "MemoryReport",
    "MissingDependencyError",
    "OomCase",
    "OomExplanation",
    "RedirectError",
    "Severity",
    "TorchBuild",
    "TorchportError",
    "UnregisteredTensorWarning",
    "UnsupportedBatchError",
    "__version__",
    "audit",
    "available_devices",
    "doctor",
    "explain_oom",
    "memory_report",
    "pick_device",
    "pick_device_with_reason",
    "redirect",
    "strict",
    "to_device",
]


def test_all_is_pinned_and_sorted() -> None:
    assert torchport.__all__ == EXPECTED
    assert sorted(torchport.__all__) == torchport.__all__


def test_every_exported_name_resolves() -> None:
    for name in torchport.__all__:
        value = getattr(torchport, name)
        module = getattr(value, "__module__", None)
        if module is not None and not name.startswith("__"):
            assert module == "torchport", f"{name}.__module__ is {module!r}; set it to 'torchport'"


def test_unknown_name_raises_attribute_error() -> None:
    try:
        torchport.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_torchport_is_lazy() -> None:
    code = "import sys, torchport, torchport.errors; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_dir_shows_only_public_names() -> None:
    assert dir(torchport) == sorted(torchport.__all__)


# --- every type a public API hands back is itself public --------------------------------


def _torchport_classes() -> dict[str, set[type]]:
    """Every public-named class in torchport's runtime modules, by name."""
    found: dict[str, set[type]] = {}
    skip = ("check", "cli", "bench", "testing", "port", "__main__")
    for info in pkgutil.walk_packages(torchport.__path__, "torchport."):
        if info.name.split(".")[1] in skip:
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            public = isinstance(value, type) and not name.startswith("_")
            if public and value.__module__.startswith("torchport"):
                found.setdefault(value.__name__, set()).add(value)
    return found


def test_every_type_a_public_api_returns_is_exported() -> None:
    """Walks return annotations, dataclass fields and properties from ``__all__`` outwards.

    Annotations are read as text (names under ``TYPE_CHECKING`` cannot be evaluated)
    and each identifier is matched against torchport's own classes.
    """
    classes = _torchport_classes()
    seen: set[type] = set()
    unexported: dict[str, str] = {}

    def annotation(text: object, where: str) -> None:
        for word in re.findall(r"[A-Za-z_]\w*", str(text)):
            for cls in classes.get(word, ()):
                visit(cls, where)

    def visit(cls: type, where: str) -> None:
        if cls in seen:
            return
        seen.add(cls)
        if getattr(torchport, cls.__name__, None) is not cls:
            unexported[cls.__name__] = where
        if dataclasses.is_dataclass(cls):
            for f in dataclasses.fields(cls):
                if not f.name.startswith("_"):
                    annotation(f.type, f"{cls.__name__}.{f.name}")
        for name, member in vars(cls).items():
            fn = member.fget if isinstance(member, property) else member
            if not name.startswith("_") and inspect.isfunction(fn):
                annotation(fn.__annotations__.get("return", ""), f"{cls.__name__}.{name}()")

    for name in torchport.__all__:
        value = getattr(torchport, name)
        if isinstance(value, type):
            visit(value, name)
        elif callable(value):
            annotation(getattr(value, "__annotations__", {}).get("return", ""), f"{name}()")
    assert "DoctorReport" not in unexported  # the walk reaches what it should
    assert seen >= {torchport.DoctorReport, torchport.TorchBuild, torchport.OomExplanation}
    assert unexported == {}, f"returned by a public API but not exported: {unexported}"


# --- the runtime without torch ------------------------------------------------------

_NO_TORCH = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Block())
"""


@pytest.mark.parametrize("package", ["torch", "optree"])
def test_a_runtime_name_without_its_package_says_how_to_install_it(package: str) -> None:
    code = _NO_TORCH.format(blocked=[package]) + textwrap.dedent("""
        import torchport as tp
        import torchport.check  # the checker needs none of it
        try:
            tp.pick_device
        except tp.MissingDependencyError as exc:
            assert isinstance(exc, ImportError) and isinstance(exc, tp.TorchportError)
            print(exc.name, '|', exc)
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    name, message = out.stdout.split(" | ", 1)
    assert name == package
    assert "torchport.pick_device" in message
    assert "pip install 'torchport[torch]'" in message


def test_an_error_inside_the_runtime_is_not_mistaken_for_a_missing_package() -> None:
    """Only the runtime's own packages turn into MissingDependencyError."""
    code = _NO_TORCH.format(blocked=["some_plugin_nobody_ships"]) + textwrap.dedent("""
        from torchport.errors import MissingDependencyError
        try:
            import some_plugin_nobody_ships
        except ModuleNotFoundError as exc:
            print(MissingDependencyError.of(exc, 'x'))
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "None", out.stderr

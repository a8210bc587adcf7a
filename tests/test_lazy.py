"""Import on first use (``torchport/_lazy.py``), one behaviour for every package that uses it."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

import torchport
import torchport.check
import torchport.check.files
import torchport.run
import torchport.testing
from torchport._lazy import lazy_exports
from torchport.errors import MissingDependencyError


def _package(monkeypatch: pytest.MonkeyPatch, body: str, exported: list[str]) -> dict[str, Any]:
    """A throwaway module ``_lazy_target`` holding ``body``, and a package namespace."""
    target = types.ModuleType("_lazy_target")
    exec(body, target.__dict__)
    monkeypatch.setitem(sys.modules, "_lazy_target", target)
    return {"__name__": "pkg", "__all__": exported}


def test_a_name_is_imported_once_then_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = _package(monkeypatch, "value = object()\n", ["value"])
    getattr_, dir_ = lazy_exports(namespace, {"value": "_lazy_target"})
    first = getattr_("value")
    assert first is sys.modules["_lazy_target"].value
    assert namespace["value"] is first  # later reads never reach __getattr__
    assert dir_() == ["value"]


def test_a_name_may_come_from_an_attribute_of_another_name(monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = _package(monkeypatch, "shipped = (1, 2)\n", ["RULES"])
    getattr_, _ = lazy_exports(namespace, {"RULES": "_lazy_target:shipped"})
    assert getattr_("RULES") == (1, 2)


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    getattr_, _ = lazy_exports({"__name__": "pkg", "__all__": []}, {})
    with pytest.raises(AttributeError, match=r"module 'pkg' has no attribute 'nope'"):
        getattr_("nope")


def test_a_lazy_name_must_be_exported() -> None:
    with pytest.raises(ValueError, match=r"\['hidden'\]"):
        lazy_exports({"__name__": "pkg", "__all__": []}, {"hidden": "json"})


def test_a_missing_runtime_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    getattr_, _ = lazy_exports({"__name__": "pkg", "__all__": ["f"]}, {"f": "_lazy_absent"})

    def import_module(name: str) -> types.ModuleType:
        raise ModuleNotFoundError(f"No module named {'optree'!r}", name="optree")

    monkeypatch.setattr("importlib.import_module", import_module)
    with pytest.raises(MissingDependencyError, match=r"pkg\.f needs the Python package"):
        getattr_("f")


def test_another_missing_module_is_not_dressed_up(monkeypatch: pytest.MonkeyPatch) -> None:
    getattr_, _ = lazy_exports({"__name__": "pkg", "__all__": ["f"]}, {"f": "_lazy_absent_module"})
    with pytest.raises(ModuleNotFoundError) as caught:
        getattr_("f")
    assert not isinstance(caught.value, MissingDependencyError)


@pytest.mark.parametrize(
    "package",
    [torchport, torchport.check, torchport.check.files, torchport.run, torchport.testing],
)
def test_every_lazy_package_lists_its_public_names_only(package: types.ModuleType) -> None:
    assert dir(package) == sorted(package.__all__)
    for name in package.__all__:
        assert getattr(package, name) is not None, name

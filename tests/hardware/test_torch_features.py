"""``hardware/_torch_features.py`` is the one place that knows torch's version, and answers right.

The scan reads the source with ``ast`` (as ``tests/test_layers.py`` does): a feature test
of torch (``hasattr(torch..., ...)``, ``getattr(torch..., "name", default)``, a signature
read, a ``check_available=`` call) or a comparison of torch's version anywhere else fails
here with its line. The answers are checked against torch 2.6's and 2.7's shapes of the
same API, and the floor against the one pyproject declares.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from torchport import hardware
from torchport.hardware import _torch_features

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "torchport"
HOME = PACKAGE / "hardware" / "_torch_features.py"


def _rooted_in_torch(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id == "torch"


def version_checks(source: str) -> list[tuple[int, str]]:
    """(line, code) of each feature test of torch or comparison of its version."""
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        code = ""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            name, first = node.func.id, node.args[0]
            attribute = node.args[1] if len(node.args) > 1 else None
            literal = isinstance(attribute, ast.Constant) and not str(attribute.value).startswith(
                "__"
            )
            if _rooted_in_torch(first) and (
                name == "hasattr" or (name == "getattr" and literal and len(node.args) == 3)
            ):
                code = ast.unparse(node)
        if isinstance(node, ast.Call) and any(k.arg == "check_available" for k in node.keywords):
            code = ast.unparse(node)
        signature = isinstance(node, ast.Call) and ast.unparse(node.func).endswith("signature")
        if signature and node.args and _rooted_in_torch(node.args[0]):
            code = ast.unparse(node)
        if isinstance(node, ast.Compare | ast.Call):
            text = ast.unparse(node)
            if isinstance(node, ast.Compare) and "torch.__version__" in text:
                code = text
            if "TorchVersion" in text or ("torch.version" in text and "Version(" in text):
                code = text
        if code:
            found.setdefault(node.lineno, code[:120])
    return sorted(found.items())


SOURCES = sorted(
    path
    for path in PACKAGE.rglob("*.py")
    if path.relative_to(PACKAGE).parts[0] != "check" and path != HOME
)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_torch_features_module_asks_what_this_torch_has(path: Path) -> None:
    assert version_checks(path.read_text(encoding="utf-8")) == []


def test_the_scan_sees_each_kind_of_check_and_ignores_dispatch_by_type() -> None:
    source = (
        "import inspect, torch\n"
        "a = hasattr(torch, 'uint16')\n"
        "b = getattr(torch.amp, 'GradScaler', ())\n"
        "c = torch.accelerator.current_accelerator(check_available=True)\n"
        "d = inspect.signature(torch.accelerator.current_accelerator)\n"
        "e = torch.__version__ >= '2.7'\n"
        "f = torch.torch_version.TorchVersion(torch.__version__) < (2, 7)\n"
        "g = getattr(torch, kind, None)\n"  # a backend by device type: not a version check
        "h = getattr(module, 'name', None)\n"  # not torch's
        "i = getattr(torch.overrides.handle_torch_function, '__code__', None)\n"  # a dunder
        "v = torch.__version__\n"  # reported, not compared
    )
    assert [line for line, _ in version_checks(source)] == [2, 3, 4, 5, 6, 7]
    assert version_checks(HOME.read_text(encoding="utf-8")) != []  # the home itself is seen


def test_the_floor_is_the_one_pyproject_declares() -> None:
    config = tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    extra = config["project"]["optional-dependencies"]["torch"]
    (torch_need,) = [need for need in extra if need.startswith("torch")]
    assert torch_need == f"torch>={hardware.FLOOR}"
    assert not hardware.below_floor()  # the torch these tests run on is supported


def _release(version: str) -> tuple[int, ...]:
    """The oracle: the numeric release segment, compared as a tuple."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    assert match
    return tuple(int(part or 0) for part in match.groups())


@given(
    st.integers(1, 3),
    st.integers(0, 20),
    st.integers(0, 3),
    st.sampled_from(["", "+cpu", "+cu124", "a0", ".dev20250101", "rc1", "+rocm6.2"]),
)
def test_below_floor_compares_releases(major: int, minor: int, patch: int, tail: str) -> None:
    version = f"{major}.{minor}.{patch}{tail}"
    floor = _release(hardware.FLOOR)
    release = _release(version)
    if release != floor:  # a pre-release of the floor itself is below it; skip the edge
        assert hardware.below_floor(version) == (release < floor)


def _as_torch_26(monkeypatch: pytest.MonkeyPatch, available: bool) -> None:
    """torch 2.6's API: current_accelerator() takes nothing and ignores availability."""

    def current_accelerator() -> torch.device:
        return torch.device("cuda")

    monkeypatch.setattr(torch.accelerator, "current_accelerator", current_accelerator)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: available)


@pytest.mark.parametrize("available", [True, False])
def test_current_accelerator_on_torch_26(monkeypatch: pytest.MonkeyPatch, available: bool) -> None:
    _as_torch_26(monkeypatch, available)
    found = _torch_features.current_accelerator()
    assert found == (torch.device("cuda") if available else None)


@pytest.mark.parametrize("answer", [torch.device("xpu"), None])
def test_current_accelerator_from_torch_27_on(
    monkeypatch: pytest.MonkeyPatch, answer: torch.device | None
) -> None:
    asked: list[Any] = []

    def current_accelerator(check_available: bool = False) -> torch.device | None:
        asked.append(check_available)
        return answer

    monkeypatch.setattr(torch.accelerator, "current_accelerator", current_accelerator)
    assert _torch_features.current_accelerator() == answer
    assert asked == [True]


def test_the_floor_picks_the_cpu_on_torch_26_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import torchport as tp

    _as_torch_26(monkeypatch, available=False)
    with hardware.install(hardware.Backend()):  # fresh caches, torch's real answers
        assert hardware.accelerator_type() is None
        assert tp.pick_device() == torch.device("cpu")


def test_missing_apis_answer_none_and_dtypes_skip_what_this_torch_lacks() -> None:
    assert _torch_features.accelerator_function("no_such_function") is None
    assert _torch_features.dtypes_named(["float32", "float99"]) == frozenset({torch.float32})
    with pytest.raises(ValueError, match="_cuda"):
        _torch_features.cuda_private("getDriverVersion")
    assert (torch.amp.GradScaler,) == hardware.GRAD_SCALER
    assert torch.optim.lr_scheduler.ReduceLROnPlateau in hardware.LR_SCHEDULER_BASES

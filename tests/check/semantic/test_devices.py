"""The device vocabulary the checker reads, against the installed torch (the list's source)."""

from __future__ import annotations

import re

import pytest
import torch

from torchport.check import check_source
from torchport.check.semantic._devices import (
    ACCELERATOR_TYPES,
    BACKEND_LIBRARIES,
    DEVICE_TYPES,
    IS_DEVICE_ATTRIBUTES,
    MOVE_METHODS,
    OTHER_ACCELERATORS,
    device_type,
    names_other_accelerator,
)

RENAMED_PRIVATEUSE1 = {"npu", "mlu", "musa"}  # out-of-tree names for the PrivateUse1 backend


def torch_device_types() -> set[str]:
    """Every type ``torch.device`` accepts, read from its own error message."""
    with pytest.raises(RuntimeError) as info:
        torch.device("no_such_device_type")
    listed = re.search(r"Expected one of (.*?) device type", str(info.value))
    assert listed is not None, str(info.value)
    return {t.strip() for t in listed.group(1).split(",")}


def test_the_list_is_torchs_list() -> None:
    assert torch_device_types() == DEVICE_TYPES - RENAMED_PRIVATEUSE1


def test_every_accelerator_is_a_device_type() -> None:
    assert ACCELERATOR_TYPES <= DEVICE_TYPES
    assert OTHER_ACCELERATORS <= ACCELERATOR_TYPES and "cuda" not in OTHER_ACCELERATORS
    assert {"cpu", "meta"}.isdisjoint(ACCELERATOR_TYPES)


def test_methods_and_properties_cover_torchs() -> None:
    for cls in (torch.Tensor, torch.nn.Module):
        methods = {t for t in DEVICE_TYPES if callable(getattr(cls, t, None))}
        assert methods <= MOVE_METHODS, methods - MOVE_METHODS
    assert set(dir(torch.Tensor)) >= MOVE_METHODS - RENAMED_PRIVATEUSE1
    properties = {a for a in dir(torch.Tensor) if a[3:] in DEVICE_TYPES and a.startswith("is_")}
    assert properties <= IS_DEVICE_ATTRIBUTES, properties - IS_DEVICE_ATTRIBUTES


@pytest.mark.parametrize("kind", sorted(DEVICE_TYPES - RENAMED_PRIVATEUSE1 - {"mkldnn"}))
def test_device_type_reads_what_torch_parses(kind: str) -> None:
    for text in (kind, f"{kind}:0", f"{kind}:12"):
        assert device_type(text) == kind == torch.device(text).type


@pytest.mark.parametrize("text", ["", "gpu", "cuda:", "cuda:x", "CUDA", "cuda0", "/GPU:0", "tpu"])
def test_device_type_refuses_what_torch_refuses(text: str) -> None:
    assert device_type(text) is None
    with pytest.raises(RuntimeError):
        torch.device(text)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("torch.backends.mps.is_available", True),
        ("hasMPS", True),
        ("use_xpu", True),
        ("torch_npu", True),
        ("torch.accelerator", True),
        ("input", False),  # "npu" inside a word
        ("manipulate", False),  # "ipu"
        ("torch.cuda.is_available", False),
    ],
)
def test_names_other_accelerator_reads_words(name: str, expected: bool) -> None:
    assert names_other_accelerator(name) is expected


@pytest.mark.parametrize("kind", sorted(DEVICE_TYPES))
def test_every_rule_knows_every_type(kind: str) -> None:
    """A device compared with any type's string is reported; a move to any accelerator too."""
    compared = check_source(f'ok = x.device == "{kind}"\n', select=["TP114"])
    assert [f.code for f in compared] == ["TP114"]
    moved = [f.code for f in check_source(f'y = x.to("{kind}")\n', select=["TP101", "TP112"])]
    expected = {"cuda": ["TP101"], "hip": []}.get(kind, ["TP112"] * (kind in OTHER_ACCELERATORS))
    assert moved == expected


def test_guards_know_every_type() -> None:
    for kind in sorted(DEVICE_TYPES):
        source = f'if x.device.type == "{kind}":\n    y = x.cuda()\n'
        assert check_source(source, select=["TP101"]) == [], kind
    for attr in sorted(IS_DEVICE_ATTRIBUTES - {"is_cuda"}):
        source = f"if x.is_cuda:\n    f = 1\nelif x.{attr}:\n    f = 2\n"
        assert check_source(source, select=["TP103"]) == [], attr


@pytest.mark.parametrize(("library", "kind"), sorted(BACKEND_LIBRARIES.items()))
def test_a_backends_own_module_may_name_its_device(library: str, kind: str) -> None:
    """Imported unconditionally, the extension pins the module to its device; optional, not."""
    assert kind in OTHER_ACCELERATORS
    use = f'x = x.to("{kind}")\ny = torch.zeros(1, device="{kind}:0")\n'
    assert check_source(f"import {library}\nimport torch\n{use}", select=["TP112"]) == []
    optional = f"try:\n    import {library}\nexcept ImportError:\n    pass\n{use}"
    assert [f.code for f in check_source(optional, select=["TP112"])] == ["TP112"] * 2
    other = "mps" if kind != "mps" else "xpu"
    assert check_source(f'import {library}\nx = x.to("{other}")\n', select=["TP112"]) != []

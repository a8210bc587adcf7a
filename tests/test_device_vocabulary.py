"""One device vocabulary: ``torchport._device_types`` names the types, every other module reads it.

Held here, as ``test_layers.py`` holds the layering:

* no module outside the allow-list below writes a device type as a string in a
  device position (compared with a device's type, passed as a device, listed
  with other types), so adding a backend is a change to the vocabulary (plus its
  branch in ``hardware/_backend.py`` where it needs torch calls of its own);
* the vocabulary's lists match what the installed ``torch.Tensor`` has;
* the vocabulary imports nothing, so the checker can read it without torch.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from torchport import _device_types as vocabulary

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "torchport"

# Modules (or folders, ending in "/") that may write device types as strings, and why.
ALLOWED = {
    "_device_types.py": "the vocabulary itself",
    "check/rules/": "each rule matches one backend's pattern in users' code; the literal is "
    "the pattern (a string of the program read, not a device torchport uses)",
    "run/": "`torchport run` stands in for CUDA: 'cuda' there is the API it redirects",
    "sim/": "the simulated accelerator names itself and imitates CUDA's rules",
    "diagnose/_oom.py": "reads the wording of each allocator's out-of-memory message",
    "diagnose/_oom_causes.py": "names the backends whose out-of-memory messages it reads",
    "diagnose/_mismatch_message.py": "reads the device words of torch's mismatch messages",
    "diagnose/_strict.py": "reads the device words of torch's mismatch messages",
    "diagnose/_suspects.py": "reads the device words of torch's error messages",
}

_TYPES = vocabulary.DEVICE_TYPES


def _names_type(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.partition(":")[0] in _TYPES
    )


def _types_in(node: ast.AST) -> list[ast.AST]:
    if _names_type(node):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e for e in node.elts if _names_type(e)]
    return []


def _about_device(node: ast.AST) -> bool:
    """``x.type``, ``device``, ``kind``, ``str(dev)``: an expression that holds a device's type."""
    text = ast.unparse(node).lower()
    return any(word in text for word in ("type", "device", "kind", "dev"))


def device_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, source) of each device type written as a string in a device position."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            strings = [e for e in node.elts if isinstance(e, ast.Constant)]
            named = _types_in(node)
            if len(named) >= 2 and all(
                _names_type(e) or getattr(e, "value", None) == "accelerator" for e in strings
            ):
                found.append((node.lineno, ast.unparse(node)))  # a list of backends
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_types_in(s) for s in sides) and any(
                _about_device(s) for s in sides if not _types_in(s)
            ):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            takes_device = func.endswith(("device", "parse_device", "device_spec", ".to"))
            if takes_device and node.args and _names_type(node.args[0]):
                found.append((node.lineno, ast.unparse(node)))
            for keyword in node.keywords:
                if keyword.arg in ("device", "map_location") and _names_type(keyword.value):
                    found.append((node.lineno, ast.unparse(node)))
    return found


def _allowed(relative: str) -> bool:
    return any(relative == a or (a.endswith("/") and relative.startswith(a)) for a in ALLOWED)


SOURCES = sorted(
    p for p in PACKAGE.rglob("*.py") if not _allowed(p.relative_to(PACKAGE).as_posix())
)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_device_type_literal_outside_the_vocabulary(path: Path) -> None:
    found = device_literals(ast.parse(path.read_text(encoding="utf-8")))
    assert found == [], (
        f"{path.relative_to(PACKAGE)} writes device types as strings: {found}; "
        "use the names of torchport._device_types (CPU, META, HOST_TYPES, ...)"
    )


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def device_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, string) of each string outside docstrings that is a device: ``"cpu"``, ``"cuda:0"``.

    Any position: a return value, a default, a dict key, ``x.startswith("cpu")``,
    ``backend == "cpu"``, the second argument of ``to_device``.
    """
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            kind, colon, index = node.value.partition(":")
            if kind in _TYPES and (not colon or index.isdigit() or not index):
                found.append((node.lineno, node.value))
    return sorted(found)


RUNTIME = [p for p in SOURCES if p.relative_to(PACKAGE).parts[0] != "check"]


@pytest.mark.parametrize("path", RUNTIME, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_the_runtime_writes_no_device_string(path: Path) -> None:
    """The runtime (everything but the checker, which reads users' strings) names no device type.

    Stricter than the positions above, which miss ``backend == "cpu"``,
    ``to_device(batch, "meta")``, ``x if y else "cpu"`` and ``HOST = "cpu"``.
    """
    found = device_strings(ast.parse(path.read_text(encoding="utf-8")))
    assert found == [], (
        f"{path.relative_to(PACKAGE)} writes device types as strings: {found}; "
        "use the names of torchport._device_types (CPU, META, CUDA, ...)"
    )


def test_the_strict_scan_sees_every_position() -> None:
    source = (
        '"""A docstring naming "cpu" does not count."""\n'
        'HOST = "cpu"\n'
        'm = "RAM" if e.backend == "cpu" else "memory"\n'
        'to_device(batch, "meta")\n'
        'd = choice or "cuda:1"\n'
        'ok = ("metadata", "cudagraphs", "cpu_count", "xpu device")\n'
    )
    assert [s for _, s in device_strings(ast.parse(source))] == ["cpu", "cpu", "meta", "cuda:1"]


def test_every_allowed_path_exists() -> None:
    for allowed in ALLOWED:
        assert (PACKAGE / allowed).exists(), f"{allowed} is allowed but gone: drop it"


@pytest.mark.parametrize(
    "source",
    [
        'if device.type == "cuda": pass',
        'if x.device.type in ("cpu", "meta"): pass',
        'torch.device("mps")',
        'torch.zeros(3, device="xpu")',
        'KINDS = ("cuda", "xpu", "accelerator")',
        'x.to("cuda:0")',
        'if kind != "cpu": pass',
    ],
)
def test_the_scan_finds_each_kind_of_position(source: str) -> None:
    assert device_literals(ast.parse(source))


@pytest.mark.parametrize(
    "source",
    [
        'name = "cuda"',  # not in a device position
        'METHODS = ("to", "cuda", "cpu")',  # method names beside other names
        'print("meta")',
        'if mode == "strict": pass',
    ],
)
def test_the_scan_leaves_other_strings(source: str) -> None:
    assert device_literals(ast.parse(source)) == []


def test_tensor_move_methods_are_torchs() -> None:
    """``TENSOR_MOVE_METHODS`` is exactly the device-type methods ``torch.Tensor`` has."""
    has = {kind for kind in vocabulary.DEVICE_TYPES if callable(getattr(torch.Tensor, kind, None))}
    assert has == vocabulary.TENSOR_MOVE_METHODS
    generated = vocabulary.MOVE_METHODS - vocabulary.TENSOR_MOVE_METHODS
    assert generated == set(vocabulary.PRIVATEUSE1_BACKENDS)


def test_is_attributes_cover_torchs() -> None:
    has = {a for a in dir(torch.Tensor) if a.startswith("is_") and a[3:] in vocabulary.DEVICE_TYPES}
    assert has <= vocabulary.IS_DEVICE_ATTRIBUTES, has - vocabulary.IS_DEVICE_ATTRIBUTES


def test_named_types_are_in_the_table() -> None:
    named = {
        vocabulary.CPU,
        vocabulary.META,
        vocabulary.CUDA,
        vocabulary.MPS,
        vocabulary.XPU,
        vocabulary.PRIVATEUSE1,
    }
    assert named <= vocabulary.DEVICE_TYPES
    assert vocabulary.HOST_TYPES.isdisjoint(vocabulary.ACCELERATOR_TYPES)
    assert set(vocabulary.BACKEND_LIBRARIES.values()) <= vocabulary.ACCELERATOR_TYPES


def test_the_vocabulary_imports_nothing() -> None:
    tree = ast.parse((PACKAGE / "_device_types.py").read_text(encoding="utf-8"))
    imports = [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom)) and getattr(n, "module", "") != "__future__"
    ]
    assert imports == []
    code = "import sys, torchport._device_types; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_diagnose_reads_the_vocabulary_for_tensor_methods() -> None:
    from torchport.diagnose import _callsite

    moves = _callsite._DEVICE_METHODS | _callsite._HOST_METHODS
    assert moves == vocabulary.MOVE_METHODS


# Where the simulated accelerator's name may appear outside sim/: the features that use it.
SIM_USERS = {
    "place/_device.py": "naming 'sim' as the device installs it, on demand",
    "run/_target.py": "`torchport run --device sim`",
    "testing/_plugin.py": "the `devices('sim')` marker",
    "check/port/_verify.py": "`torchport port --verify` runs the result on it",
    "cli/_port_child.py": "the child process of `port --verify` installs it",
}


def _names_sim(tree: ast.AST) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.partition(":")[0] == "sim"
    ]


def test_a_new_device_type_needs_no_module_outside_its_own() -> None:
    """The simulated accelerator is a device type the vocabulary does not name.

    The floor, place's movers, feed, diagnose and bench handle it without naming it:
    only the features that offer it (SIM_USERS) write "sim".
    """
    assert "sim" not in vocabulary.DEVICE_TYPES
    naming = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] != "sim"
        and _names_sim(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert naming <= set(SIM_USERS), naming - set(SIM_USERS)

"""The package's layering: each part imports only from the parts below it.

Read from the source with ``ast`` (imports under ``if TYPE_CHECKING:`` are
annotations, not dependencies), so a new import that climbs a layer, or reaches
into another part's private module, fails here with the line that does it.
``docs/architecture.md`` draws the same layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "torchport"

# Bottom to top. ``_origin``, ``_sizes`` and ``_skipped_copies`` are floor modules every
# part may use; ``_lazy`` (import on first use, every package's ``__getattr__``) stands on
# ``errors``; "" is the package root (``torchport/__init__.py``: ``__version__`` and lazy names).
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "_origin", "_sizes", "_skipped_copies", "_crossings", "_device_types"}),
    frozenset({"_lazy"}),
    frozenset({""}),
    frozenset({"check"}),
    frozenset({"hardware"}),
    frozenset({"place"}),
    frozenset({"feed", "diagnose"}),
    frozenset({"sim"}),  # the simulated accelerator: reads diagnose's op table
    frozenset({"run"}),
    frozenset({"bench", "testing"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),
)
# Imports that climb on purpose, each made inside the function that needs it: naming
# "sim" as a device (pick_device, TORCHPORT_DEVICE=sim) installs the simulated accelerator.
ON_DEMAND = {("place", "sim")}
# The checker stands apart: it never imports torch, so it may use only the floor and the root.
APART = {"check": LAYERS[0] | LAYERS[1] | LAYERS[2]}


def _part(module: str) -> str:
    """``torchport.place._move`` -> ``place``; ``torchport`` -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(part: str) -> int:
    for index, layer in enumerate(LAYERS):
        if part in layer:
            return index
    raise AssertionError(f"torchport.{part} is in no layer: add it to LAYERS and the docs")


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return hidden


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every torchport module imported at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = _type_checking_nodes(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:  # `from torchport import hardware` imports a module
                sub = f"{node.module}.{alias.name}"
                found.append((node.lineno, sub if sub in MODULES else node.module))
    return [(line, name) for line, name in found if name.split(".")[0] == "torchport"]


def _violations(module: str) -> list[str]:
    own = _part(module)
    allowed_parts = APART.get(own)
    problems = []
    for line, target in _imports(MODULES[module]):
        other = _part(target)
        if other == own:
            continue
        path = MODULES[module]
        where = (
            f"{path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE) else path}:{line}"
        )
        if allowed_parts is not None:
            if other not in allowed_parts:
                problems.append(f"{where}: torchport.{own} may not import {target}")
        elif _layer(other) >= _layer(own) and (own, other) not in ON_DEMAND:
            problems.append(f"{where}: {target} is not below torchport.{own}")
        private = [p for p in target.split(".")[2:] if p.startswith("_")]
        if private and other not in LAYERS[0]:
            problems.append(f"{where}: {target} is private to torchport.{other}; import its names")
    return problems


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_from_below(module: str) -> None:
    assert _violations(module) == []


def test_every_part_has_a_layer() -> None:
    parts = {_part(module) for module in MODULES}
    placed = set().union(*LAYERS) | set(APART)
    assert parts <= placed, parts - placed


def test_the_check_detects_a_climb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The test itself can fail: hardware importing place, and cli reaching into a private module.
    climb = tmp_path / "climb.py"
    climb.write_text("from torchport.place._move import to_device\nimport torchport.cli\n")
    monkeypatch.setitem(MODULES, "torchport.hardware._climb", climb)
    found = _violations("torchport.hardware._climb")
    assert len(found) == 3 and "private to torchport.place" in found[1]


# What `check/semantic/` may import at run time: itself, the text edit (a record that imports
# nothing), the lazy patterns, and the floor; the engine's walk (`Context`) only in annotations.
SEMANTIC_MAY_IMPORT = (
    "torchport.check.semantic",
    "torchport.check._edit",
    "torchport.check._records",  # dataclasses' methods without exec; imports no torchport module
    "torchport.check._nodes",  # which fields of a node class hold nodes; imports only ast
    "torchport.check._patterns",  # patterns compiled on first use (start-up); imports only re
    "torchport._device_types",
)


def _semantic_violations(module: str) -> list[str]:
    return [
        f"{MODULES[module].name}:{line}: {target}"
        for line, target in _imports(MODULES[module])
        if not target.startswith(SEMANTIC_MAY_IMPORT) and _part(target) != ""
    ]


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if m.startswith("torchport.check.semantic"))
)
def test_semantic_imports_no_engine_module(module: str) -> None:
    """docs/architecture.md: every rule and every fix asks the same model, which needs no engine."""
    assert _semantic_violations(module) == []


def test_the_text_edit_imports_nothing() -> None:
    assert [m for _, m in _imports(MODULES["torchport.check._edit"])] == [
        "torchport.check._records"
    ]
    assert _imports(MODULES["torchport.check._records"]) == []


def test_the_semantic_check_detects_an_engine_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "engine.py"
    module.write_text("from torchport.check._rule import Edit\n")
    monkeypatch.setitem(MODULES, "torchport.check.semantic._engine_import", module)
    assert len(_semantic_violations("torchport.check.semantic._engine_import")) == 1

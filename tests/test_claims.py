"""Claims docs/architecture.md makes of "the one" place for something, held here.

Each test names the claim it holds; the others are held where the docs say
(``test_layers.py``, ``test_device_vocabulary.py``, ``hardware/test_floor.py``,
``hardware/test_torch_api.py``).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import torchport
from torchport import errors

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "torchport"

# Modules outside place/ that may import optree, and why.
OPTREE_ALLOWED = {"bench/_competitors.py": "measures optree itself, as a competitor"}


def _imports_optree(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "optree" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "optree":
            return True
    return False


def test_the_tree_walker_is_places() -> None:
    """ "place/ ... the one tree walker": nothing outside place/ walks batches with optree."""
    outside = [
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.relative_to(PACKAGE).parts[0] != "place"
        and p.relative_to(PACKAGE).as_posix() not in OPTREE_ALLOWED
        and _imports_optree(p)
    ]
    assert outside == []


def test_the_optree_scan_sees_an_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from optree import tree_map\n")
    assert _imports_optree(module)


def test_every_public_exception_is_in_the_one_tree() -> None:
    """ "errors.py: the one exception tree": every exception torchport exports derives from it."""
    exported = [getattr(torchport, name) for name in torchport.__all__]
    public = [
        c
        for c in exported
        if inspect.isclass(c) and issubclass(c, Exception) and not issubclass(c, Warning)
    ]
    assert public, "torchport exports no exception: the test would hold nothing"
    for cls in public:
        assert issubclass(cls, errors.TorchportError), cls
        assert getattr(errors, cls.__name__, None) is cls, f"{cls} is not defined in errors.py"

"""A module's name says what it holds, across folders: no two modules share a file name.

``diagnose/_placement.py`` (where the accelerator run holds a tensor) beside
``check/semantic/_placement.py`` (where a fix may write ``device``) made a reader open the
wrong one; a name is unique, so that a name found in a traceback, a docstring or a review
points at one file.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import torchport

_PACKAGE = Path(torchport.__file__).resolve().parent


def _by_name(package: Path = _PACKAGE) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in package.rglob("*.py"):
        if path.name != "__init__.py":
            found[path.name].append(str(path.parent.relative_to(package.parent)))
    return found


def _shared(package: Path = _PACKAGE) -> dict[str, list[str]]:
    """Each name two modules hold, with their folders."""
    return {
        name: sorted(folders) for name, folders in _by_name(package).items() if len(folders) > 1
    }


def test_no_two_modules_share_a_name() -> None:
    assert _shared() == {}


def test_the_check_finds_a_second_module_of_one_name(tmp_path: Path) -> None:
    for folder in ("torchport/diagnose", "torchport/check/semantic", "torchport/place"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "torchport/diagnose/_placement.py").write_text("")
    (tmp_path / "torchport/check/semantic/_placement.py").write_text("")
    (tmp_path / "torchport/place/_device.py").write_text("")
    assert _shared(tmp_path / "torchport") == {
        "_placement.py": ["torchport/check/semantic", "torchport/diagnose"]
    }

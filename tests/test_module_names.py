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


def _stem(word: str) -> str:
    """``movers`` -> ``mov``, ``staging``/``staged`` -> ``stag``, ``calls`` -> ``call``."""
    for suffix in ("ings", "ers", "ing", "er", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            return _stem(stem) if suffix in ("ings", "ers") else stem
    return word


def _near_twins(package: Path = _PACKAGE) -> list[list[str]]:
    """Modules of one folder whose names differ only in inflection (``_move``/``_movers``)."""
    twins = []
    for folder in sorted({p.parent for p in package.rglob("*.py")}):
        by_stem: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for path in folder.glob("*.py"):
            if path.name != "__init__.py":
                words = path.stem.strip("_").split("_")
                by_stem[tuple(map(_stem, words))].append(path.name)
        twins += [sorted(names) for names in by_stem.values() if len(names) > 1]
    return twins


def test_no_near_twins_side_by_side() -> None:
    """``_staged.py`` beside ``_staging.py``: the name does not say which holds what."""
    assert _near_twins() == []


def test_the_check_finds_near_twins(tmp_path: Path) -> None:
    folder = tmp_path / "torchport" / "place"
    folder.mkdir(parents=True)
    for name in ("__init__", "_move", "_movers", "_staged", "_staging", "_copy", "_own_to"):
        (folder / f"{name}.py").write_text("")
    assert sorted(_near_twins(tmp_path / "torchport")) == [
        ["_move.py", "_movers.py"],
        ["_staged.py", "_staging.py"],
    ]


# STYLE.md's budgets: a module under about 500 lines, a rule file under about 200
# (tests/check/test_rule_contract.py holds the second). Data written by a generator is not
# read as code: the rule catalog, one entry per rule, printed by tests/check/test_catalog.py.
_LINE_BUDGET = 500
_GENERATED = frozenset({"check/_catalog.py"})


def _over_budget(package: Path = _PACKAGE) -> dict[str, int]:
    lengths = {
        path.relative_to(package).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in package.rglob("*.py")
    }
    return {
        name: lines
        for name, lines in lengths.items()
        if lines > _LINE_BUDGET and name not in _GENERATED
    }


def test_every_module_fits_the_line_budget() -> None:
    # Split by what a module holds, never one object across two files (architecture.md).
    assert not _over_budget()
    assert all((_PACKAGE / name).is_file() for name in _GENERATED), "stale exemption"


def test_the_check_finds_a_module_over_the_budget(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text("x = 1\n" * _LINE_BUDGET)
    (tmp_path / "big.py").write_text("x = 1\n" * (_LINE_BUDGET + 1))
    assert _over_budget(tmp_path) == {"big.py": _LINE_BUDGET + 1}

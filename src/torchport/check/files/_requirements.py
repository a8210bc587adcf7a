"""The torch a project declares it needs: the default ``target-torch``.

The lower bound of ``torch`` in a ``pyproject.toml``'s ``[project] dependencies``
(else its optional dependencies), else in a ``requirements.txt`` beside it. Only
a lower bound counts (``>=``, ``==``, ``~=``, ``>``); files that cannot be read
or parsed declare nothing (they are not ours to judge).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path

from torchport.check._torch_api import TorchVersion, format_version, parse_version

__all__ = ["declared_target", "project_folder", "requirement_floor"]


# `torch>=2.7`, `torch[opt] ~= 2.7.1, <3`, `torch==2.8.*`: the name, then the specifiers.
_REQUIREMENT = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?P<spec>[<>=!~][^;#]*)?(?:[;#].*)?$")
_LOWER = re.compile(r"(>=|==|~=|===|>)\s*(\d+\.\d+[\w.*]*)")


def requirement_floor(lines: Sequence[str]) -> TorchVersion | None:
    """The lowest torch that requirement ``lines`` allow (``torch>=2.7`` gives 2.7), or None.

    Only a lower bound counts (``>=``, ``==``, ``~=``, ``>``); ``torch`` with none,
    or no ``torch`` line, gives None. Several ``torch`` lines: the highest bound
    (each must hold).
    """
    found: list[TorchVersion] = []
    for line in lines:
        match = _REQUIREMENT.match(line)
        if match is None or not match["spec"]:
            continue
        for _, text in _LOWER.findall(match["spec"]):
            version = parse_version(".".join(text.replace("*", "0").split(".")[:2]))
            if version is not None:
                found.append(version)
    return max(found) if found else None


def _project_requirements(pyproject: Path) -> TorchVersion | None:
    try:
        with pyproject.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # not ours to judge unless it holds our table (then it was read already)
    project = data.get("project")
    if not isinstance(project, dict):
        return None
    lines = [d for d in project.get("dependencies", []) if isinstance(d, str)]
    floor = requirement_floor(lines)
    optional = project.get("optional-dependencies", {})
    if floor is None and isinstance(optional, dict):
        extra = [d for group in optional.values() if isinstance(group, list) for d in group]
        floor = requirement_floor([d for d in extra if isinstance(d, str)])
    return floor


def _requirements_txt(path: Path) -> TorchVersion | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return requirement_floor(lines)


def declared_target(folder: Path) -> tuple[TorchVersion, str] | None:
    """The torch floor the project in ``folder`` declares, and where."""
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        floor = _project_requirements(pyproject)
        if floor is not None:
            return floor, f"torch>={format_version(floor)} in the dependencies of {pyproject}"
    requirements = folder / "requirements.txt"
    if requirements.is_file():
        floor = _requirements_txt(requirements)
        if floor is not None:
            return floor, f"torch>={format_version(floor)} in {requirements}"
    return None


def project_folder(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding a pyproject.toml or requirements.txt."""
    for parent in (folder, *folder.parents):
        if (parent / "pyproject.toml").is_file() or (parent / "requirements.txt").is_file():
            return parent
    return None

"""Which ``[tool.torchport]`` table each file uses: the nearest above it (Ruff's rule).

:class:`ConfigResolver` answers per file and per folder for a run, each folder's
``pyproject.toml`` and requirement files looked at once; :func:`find_config` answers
for one place. Reading and validating a table is ``_config.py``'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from torchport.check._records import replace
from torchport.check._torch_api import TorchVersion
from torchport.check.files._config import (
    Config,
    config_of_table,
    read_toml,
    tool_table,
    with_target,
)
from torchport.check.files._discovery import GlobSet, normalised
from torchport.check.files._requirements import holds_requirements

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import TypeVar

    _T = TypeVar("_T")

__all__ = ["ConfigResolver", "find_config"]


def _nearest_source(start: Path) -> tuple[Path, dict[str, object]] | None:
    """The nearest ``pyproject.toml`` at or above ``start`` with a table, and the table."""
    for folder in (start, *start.parents):
        found = _own_table(folder)
        if found is not None:
            return found
    return None


def _own_table(folder: Path) -> tuple[Path, dict[str, object]] | None:
    """``folder``'s own ``pyproject.toml`` and its table, if it has both."""
    candidate = folder / "pyproject.toml"
    if candidate.is_file():
        table = tool_table(read_toml(candidate), candidate)
        if table is not None:
            return candidate, table
    return None


def _own_project(folder: Path) -> Path | None:
    """``folder`` if it holds one of the files that declare torch (``project_folder``'s test)."""
    return folder if holds_requirements(folder) else None


def _upwards(
    known: dict[Path, _T | None], start: Path, own: Callable[[Path], _T | None]
) -> _T | None:
    """The first answer ``own`` gives at ``start`` or above, as its upward search finds it.

    ``known`` holds the answers found so far, per folder: a folder whose own answer is
    None has its parent's. The folders asked are the search's own, in its order, up to
    the first one already known: each folder of a run is looked at once.
    """
    asked: list[Path] = []
    folder = start
    while True:
        if folder in known:
            found = known[folder]
            break
        asked.append(folder)
        found = own(folder)
        if found is not None:
            break
        parent = folder.parent
        if parent == folder:
            break
        folder = parent
    for each in asked:
        known[each] = found
    return found


def _nearest(start: Path) -> Config | None:
    found = _nearest_source(start)
    return None if found is None else config_of_table(found[1], found[0])


def find_config(paths: Sequence[str | os.PathLike[str]] = ()) -> Config:
    """The config of the nearest ``pyproject.toml`` with a ``[tool.torchport]`` table.

    Searched upwards from the common folder of ``paths`` (the working folder when
    none are given); defaults when there is none. A run uses one table per file
    (:class:`ConfigResolver`, which also fills in ``target_torch`` from the
    project's requirements); this answers for one place, as ``torchport rule`` asks.
    """
    absolute = [os.path.abspath(p) for p in paths] or [os.getcwd()]
    start = Path(os.path.commonpath(absolute))
    if not start.is_dir():
        start = start.parent
    found = _nearest(start)
    return found if found is not None else Config(root=start)


class ConfigResolver:
    """The settings of each file: the nearest table above it, or one for all (``--config``).

    Answers are cached per folder and per table, so a run reads each
    ``pyproject.toml`` once and files under one table share one :class:`Config`
    object (the run groups files by it). Command-line excludes (``cli_excludes``
    of the request) apply to every file; ``target_torch`` overrides every file's.
    """

    def __init__(
        self, request: Config | None = None, *, target_torch: TorchVersion | None = None
    ) -> None:
        """``request``: a table for every file, or ``Config.per_file()`` (None: the same)."""
        request = request if request is not None else Config.per_file()
        self._cli = request.cli_excludes
        self._drop_exclude = request.drop_exclude
        self._target = target_torch
        self._fixed = None if request.nearest else self._finish(request, normalised(Path.cwd()))
        self._by_folder: dict[Path, Config] = {}
        self._by_folder_text: dict[str, Config] = {}  # for_file's, by os.path's folder text
        self._by_source: dict[Path | None, Config] = {}
        self._globs: dict[int, list[GlobSet]] = {}
        # per folder: _nearest_source's and project_folder's answers, each folder's files
        # looked at once per run (a folder's answer is its own files' or its parent's)
        self._tables: dict[Path, tuple[Path, dict[str, object]] | None] = {}
        self._projects: dict[Path, Path | None] = {}

    def _finish(self, config: Config, folder: Path) -> Config:
        if self._target is not None:
            config = replace(config, target_torch=self._target, target_origin="--target-torch")
        return with_target(config, folder)

    def for_folder(self, folder: str | os.PathLike[str]) -> Config:
        """The settings of the files directly in ``folder``."""
        if self._fixed is not None:
            return self._fixed
        key = normalised(Path(folder))
        config = self._by_folder.get(key)
        if config is None:
            found = self._nearest_source(key)
            # Without a table, the settings differ only by the project whose requirements
            # give the target torch: one Config per such project.
            source = found[0] if found is not None else self._project_folder(key)
            config = self._by_source.get(source)
            if config is None:
                base = (
                    config_of_table(found[1], found[0]) if found is not None else Config(root=key)
                )
                if self._drop_exclude:
                    base = replace(base, exclude=())
                config = replace(self._finish(base, key), cli_excludes=self._cli)
                self._by_source[source] = config
            self._by_folder[key] = config
        return config

    def _nearest_source(self, folder: Path) -> tuple[Path, dict[str, object]] | None:
        """:func:`_nearest_source` of ``folder``, every folder's ``pyproject.toml`` read once."""
        return _upwards(self._tables, folder, _own_table)

    def _project_folder(self, folder: Path) -> Path | None:
        """:func:`project_folder` of ``folder``, every folder's files looked for once."""
        return _upwards(self._projects, folder, _own_project)

    def for_file(self, path: str | os.PathLike[str]) -> Config:
        """The settings of the file ``path`` (its folder's)."""
        # Keyed by the folder's absolute text: the files of a folder make one Path, not each
        folder = os.path.dirname(os.path.abspath(path))
        config = self._by_folder_text.get(folder)
        if config is None:
            config = self._by_folder_text[folder] = self.for_folder(normalised(Path(path)).parent)
        return config

    def excludes_for(self, folder: Path) -> list[GlobSet]:
        """The exclude patterns that judge the entries of ``folder`` (its settings')."""
        config = self.for_folder(folder)
        globs = self._globs.get(id(config))
        if globs is None:
            globs = self._globs[id(config)] = config.exclude_globs()
        return globs

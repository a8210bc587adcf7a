"""The ``[tool.torchport]`` table of a ``pyproject.toml``: reading and validating it.

Keys (all optional)::

    [tool.torchport]
    select = ["TP1", "TP201"]          # replaces the default rule set
    extend-select = ["TP901"]          # added to it
    ignore = ["TP303"]
    per-file-ignores = { "tests/**" = ["TP101"], "scripts/*.py" = ["TP2"] }
    exclude = ["legacy/"]              # gitignore-style, relative to this file's folder
    extend-exclude = ["generated/**"]

The table used is that of the nearest ``pyproject.toml`` holding a
``[tool.torchport]`` table, searched from the checked paths' common folder (or
the working folder) upwards, as Ruff does; ``--config FILE`` names one instead.
Command-line ``--select`` replaces ``select``; ``--ignore`` and
``--extend-select`` add to their keys; ``--exclude`` replaces ``exclude`` and
``--extend-exclude`` adds to the excludes (:meth:`Config.with_excludes`; these
patterns are relative to the working folder, as Ruff reads them).
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from torchport.check.files._discovery import GlobSet
from torchport.errors import ConfigError

__all__ = ["Config", "find_config", "load_config"]

_KEYS = ("exclude", "extend-exclude", "extend-select", "ignore", "per-file-ignores", "select")


@dataclass(frozen=True, slots=True)
class Config:
    """Validated settings; ``source`` is the file they came from (``None``: defaults)."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    root: Path = field(default_factory=Path.cwd)
    source: Path | None = None
    # Command-line excludes: (folder they are relative to, patterns).
    cli_excludes: tuple[tuple[Path, tuple[str, ...]], ...] = ()

    @property
    def origin(self) -> str:
        """Where these settings come from, for error messages."""
        return f"[tool.torchport] of {self.source}" if self.source else "the command line"

    def exclude_globs(self) -> list[GlobSet]:
        """The ``exclude`` + ``extend-exclude`` patterns (anchored at the config's folder),
        and those of the command line (anchored at the working folder then)."""
        globs = []
        patterns = (*self.exclude, *self.extend_exclude)
        if patterns:
            root = self.root.absolute()
            globs.append(
                GlobSet(root, _anchored(patterns, root), origin=f"exclude of {self.origin}")
            )
        for folder, cli in self.cli_excludes:
            globs.append(
                GlobSet(folder, _anchored(cli, folder), origin="--exclude/--extend-exclude")
            )
        return globs

    def with_excludes(
        self, exclude: Sequence[str] | None = None, extend_exclude: Sequence[str] = ()
    ) -> Config:
        """These settings with the command line's ``--exclude`` (replacing the config's
        ``exclude``; ``extend-exclude`` stays) and ``--extend-exclude`` (added)."""
        patterns = (*(exclude or ()), *extend_exclude)
        if exclude is None and not patterns:
            return self
        return replace(
            self,
            exclude=self.exclude if exclude is None else (),
            cli_excludes=(
                (*self.cli_excludes, (Path.cwd().absolute(), tuple(patterns)))
                if patterns
                else self.cli_excludes
            ),
        )

    def ignores_for(self, path: Path) -> tuple[str, ...]:
        """Codes ``per-file-ignores`` switches off for ``path``."""
        codes: list[str] = []
        root = self.root.absolute()
        for pattern, ignored in self.per_file_ignores:
            globs = GlobSet(
                root, _anchored([pattern], root), origin=f"per-file-ignores of {self.origin}"
            )
            if globs.match(path.absolute(), is_dir=False):
                codes.extend(ignored)
        return tuple(codes)


def _anchored(patterns: Sequence[str], base: Path) -> list[str]:
    """Patterns as users write them, in the gitignore form :class:`GlobSet` reads.

    ``./build`` (which gitignore does not know, so would match nothing) means the
    ``build`` beside the configuration: ``/build``. A path written out from the root
    (``/home/me/project/build``, what a shell's tab completion gives) means the same
    when it lies under ``base``. Everything else is gitignore syntax as it stands.
    """
    out = []
    prefix = f"{base.as_posix().rstrip('/')}/"
    for pattern in patterns:
        negate = "!" if pattern.startswith("!") else ""
        body = pattern[len(negate) :]
        if body.startswith("./"):
            rest = body
            while rest.startswith("./"):
                rest = rest[2:].lstrip("/")
            body = f"/{rest}" if rest else body
        elif body.startswith(prefix):
            body = "/" + body[len(prefix) :]
        out.append(negate + body)
    return out


def _strings(value: object, key: str, source: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"[tool.torchport] {key} in {source} must be a list of strings, "
            f'got {value!r}; write e.g. {key} = ["TP101"]'
        )
    return tuple(value)


def _table(data: dict[str, object], source: Path) -> Config:
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, _KEYS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(_KEYS)}"
        raise ConfigError(f"unknown key {key!r} in [tool.torchport] of {source}{hint}")
    per_file: list[tuple[str, tuple[str, ...]]] = []
    raw_per_file = data.get("per-file-ignores", {})
    if not isinstance(raw_per_file, dict):
        raise ConfigError(
            f"[tool.torchport] per-file-ignores in {source} must be a table of "
            f"glob = [codes], got {raw_per_file!r}"
        )
    for pattern, codes in raw_per_file.items():
        per_file.append((pattern, _strings(codes, f"per-file-ignores.{pattern!r}", source)))
    return Config(
        select=_strings(data["select"], "select", source) if "select" in data else None,
        extend_select=_strings(data.get("extend-select", []), "extend-select", source),
        ignore=_strings(data.get("ignore", []), "ignore", source),
        per_file_ignores=tuple(per_file),
        exclude=_strings(data.get("exclude", []), "exclude", source),
        extend_exclude=_strings(data.get("extend-exclude", []), "extend-exclude", source),
        root=source.parent,
        source=source,
    )


def _read(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 (byte {exc.start} is invalid); TOML files "
            f"must be UTF-8: re-save it as UTF-8"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}; correct it") from exc


def _tool_table(data: dict[str, object], source: Path) -> dict[str, object] | None:
    tool = data.get("tool")
    if not isinstance(tool, dict) or "torchport" not in tool:
        return None  # `tool` belongs to every tool; only our own key is ours to judge
    table = tool["torchport"]
    if not isinstance(table, dict):
        raise ConfigError(
            f"`torchport` under [tool] in {source} is {table!r}, expected a table; write "
            f'[tool.torchport] with keys such as select = ["TP1"], or remove it'
        )
    return table


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read the ``[tool.torchport]`` table of ``path``.

    Raises:
        ConfigError: unreadable file, invalid TOML, no such table, unknown key or bad value.
    """
    source = Path(path)
    table = _tool_table(_read(source), source)
    if table is None:
        raise ConfigError(f"{source} has no [tool.torchport] table; add one or drop --config")
    return _table(table, source)


def find_config(paths: Sequence[str | os.PathLike[str]] = ()) -> Config:
    """The config of the nearest ``pyproject.toml`` with a ``[tool.torchport]`` table.

    Searched upwards from the common folder of ``paths`` (the working folder when
    none are given); defaults when there is none.
    """
    absolute = [os.path.abspath(p) for p in paths] or [os.getcwd()]
    start = Path(os.path.commonpath(absolute))
    if not start.is_dir():
        start = start.parent
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            table = _tool_table(_read(candidate), candidate)
            if table is not None:
                return _table(table, candidate)
    return Config(root=start)

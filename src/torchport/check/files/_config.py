"""The ``[tool.torchport]`` table of a ``pyproject.toml``: reading it, validating it, finding it.

Keys (all optional)::

    [tool.torchport]
    select = ["TP1", "TP201"]          # replaces the default rule set
    extend-select = ["TP901"]          # added to it
    ignore = ["TP303"]
    per-file-ignores = { "tests/**" = ["TP101"], "scripts/*.py" = ["TP2"] }
    exclude = ["legacy/"]              # gitignore-style, relative to this file's folder
    extend-exclude = ["generated/**"]
    target-torch = "2.7"               # fixes write no API this torch lacks
    respect-foreign-noqa = true        # `# ruff: noqa` / `# flake8: noqa` exempt a file

Which table a file uses is Ruff's rule: **each file uses the nearest**
``pyproject.toml`` **holding a** ``[tool.torchport]`` **table in its own folder or
above** (:class:`ConfigResolver`), so a file's findings never depend on which other
paths are on the command line, nor on the working folder. ``--config FILE`` names
one table for every file instead. Paths are made absolute and ``..`` is resolved
(lexically, as Ruff does) before any pattern matches them.

``target-torch``, when not set, is read from the project's own requirements: the
lower bound of ``torch`` in the configuration's ``[project] dependencies`` (or
optional dependencies), else in a ``requirements.txt`` beside it (with no
configuration: the nearest ``pyproject.toml``/``requirements.txt`` above the
file); else it is torchport's own floor (:data:`~torchport.check._torch_api.FLOOR`).

Command-line ``--select`` replaces ``select``; ``--ignore`` and
``--extend-select`` add to their keys; ``--exclude`` replaces ``exclude`` and
``--extend-exclude`` adds to the excludes (:meth:`Config.with_excludes`; these
patterns are relative to the working folder, as Ruff reads them).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from torchport.check._file_settings import FileSettings
from torchport.check._records import field, record, replace
from torchport.check._torch_api import FLOOR, TorchVersion, format_version, parse_version
from torchport.check.files._discovery import GlobSet, normalised
from torchport.check.files._requirements import declared_target, project_folder
from torchport.errors import ConfigError

__all__ = [
    "Config",
    "check_target",
    "config_of_table",
    "load_config",
    "read_toml",
    "tool_table",
    "with_target",
]

_KEYS = (
    "exclude",
    "extend-exclude",
    "extend-select",
    "ignore",
    "per-file-ignores",
    "respect-foreign-noqa",
    "select",
    "target-torch",
)


@record(frozen=True)
class Config:
    """Validated settings; ``source`` is the file they came from (``None``: defaults).

    ``nearest=True`` is no table but a request: each file uses the nearest table
    above it (what a run without ``--config`` does), with these ``cli_excludes``.
    ``target_origin`` says where ``target_torch`` came from, for ``--show-settings``.
    """

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
    target_torch: TorchVersion | None = None
    target_origin: str = ""
    respect_foreign_noqa: bool = True
    nearest: bool = False
    # `--exclude` given: it replaces `exclude` of every table the run uses.
    drop_exclude: bool = False

    @classmethod
    def per_file(cls) -> Config:
        """The request "each file uses its nearest table" (the default of every run)."""
        return cls(nearest=True)

    @property
    def origin(self) -> str:
        """Where these settings come from, for error messages."""
        return f"[tool.torchport] of {self.source}" if self.source else "the command line"

    @property
    def file_settings(self) -> FileSettings:
        """What the engine needs per file: the target torch and the noqa policy."""
        return FileSettings(
            target_torch=self.target_torch or FLOOR,
            respect_foreign_noqa=self.respect_foreign_noqa,
        )

    def exclude_globs(self) -> list[GlobSet]:
        """The ``exclude`` + ``extend-exclude`` patterns (anchored at the config's folder),
        and those of the command line (anchored at the working folder then)."""
        globs = []
        patterns = (*self.exclude, *self.extend_exclude)
        if patterns:
            globs.extend(_globsets(patterns, normalised(self.root), f"exclude of {self.origin}"))
        for folder, cli in self.cli_excludes:
            globs.extend(_globsets(cli, folder, "--exclude/--extend-exclude"))
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
            drop_exclude=self.drop_exclude or exclude is not None,
            cli_excludes=(
                (*self.cli_excludes, (normalised(Path.cwd()), tuple(patterns)))
                if patterns
                else self.cli_excludes
            ),
        )

    def ignores_for(self, path: Path) -> tuple[str, ...]:
        """Codes ``per-file-ignores`` switches off for ``path`` (``..`` resolved first)."""
        if not self.per_file_ignores:
            return ()  # most runs: no per-file path made absolute for nothing
        codes: list[str] = []
        root = normalised(self.root)
        target = normalised(path)
        for pattern, ignored in self.per_file_ignores:
            globs = _globsets([pattern], root, f"per-file-ignores of {self.origin}")
            if any(glob.match(target, is_dir=False) for glob in globs):
                codes.extend(ignored)
        return tuple(codes)


def _globsets(patterns: Sequence[str], base: Path, origin: str) -> list[GlobSet]:
    """``patterns`` written relative to ``base`` as glob sets, ``..`` resolved first.

    ``../tests/*.py`` (a path up from the config's folder or the working folder, as
    Ruff resolves it) is matched from the folder it names; ``src/../tests/*.py`` is
    ``tests/*.py``. Gitignore syntax alone knows no ``..``: such a pattern matched
    nothing before.
    """
    by_root: dict[Path, list[str]] = {}
    for pattern in patterns:
        root, written = _resolve_up(pattern, base)
        by_root.setdefault(root, []).append(written)
    return [GlobSet(root, _anchored(group, root), origin=origin) for root, group in by_root.items()]


def _resolve_up(pattern: str, base: Path) -> tuple[Path, str]:
    """The folder ``pattern`` is relative to and the pattern from there (``..`` resolved).

    Only ``..`` segments before the first glob character are resolved (``**/..`` is
    left as written); the pattern is then anchored (``/tests/*.py``) at the folder.
    """
    negate = "!" if pattern.startswith("!") else ""
    body = pattern[len(negate) :]
    parts = body.split("/")
    literal = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), len(parts))
    if ".." not in parts[:literal]:
        return base, pattern
    absolute = body.startswith("/")
    head = os.path.normpath(("" if absolute else f"{base.as_posix()}/") + "/".join(parts[:literal]))
    rest = parts[literal:]
    root = Path(head) if rest else Path(head).parent
    tail = "/".join(rest) if rest else Path(head).name
    if not absolute and not tail:
        return base, pattern
    return root, f"{negate}/{tail}"


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


# What a list key holds, for the example a wrong value is told to write instead: rule
# codes or prefixes for the rule keys, gitignore-style patterns for the excludes.
_EXAMPLE_VALUE = {
    "select": '["TP1", "TP201"]',
    "extend-select": '["TP901"]',
    "ignore": '["TP303"]',
    "exclude": '["legacy/"]',
    "extend-exclude": '["generated/**"]',
}


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string (quotes, backslashes and control characters escaped)."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _strings(
    value: object, key: str, source: Path, *, pattern: str | None = None
) -> tuple[str, ...]:
    """A list of strings, or the error that says what to write: for ``key`` (or, with
    ``pattern``, for that entry of ``per-file-ignores``) a line of valid TOML whose
    values are of the kind the key holds (rule codes, or path patterns)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        if pattern is None:
            where, example = key, f"{key} = {_EXAMPLE_VALUE[key]}"
        else:
            where = f"per-file-ignores entry {_toml_string(pattern)}"
            example = f'per-file-ignores = {{ {_toml_string(pattern)} = ["TP101"] }}'
        raise ConfigError(
            f"[tool.torchport] {where} in {source} must be a list of strings, "
            f"got {value!r}; write e.g. {example}"
        )
    return tuple(value)


def check_target(value: object, where: str) -> TorchVersion:
    """A ``target-torch`` value as ``(major, minor)``.

    Raises:
        ConfigError: not a ``"MAJOR.MINOR"`` string.
    """
    version = parse_version(value) if isinstance(value, str) else None
    if version is None:
        raise ConfigError(
            f"target-torch {where} is {value!r}, expected a torch version as a string "
            f'such as "2.7"; write target-torch = "2.7" (the oldest torch your project '
            f"supports)"
        )
    return version


def config_of_table(data: dict[str, object], source: Path) -> Config:
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        key = unknown[0]
        import difflib  # the error path alone

        close = difflib.get_close_matches(key, _KEYS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(_KEYS)}"
        raise ConfigError(f"unknown key {key!r} in [tool.torchport] of {source}{hint}")
    per_file: list[tuple[str, tuple[str, ...]]] = []
    raw_per_file = data.get("per-file-ignores", {})
    if not isinstance(raw_per_file, dict):
        raise ConfigError(
            f"[tool.torchport] per-file-ignores in {source} must be a table of "
            f"glob = [codes], got {raw_per_file!r}; write e.g. "
            f'per-file-ignores = {{ "tests/**" = ["TP101"] }}'
        )
    for pattern, codes in raw_per_file.items():
        per_file.append((pattern, _strings(codes, "per-file-ignores", source, pattern=pattern)))
    foreign = data.get("respect-foreign-noqa", True)
    if not isinstance(foreign, bool):
        raise ConfigError(
            f"[tool.torchport] respect-foreign-noqa in {source} must be true or false, "
            f"got {foreign!r}"
        )
    target = None
    if "target-torch" in data:
        target = check_target(data["target-torch"], f"in [tool.torchport] of {source}")
    return Config(
        select=_strings(data["select"], "select", source) if "select" in data else None,
        extend_select=_strings(data.get("extend-select", []), "extend-select", source),
        ignore=_strings(data.get("ignore", []), "ignore", source),
        per_file_ignores=tuple(per_file),
        exclude=_strings(data.get("exclude", []), "exclude", source),
        extend_exclude=_strings(data.get("extend-exclude", []), "extend-exclude", source),
        root=source.parent,
        source=source,
        target_torch=target,
        target_origin=f"target-torch in {source}" if target else "",
        respect_foreign_noqa=foreign,
    )


def read_toml(path: Path) -> dict[str, object]:
    import tomllib  # here: a run with no configuration file never pays for the reader

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


def tool_table(data: dict[str, object], source: Path) -> dict[str, object] | None:
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


def with_target(config: Config, folder: Path) -> Config:
    """``config`` with ``target_torch`` filled in: its own, the project's, else the floor.

    ``folder`` is where to look for the project's requirements when the config has
    no file: the nearest folder at or above it holding a pyproject.toml or
    requirements.txt.
    """
    if config.target_torch is not None:
        return config
    if config.source is not None:
        declared = declared_target(normalised(config.source.parent))
    else:
        project = project_folder(folder)
        declared = None if project is None else declared_target(project)
    if declared is not None:
        return replace(config, target_torch=declared[0], target_origin=declared[1])
    floor = format_version(FLOOR)
    return replace(
        config,
        target_torch=FLOOR,
        target_origin=f"torchport's floor, torch {floor} (no target-torch and no torch>= found)",
    )


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read the ``[tool.torchport]`` table of ``path``.

    Raises:
        ConfigError: unreadable file, invalid TOML, no such table, unknown key or bad value.
    """
    source = Path(path)
    table = tool_table(read_toml(source), source)
    if table is None:
        raise ConfigError(f"{source} has no [tool.torchport] table; add one or drop --config")
    return config_of_table(table, source)

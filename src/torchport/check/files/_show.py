"""What a run would cover and with which settings: ``--show-files`` and ``--show-settings``.

Both answer from the same :func:`~torchport.check.files._plan.plan` a real run
makes, so they cannot drift from what ``check`` does: the files after discovery,
``.gitignore`` and the excludes; for one file, the table it uses (the nearest
``[tool.torchport]``, or ``--config``'s), the rules that run on it, the codes its
per-file ignores turn off, the target torch (and where that came from), the noqa
policy and where the cache lives. Facts only; the CLI renders them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from torchport.check._torch_api import format_version
from torchport.check.files._cache import cache_folder
from torchport.check.files._config import Config
from torchport.check.files._config_search import ConfigResolver
from torchport.check.files._plan import plan
from torchport.check.files._work import Chunk
from torchport.errors import ConfigError

__all__ = ["run_files", "settings_of"]

ConfigArg = Config | ConfigResolver | str | os.PathLike[str] | None


def run_files(
    paths: Sequence[str | os.PathLike[str]],
    *,
    config: ConfigArg = None,
    target_torch: str | None = None,
) -> tuple[list[str], list[str]]:
    """``(files a check of paths covers, sorted; errors)``, as ``check`` would find them.

    Raises:
        ConfigError: bad configuration or arguments.
    """
    run = plan(paths, None, None, None, config, 1, Chunk((), ()), target_torch=target_torch)
    return sorted(path for path, _ in run.files), [str(e) for e in run.errors]


def settings_of(
    path: str | os.PathLike[str],
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    extend_select: Sequence[str] | None = None,
    config: ConfigArg = None,
    target_torch: str | None = None,
    cache: str | os.PathLike[str] | None = None,
) -> dict[str, object]:
    """The resolved settings ``check`` would use for the file ``path`` (JSON-ready).

    Raises:
        ConfigError: ``path`` is no file a check covers (excluded, or not there),
            or bad configuration.
    """
    run = plan([path], select, ignore, extend_select, config, 1, Chunk((), ()),
               target_torch=target_torch)  # fmt: skip
    if not run.groups:
        reasons = "; ".join(str(e) for e in run.errors) or "the excludes leave it out"
        raise ConfigError(
            f"--show-settings: {path} is not checked ({reasons}); name a file a check covers"
        )
    (group,) = run.groups
    ((_, ignored),) = group.files
    settings = group.config
    source = settings.source
    target = settings.target_torch
    return {
        "path": os.fspath(path),
        "config": None if source is None else str(source),
        "select": list(settings.select) if settings.select is not None else None,
        "extend-select": list(settings.extend_select),
        "ignore": list(settings.ignore),
        "per-file-ignores": list(ignored),
        "exclude": [*settings.exclude, *settings.extend_exclude],
        "rules": [
            r.code for r in group.template.rules if not r.code.startswith(ignored or ("\0",))
        ],
        "plain-fix": list(group.template.fixable or [r.code for r in group.template.rules]),
        "target-torch": None if target is None else format_version(target),
        "target-torch-from": settings.target_origin,
        "respect-foreign-noqa": settings.respect_foreign_noqa,
        "cache-dir": str(
            Path(cache) if cache is not None else cache_folder(source.parent if source else None)
        ),
    }

"""The checker's dealings with files: discovery, config, noqa, safe writes, notebooks, output.

:func:`check_paths` and :func:`fix_paths` run the engine over many files (in
worker processes from a size up); the rest are the decisions around that run,
each in one module: which files (:mod:`._discovery`), which configuration
(:mod:`._config`), how a notebook becomes one Python text (:mod:`._notebook`),
how a fixed file is written back (:mod:`._write`), and how results are rendered
(:mod:`._format`). Which findings a ``# noqa`` silences is the engine's
(:mod:`torchport.check._noqa`): it applies them while it checks.
"""

from __future__ import annotations

from torchport._lazy import lazy_exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from torchport.check.files._add_noqa import NoqaResult, add_noqa_paths
    from torchport.check.files._config import Config, load_config
    from torchport.check.files._config_search import ConfigResolver, find_config
    from torchport.check.files._format import FORMATS, render, render_statistics, render_text
    from torchport.check.files._paths import (
        CheckResult,
        FileError,
        FileFix,
        FixResult,
        Progress,
        check_paths,
        fix_paths,
    )
    from torchport.check.files._reading import SourceError, decode_source
    from torchport.check.files._show import run_files, settings_of

__all__ = [
    "FORMATS",
    "CheckResult",
    "Config",
    "ConfigResolver",
    "FileError",
    "FileFix",
    "FixResult",
    "NoqaResult",
    "Progress",
    "SourceError",
    "add_noqa_paths",
    "check_paths",
    "decode_source",
    "find_config",
    "fix_paths",
    "load_config",
    "render",
    "render_statistics",
    "render_text",
    "run_files",
    "settings_of",
]

# Where each name lives, imported on first use (PEP 562): a caller loads only the
# modules of the names it uses.
_LAZY: dict[str, str] = {
    "NoqaResult": "torchport.check.files._add_noqa",
    "add_noqa_paths": "torchport.check.files._add_noqa",
    "Config": "torchport.check.files._config",
    "ConfigResolver": "torchport.check.files._config_search",
    "find_config": "torchport.check.files._config_search",
    "load_config": "torchport.check.files._config",
    "FORMATS": "torchport.check.files._format",
    "render": "torchport.check.files._format",
    "render_statistics": "torchport.check.files._format",
    "render_text": "torchport.check.files._format",
    "CheckResult": "torchport.check.files._paths",
    "FileError": "torchport.check.files._paths",
    "FileFix": "torchport.check.files._paths",
    "FixResult": "torchport.check.files._paths",
    "Progress": "torchport.check.files._paths",
    "check_paths": "torchport.check.files._paths",
    "fix_paths": "torchport.check.files._paths",
    "SourceError": "torchport.check.files._reading",
    "decode_source": "torchport.check.files._reading",
    "run_files": "torchport.check.files._show",
    "settings_of": "torchport.check.files._show",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

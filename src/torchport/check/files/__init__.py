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

from torchport.check.files._add_noqa import NoqaResult, add_noqa_paths
from torchport.check.files._config import Config, ConfigResolver, find_config, load_config
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

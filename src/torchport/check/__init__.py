"""Static checks and autofixes for device-hard-coded and slow PyTorch code.

The engine (one parse, one walk, fixes as text edits) sits in this folder; its
named parts are :mod:`.semantic` (what names mean), :mod:`.rules` (one rule per
file), :mod:`.port` (``torchport port``) and :mod:`.files` (discovery, config,
noqa, writes, notebooks, output formats). Importing this package never imports
torch.
"""

from __future__ import annotations

from torchport.check._engine import check_source
from torchport.check._explain import explain
from torchport.check._fix import fix_source
from torchport.check._printable import quoted
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check._select import select_rules
from torchport.check.files import (
    FORMATS,
    CheckResult,
    Config,
    ConfigResolver,
    FileError,
    FileFix,
    FixResult,
    NoqaResult,
    Progress,
    SourceError,
    add_noqa_paths,
    check_paths,
    decode_source,
    find_config,
    fix_paths,
    load_config,
    render,
    render_statistics,
    render_text,
    run_files,
    settings_of,
)
from torchport.check.port import Verification, port_paths, port_source, verify_entry
from torchport.check.rules import RULES

__all__ = [
    "FORMATS",
    "RULES",
    "CheckResult",
    "Config",
    "ConfigResolver",
    "Edit",
    "Example",
    "FileError",
    "FileFix",
    "Finding",
    "Fix",
    "FixResult",
    "FixSafety",
    "Intent",
    "NoqaResult",
    "Progress",
    "Rule",
    "SourceError",
    "Verification",
    "add_noqa_paths",
    "check_paths",
    "check_source",
    "decode_source",
    "explain",
    "find_config",
    "fix_paths",
    "fix_source",
    "load_config",
    "port_paths",
    "port_source",
    "quoted",
    "render",
    "render_statistics",
    "render_text",
    "run_files",
    "select_rules",
    "settings_of",
    "verify_entry",
]

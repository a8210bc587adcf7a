"""Static checks and autofixes for device-hard-coded and slow PyTorch code.

Importing this package never imports torch.
"""

from __future__ import annotations

from torchport.check._config import Config, find_config, load_config
from torchport.check._engine import check_source
from torchport.check._explain import explain
from torchport.check._fix import fix_source
from torchport.check._paths import (
    CheckResult,
    FileError,
    FileFix,
    FixResult,
    check_paths,
    fix_paths,
)
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check._select import select_rules
from torchport.check.rules import RULES

__all__ = [
    "RULES",
    "CheckResult",
    "Config",
    "Edit",
    "Example",
    "FileError",
    "FileFix",
    "Finding",
    "Fix",
    "FixResult",
    "FixSafety",
    "Intent",
    "Rule",
    "check_paths",
    "check_source",
    "explain",
    "find_config",
    "fix_paths",
    "fix_source",
    "load_config",
    "select_rules",
]

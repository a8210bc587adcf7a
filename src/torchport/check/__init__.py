"""Static checks and autofixes for device-hard-coded and slow PyTorch code.

The engine (one parse, one walk, fixes as text edits) sits in this folder; its
named parts are :mod:`.semantic` (what names mean), :mod:`.rules` (one rule per
file), :mod:`.port` (``torchport port``) and :mod:`.files` (discovery, config,
noqa, writes, notebooks, output formats). Importing this package never imports
torch.
"""

from __future__ import annotations

from torchport._lazy import lazy_exports

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check._engine import check_source
    from torchport.check._explain import explain
    from torchport.check._fix import fix_source
    from torchport.check._printable import quoted
    from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
    from torchport.check._select import scoped_codes, select_rules
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
    from torchport.check.rules import SHIPPED as RULES

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
    "scoped_codes",
    "select_rules",
    "settings_of",
    "verify_entry",
]

# Where each public name lives. They are imported on first use (PEP 562), so
# `import torchport.check` costs next to nothing and a run imports only the
# parts it uses: a plain `check` never loads the port (tests/check/test_startup.py).
_LAZY: dict[str, str] = {
    # the tuple torchport ships (the real classes), whatever a test swaps into rules.RULES
    "RULES": "torchport.check.rules:SHIPPED",
    "check_source": "torchport.check._engine",
    "explain": "torchport.check._explain",
    "fix_source": "torchport.check._fix",
    "quoted": "torchport.check._printable",
    "Edit": "torchport.check._rule",
    "Example": "torchport.check._rule",
    "Finding": "torchport.check._rule",
    "Fix": "torchport.check._rule",
    "FixSafety": "torchport.check._rule",
    "Intent": "torchport.check._rule",
    "Rule": "torchport.check._rule",
    "select_rules": "torchport.check._select",
    "scoped_codes": "torchport.check._select",
    "FORMATS": "torchport.check.files",
    "CheckResult": "torchport.check.files",
    "Config": "torchport.check.files",
    "ConfigResolver": "torchport.check.files",
    "FileError": "torchport.check.files",
    "FileFix": "torchport.check.files",
    "FixResult": "torchport.check.files",
    "NoqaResult": "torchport.check.files",
    "Progress": "torchport.check.files",
    "SourceError": "torchport.check.files",
    "add_noqa_paths": "torchport.check.files",
    "check_paths": "torchport.check.files",
    "decode_source": "torchport.check.files",
    "find_config": "torchport.check.files",
    "fix_paths": "torchport.check.files",
    "load_config": "torchport.check.files",
    "render": "torchport.check.files",
    "render_statistics": "torchport.check.files",
    "render_text": "torchport.check.files",
    "run_files": "torchport.check.files",
    "settings_of": "torchport.check.files",
    "Verification": "torchport.check.port",
    "port_paths": "torchport.check.port",
    "port_source": "torchport.check.port",
    "verify_entry": "torchport.check.port",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

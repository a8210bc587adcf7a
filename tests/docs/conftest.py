"""Make the generators under ``docs/_gen/`` and ``docs/images/`` importable by name."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT / "docs" / "_gen", ROOT / "docs" / "images"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

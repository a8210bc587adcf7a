"""Make the generators (``docs/_gen/``, ``docs/images/``) and ``page_blocks`` importable."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT / "docs" / "_gen", ROOT / "docs" / "images", Path(__file__).parent):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

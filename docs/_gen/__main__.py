"""Write every generated piece of the documentation: ``python docs/_gen [PART...]``.

Parts: ``readme`` (the README's rule figures), ``settings`` (docs/settings.md),
``plots`` (docs/images/bench-*.svg from benchmarks/figures.toml), ``pictures`` (the
README's audit and doctor pictures, from real runs). No part named: all of them.
Each has a test under tests/docs/ that fails when the committed output is stale.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "images")]

PARTS = {
    "readme": "readme_numbers",
    "settings": "settings_page",
    "plots": "bench_plots",
    "pictures": "render_images",
}


def main(argv: list[str]) -> None:
    unknown = [part for part in argv if part not in PARTS]
    if unknown:
        raise SystemExit(f"unknown part {unknown[0]!r}; the parts are {', '.join(PARTS)}")
    for part in argv or list(PARTS):
        importlib.import_module(PARTS[part]).main()


if __name__ == "__main__":
    main(sys.argv[1:])

"""``python docs/_gen [PART...]`` knows every generator the docs tests check, and no other."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _parts() -> dict[str, str]:
    sys.path.insert(0, str(ROOT / "docs" / "_gen"))
    try:
        spec = importlib.util.spec_from_file_location("gen_main", ROOT / "docs/_gen/__main__.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "docs" / "_gen"))
    parts: dict[str, str] = module.PARTS
    return parts


def test_every_part_names_a_generator_with_a_main() -> None:
    for part, name in _parts().items():
        module = importlib.import_module(name)
        assert callable(module.main), part


def test_an_unknown_part_is_refused_and_the_parts_are_named() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "_gen"), "nope"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert all(part in done.stderr for part in _parts()), done.stderr

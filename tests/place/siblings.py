"""Load a helper module of this folder (``graphs``, ``reachability``, ``fresh``) by file.

The helpers are imported under their bare names (``sys.modules["graphs"]``), as the
child interpreters of ``test_on_sim.py`` import them, so classes they define are the
same objects wherever a test or a pickle meets them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load(name: str) -> ModuleType:
    """The module ``tests/place/<name>.py``, loaded once per process."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

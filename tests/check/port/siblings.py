"""Load a sibling test module (a fuzzer's generators, a runner) by its path, once per name;
the marker of the port tests that plot (``needs_matplotlib``).

``--import-mode=importlib`` gives each test file no importable package name, so the port
tests that share the fuzzers' generators and oracles load them from their files.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

needs_matplotlib = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None,
    reason="matplotlib is not installed (pip install torchport[bench])",
)


def load(name: str, path: Path) -> types.ModuleType:
    """The module of ``path`` under ``name``; the one already loaded under that name, if any."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        # as importlib does: a module that failed to load is not left half-made for the
        # next loader (without torch, every loader must see the ImportError, and skip)
        del sys.modules[name]
        raise
    return module

"""TP101 across a repository (``rules/_project_calls.py``): a module's own ``__all__`` is no
escape, and a ``pyproject.toml`` shipping only ``src`` leaves a top-level folder unshipped.

Held-out sample AD's class F3, pos 85 and 89 (the fake-video refactor's
``experiments/train.py`` ``train_residual_head(..., device="cuda")`` and
``experiments/evaluate.py`` ``evaluate_checkpoint(..., device="cuda")``, judged low (f):
``inference/cli.py``, the evaluation CLI and the tests pass ``device`` at every call). The
calls in other modules were missed for two reasons, each a test below: the repository's
``pyproject.toml`` (``[tool.setuptools.packages.find] where = ["src"]``) was taken as
shipping every file below it, and the string in the module's own ``__all__`` was taken as
an escape.

The oracle: Python runs every caller (each with a device), and a default the rule leaves
alone must never have run; near misses (a caller omitting the device, including through
``from mod import *``, another module's ``__all__`` or a ``getattr`` by string, a
``pyproject.toml`` shipping the folder) must stay reported.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

SRC_ONLY = (
    '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
    '[project]\nname = "drawn"\nversion = "0.1"\n\n'
    '[tool.setuptools.packages.find]\nwhere = ["src"]\n'
)
PYPROJECTS = {
    "src_only": (SRC_ONLY, False),
    "top": (SRC_ONLY.replace('where = ["src"]\n', ""), True),  # ships `exp` too
    "no_find": (SRC_ONLY.replace("[tool.setuptools.packages.find]\n", ""), True),
    "none": ("", False),
}
EXPORTS = {
    "none": "",
    "list": '__all__ = ["train", "helper"]\n',
    "extended": '__all__ = ["helper"]\n__all__ += ["train"]\n',
}
# caller -> (its text, whether every call it makes passes the device); `{p}` the package
CALLERS = {
    "keyword": ("from {p}.steps import train\n\n\ndef main(d):\n    train(1, device=d)\n", True),
    "module": ("from {p} import steps as t\n\n\ndef main(d):\n    t.train(1, d)\n", True),
    "star": ("from {p}.steps import *\n\n\ndef main(d):\n    train(1, device=d)\n", True),
    "omitted": ("from {p}.steps import train\n\n\ndef main(d):\n    train(1)\n", False),
    "star_omitted": ("from {p}.steps import *\n\n\ndef main(d):\n    train(1)\n", False),
    "by_string": ("import {p}.steps as t\n\n\ndef main(d):\n    getattr(t, 'train')(1)\n", False),
    "exported_elsewhere": ("__all__ = ['train']\n\n\ndef main(d):\n    pass\n", False),
}
_COUNTER = itertools.count()


def write(root: Path, package: str, pyproject: str, exports: str, callers: list[str]) -> Path:
    (root / ".git").mkdir()
    if PYPROJECTS[pyproject][0]:
        (root / "pyproject.toml").write_text(PYPROJECTS[pyproject][0])
        (root / "src" / "lib").mkdir(parents=True)
        (root / "src" / "lib" / "__init__.py").write_text("")
    (root / package).mkdir()
    (root / package / "__init__.py").write_text('"""Experiments."""\n')
    lib = root / package / "steps.py"
    lib.write_text(
        'SEEN = []\n\n\ndef train(x, device="cuda"):\n    SEEN.append(str(device))\n\n\n'
        f"def helper():\n    return 1\n\n\n{EXPORTS[exports]}"
    )
    for i, caller in enumerate(callers):
        (root / f"run_{i}.py").write_text(CALLERS[caller][0].format(p=package))
    return lib


def reported(lib: Path) -> bool:
    return bool(check_text(lib.read_text(), str(lib), ruleset_for(["TP101"], None)).findings)


def default_ran(root: Path, package: str, callers: list[str]) -> bool:
    sys.path.insert(0, str(root))
    try:
        lib = importlib.import_module(f"{package}.steps")
        for i in range(len(callers)):
            importlib.import_module(f"run_{i}").main("the caller's device")
            del sys.modules[f"run_{i}"]
        return any(seen.startswith("cuda") for seen in lib.SEEN)
    finally:
        sys.path.remove(str(root))
        for module in [m for m in sys.modules if m == package or m.startswith(f"{package}.")]:
            del sys.modules[module]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(PYPROJECTS)),
    st.sampled_from(sorted(EXPORTS)),
    st.lists(st.sampled_from(sorted(CALLERS)), min_size=1, max_size=3),
)
def test_exports_and_a_src_only_pyproject(pyproject: str, exports: str, callers: list[str]) -> None:
    package = f"a34exp{next(_COUNTER)}"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        lib = write(root, package, pyproject, exports, callers)
        left_alone = not reported(lib)
        if left_alone:
            assert not default_ran(root, package, callers), callers  # sound
        want = not PYPROJECTS[pyproject][1] and all(CALLERS[c][1] for c in callers)
        assert left_alone == want, (pyproject, exports, callers)


@pytest.mark.parametrize("exports", sorted(EXPORTS))
def test_the_refactors_shape(tmp_path: Path, exports: str) -> None:
    """A ``src``-only ``pyproject.toml``, the name in its module's ``__all__``, every call
    (another module's, a test's) passing the device: left alone."""
    lib = write(tmp_path, "a34refactor", "src_only", exports, ["keyword", "module"])
    assert not reported(lib)

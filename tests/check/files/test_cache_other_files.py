"""The check cache replays no answer another file it read has since changed (issue 34).

An answer depends on more than the checked file: the checkout's ``setup.py`` says
whether an imported extension needs CUDA anyway, a star import binds what the
imported module defines, a module that appears where an import looked changes
both. After each edit of those other files (written, rewritten at the same size,
dated back as an archive tool does, deleted, made), a cached run must report what
a run without the cache reports on a fresh copy of the tree (the oracle: a new
folder, so nothing this process keeps in memory about the old one is used).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_paths

OLD_NS = 1_577_836_800_123_456_789  # 2020-01-01, as an archive or `touch -d` dates a file
CHECKED = ("m.py", "m2.py", "m3.py")
# TP402 names CUDA and is on by default: a default run leaves it out of a module importing a
# CUDA-only extension (the checkout's setup.py says which); TP403 (the GradScaler) is off by
# default since 2026-11-30 (_default_scope.LEFT_OFF)
MAIN = "import torch\nimport engine\ntorch.cuda.manual_seed(0)\n"
STAR = "from helpers import *\nt.cuda.manual_seed(1)\ns = t.cuda.amp.GradScaler()\n"
LOADS = 'from net import Net\nm = Net.load_from_file("w.pt")\n'  # TP310 if Net's loads
_NET = (
    "import torch\n\n\nclass Net(torch.nn.Module):\n    @classmethod\n"
    "    def load_from_file(cls, path, map_location=None):\n"
    "        return torch.{}(path, {}=map_location)\n"
)
_HEAD = "from torch.utils.cpp_extension import CppExtension, CUDAExtension\n"
# None: the file is deleted (or never made). Each file's variants have one size.
VARIANTS: dict[str, tuple[str | None, ...]] = {
    # CUDA only (the import needs CUDA anyway: no finding), and with a CPU twin (a finding)
    "setup.py": (
        None,
        _HEAD + "ext_modules = [CUDAExtension('engine', ['k.cu'])]" + " " * 36 + "\n",
        _HEAD
        + "ext_modules = [CUDAExtension('engine', ['k.cu']), CppExtension('engine', ['k.cpp'])]\n",
    ),
    # torch under the star-imported name `t` (findings), or something else (none)
    "helpers.py": (None, "import torch as t\n", "t = None         \n"),
    "pkg/__init__.py": (None, ""),
    # a project loader read by the project view (TP310 at its call in m3.py), or no loader
    "net.py": (
        None,
        _NET.format("load", "map_location"),
        _NET.format("zeros", "other_argum"),
    ),  # a folder that becomes a package beside the modules
}

edit = st.tuples(
    st.sampled_from(sorted(VARIANTS)), st.integers(0, 2), st.booleans()
)  # (file, variant, dated back)


def _write(root: Path, name: str, variant: int, dated: bool) -> None:
    options = VARIANTS[name]
    text = options[variant % len(options)]
    path = root / name
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    if dated:
        os.utime(path, ns=(OLD_NS, OLD_NS))


def _seen(root: Path, cache: Path | None) -> tuple[object, ...]:
    here = Path.cwd()
    os.chdir(root)
    try:
        result = check_paths(list(CHECKED), cache=cache or False)
    finally:
        os.chdir(here)
    return tuple(result.findings), tuple(result.errors), result.cached


def _oracle(root: Path, fresh: Path) -> tuple[object, ...]:
    shutil.copytree(root, fresh, symlinks=True)
    return _seen(fresh, None)[:2]


@settings(max_examples=30, deadline=None)
@given(st.lists(edit, min_size=1, max_size=6))
def test_a_cached_run_after_other_files_change_reports_what_a_fresh_one_does(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, bool]]
) -> None:
    base = tmp_path_factory.mktemp("tree")
    root, cache = base / "project", base / "cache"
    (root / ".git").mkdir(parents=True)  # the checkout's top: setup.py is looked for here
    for name, text in (("m.py", MAIN), ("m2.py", STAR), ("m3.py", LOADS)):
        (root / name).write_text(text)
        os.utime(root / name, ns=(OLD_NS, OLD_NS))
    _write(root, "setup.py", 1, dated=True)
    _write(root, "helpers.py", 1, dated=True)
    _write(root, "net.py", 1, dated=True)
    _seen(root, cache)  # the cache holds every file's answer before the edits
    for i, (name, variant, dated) in enumerate(steps):
        _write(root, name, variant, dated)
        cached = _seen(root, cache)
        assert cached[:2] == _oracle(root, base / f"fresh{i}"), (name, variant, dated)
    again = _seen(root, cache)
    assert again[:2] == cached[:2]


def test_answers_are_replayed_while_the_other_files_hold_still(tmp_path: Path) -> None:
    """The guard above must not pass by never caching: nothing edited, nothing checked again."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    for name, text in (("m.py", MAIN), ("m2.py", STAR), ("m3.py", LOADS)):
        (root / name).write_text(text)
        os.utime(root / name, ns=(OLD_NS, OLD_NS))
    _write(root, "setup.py", 2, dated=True)
    _write(root, "helpers.py", 1, dated=False)  # just written: kept with a hash of its bytes
    _write(root, "net.py", 1, dated=True)
    first = _seen(root, tmp_path / "cache")
    second = _seen(root, tmp_path / "cache")
    assert (first[2], second[2]) == (0, len(CHECKED))
    assert second[:2] == first[:2]
    assert sorted(f.code for f in first[0]) == ["TP310", "TP402", "TP402"]  # type: ignore[attr-defined]

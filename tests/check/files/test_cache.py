"""The check cache never replays a report for bytes other than those it checked.

The oracle is a run without the cache: after any sequence of the edits that keep
what a cache could compare (same size, modification time set back to the same
nanosecond as an archive tool or ``touch -d`` does, files swapped by renaming,
the same relative name checked from another folder under one configuration),
a cached run reports exactly what a fresh one does.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_paths

# One size, different findings: a hard-coded CUDA move (TP101), and two clean lines.
VARIANTS = ("v = t.cuda()\n", "v = t.cpu() \n", "v = t.abcd()\n")
OLD_NS = 1_577_836_800_123_456_789  # 2020-01-01, as an archive or `touch -d` dates a file
FOLDERS = ("s1", "s2")

edit = st.tuples(st.just("edit"), st.sampled_from(FOLDERS), st.integers(0, 2))
swap = st.tuples(st.just("swap"), st.sampled_from(FOLDERS), st.sampled_from(FOLDERS))
look = st.tuples(st.just("from"), st.sampled_from(FOLDERS), st.just(0))


def _date_back(path: Path) -> None:
    os.utime(path, ns=(OLD_NS, OLD_NS))


def _seen(folder: Path, cache: Path | None) -> tuple[object, ...]:
    result = check_paths(["a.py"], extend_select=["TP101"], select=["TP101"], cache=cache or False)
    return tuple(result.findings), tuple(result.errors), result.sources


@settings(max_examples=12)
@given(st.lists(st.one_of(edit, swap, look), min_size=1, max_size=5))
def test_a_cached_run_reports_what_a_fresh_one_does(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, object]]
) -> None:
    root = tmp_path_factory.mktemp("tree")
    (root / "pyproject.toml").write_text("[tool.torchport]\n")  # one cache for both folders
    cache = root / "cache"
    for i, name in enumerate(FOLDERS):
        (root / name).mkdir()
        (root / name / "a.py").write_text(VARIANTS[i])
        _date_back(root / name / "a.py")
    here = Path.cwd()
    try:
        for kind, folder, arg in steps:
            if kind == "edit":
                (root / folder / "a.py").write_text(VARIANTS[int(arg)])  # type: ignore[call-overload]
            elif kind == "swap" and arg != folder:
                a, b = root / folder / "a.py", root / str(arg) / "a.py"
                a.rename(root / "tmp.py")
                b.rename(a)
                (root / "tmp.py").rename(b)
            for name in FOLDERS:
                _date_back(root / name / "a.py")
            os.chdir(root / folder)
            cached = _seen(root / folder, cache)
            assert cached == _seen(root / folder, None)
            assert _seen(root / folder, cache) == cached  # and replayed as such
    finally:
        os.chdir(here)


def test_an_unchanged_file_is_replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard above must not pass by never caching: a file left alone is read once."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(VARIANTS[0])
    _date_back(tmp_path / "a.py")
    first = check_paths(["a.py"], extend_select=["TP101"], cache=tmp_path / "c")
    second = check_paths(["a.py"], extend_select=["TP101"], cache=tmp_path / "c")
    assert (first.cached, second.cached) == (0, 1)
    assert second.findings == first.findings and [f.code for f in first.findings] == ["TP101"]

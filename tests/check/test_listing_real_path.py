"""A span's real paths (``_listing.real_path``, ``real_file``) are the standard library's.

Inside a span a file's real path is its folder's (worked out once) joined with its name,
where the file is no symbolic link. Generated: a tree of folders and files with links to
folders and to files (relative and absolute, dangling, in a loop, through ``..``), then
paths into it, absolute and relative, plain and through links, to files that exist and
that do not. The oracle is the standard library asked with no span: ``os.path.realpath``
for ``real_path``, and ``str(Path(p).resolve())`` wherever ``real_file`` answers; asked
twice in one span (the second answer from memory), in a generated order.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check._listing import listed_once, real_file, real_path

FOLDERS = ("a", "a/b", "c")
FILES = ("a/x.py", "a/b/y.py", "c/z.py", "top.py")
# (link, target): a folder link, relative and absolute; a file link; dangling; a loop
LINKS = (
    ("c/up", ".."),
    ("c/to_b", "../a/b"),
    ("a/abs_c", "ABS/c"),
    ("a/b/ln.py", "../x.py"),
    ("ln_top.py", "top.py"),
    ("c/gone.py", "missing.py"),
    ("c/loop1", "loop2"),
    ("c/loop2", "loop1"),
)
NAMES = ("x.py", "y.py", "z.py", "top.py", "ln.py", "ln_top.py", "gone.py", "new.py", ".", "..")
HOPS = ("", "a", "a/b", "c", "c/up", "c/to_b", "a/abs_c", "c/up/a", "c/loop1", "a/../c")

paths = st.lists(
    st.tuples(st.sampled_from(HOPS), st.sampled_from(NAMES), st.booleans()),
    min_size=1,
    max_size=12,
)


def _tree(root: str, links: frozenset[int]) -> None:
    for folder in FOLDERS:
        os.makedirs(os.path.join(root, folder), exist_ok=True)
    for name in FILES:
        Path(root, name).write_text("x = 1\n")
    for index, (link, target) in enumerate(LINKS):
        if index in links:
            os.symlink(target.replace("ABS", root), os.path.join(root, link))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.frozensets(st.integers(0, len(LINKS) - 1)), paths)
def test_real_paths_in_a_span_are_the_standard_librarys(
    links: frozenset[int], asked: list[tuple[str, str, bool]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "tree")
        _tree(root, links)
        os.symlink(root, os.path.join(tmp, "alias"))  # the whole tree through a link
        here = os.getcwd()
        os.chdir(tmp)
        try:
            wanted = []
            for hop, name, absolute in asked:
                base = root if absolute else os.path.join("alias", hop) if hop else "alias"
                path = os.path.join(base, hop, name) if absolute else os.path.join(base, name)
                wanted.append((path, os.path.realpath(path), _resolved(path)))
            with listed_once():
                for _ in range(2):  # the second time from memory
                    for path, real, resolved in wanted:
                        assert real_path(path) == real, path
                        found = real_file(path)
                        if found is not None:
                            assert found == real == resolved, path
        finally:
            os.chdir(here)


def test_no_span_no_memory(tmp_path: Path) -> None:
    """Outside a span nothing is kept: a file made a link later is seen as one."""
    target = tmp_path / "t.py"
    target.write_text("")
    path = tmp_path / "f.py"
    path.write_text("")
    assert real_file(str(path)) is None
    assert real_path(str(path)) == os.path.realpath(path)
    path.unlink()
    path.symlink_to(target)
    assert real_path(str(path)) == os.path.realpath(target)


def _resolved(path: str) -> str | None:
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError):
        return None

"""Discovery (gitignore subset, default excludes, symlinks) and decoding source files."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check.files._discovery import GlobSet, discover, inside_roots
from torchport.check.files._reading import SourceError, read_source


def touch(path: Path, text: str = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def found(tmp_path: Path, *paths: Path, **kw: object) -> list[str]:
    result = discover(list(paths) or [tmp_path], **kw)  # type: ignore[arg-type]
    assert result.errors == []
    return sorted(Path(os.path.relpath(p, tmp_path)).as_posix() for p in result.files)


# ---------------------------------------------------------------- decoding


def test_utf8_latin1_with_cookie_and_bom(tmp_path: Path) -> None:
    utf8 = tmp_path / "u.py"
    utf8.write_bytes("s = 'é'\r\n".encode())
    assert read_source(utf8).text == "s = 'é'\r\n"  # line endings kept
    latin = tmp_path / "l.py"
    latin.write_bytes("# -*- coding: latin-1 -*-\ns = 'é'\n".encode("latin-1"))
    source = read_source(latin)
    assert source.encoding == "iso-8859-1" and "s = 'é'" in source.text
    bom = tmp_path / "b.py"
    bom.write_bytes(b"\xef\xbb\xbfx = 1\n")
    source = read_source(bom)
    assert source.text == "x = 1\n" and source.encoding == "utf-8-sig"
    assert source.text.encode(source.encoding) == bom.read_bytes()  # written back with its BOM


def test_undecodable_and_unreadable_files_raise_source_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_bytes("s = 'é'\n".encode("latin-1"))  # no cookie: not UTF-8
    with pytest.raises(SourceError, match=r"not valid utf-8 at byte 5.*coding"):
        read_source(bad)
    cookie = tmp_path / "cookie.py"
    cookie.write_bytes(b"# -*- coding: no-such-codec -*-\n")
    with pytest.raises(SourceError, match="encoding"):
        read_source(cookie)
    with pytest.raises(SourceError, match="cannot read"):
        read_source(tmp_path)  # a folder
    with pytest.raises(SourceError, match="cannot read"):
        read_source(tmp_path / "absent.py")


# ---------------------------------------------------------------- globs


def matches(pattern: str, rel: str, *, is_dir: bool = False) -> bool | None:
    base = Path("/base")
    return GlobSet(base, [pattern]).match(base / rel, is_dir=is_dir)


@pytest.mark.parametrize(
    ("pattern", "rel", "is_dir", "expected"),
    [
        ("*.py", "a.py", False, True),
        ("*.py", "deep/er/a.py", False, True),  # no slash: any depth
        ("*.py", "a.pyc", False, None),
        ("gen_*.py", "x/gen_1.py", False, True),
        ("/top.py", "top.py", False, True),  # leading slash anchors
        ("/top.py", "x/top.py", False, None),
        ("x/top.py", "x/top.py", False, True),  # a middle slash anchors too
        ("x/top.py", "y/x/top.py", False, None),
        ("build/", "build", True, True),  # trailing slash: folders only
        ("build/", "build", False, None),
        ("build/", "src/build", True, True),
        ("**/gen/*.py", "gen/a.py", False, True),
        ("**/gen/*.py", "a/b/gen/a.py", False, True),
        ("a/**", "a/b/c.py", False, True),
        ("a/**/z.py", "a/z.py", False, True),
        ("a/**/z.py", "a/b/c/z.py", False, True),
        ("a/*/z.py", "a/b/c/z.py", False, None),  # * never crosses /
        ("[ab].py", "b.py", False, True),
        ("[!ab].py", "b.py", False, None),
        ("?.py", "ab.py", False, None),
        ("\\#x.py", "#x.py", False, True),
        ("# comment", "# comment", False, None),
    ],
)
def test_gitignore_subset(pattern: str, rel: str, is_dir: bool, expected: bool | None) -> None:
    assert matches(pattern, rel, is_dir=is_dir) is expected


def test_negation_last_match_wins() -> None:
    globs = GlobSet(Path("/b"), ["*.py", "!keep.py", "# c", "", "gone/"])
    assert globs.match(Path("/b/x.py"), is_dir=False) is True
    assert globs.match(Path("/b/keep.py"), is_dir=False) is False
    assert globs.match(Path("/b/gone"), is_dir=True) is True
    assert globs.match(Path("/elsewhere/x.py"), is_dir=False) is None


@given(st.text("ab*?", min_size=1, max_size=6), st.text("abc", min_size=1, max_size=6))
def test_simple_globs_agree_with_fnmatch(pattern: str, name: str) -> None:
    expected = fnmatch.fnmatchcase(name, pattern)
    assert bool(matches(pattern, name)) is expected


# ---------------------------------------------------------------- discovery


def test_recursive_py_and_pyi_with_default_excludes(tmp_path: Path) -> None:
    touch(tmp_path / "a.py")
    touch(tmp_path / "pkg" / "b.pyi")
    touch(tmp_path / "pkg" / "deep" / "c.py")
    touch(tmp_path / "pkg" / "notes.txt")
    for excluded in (".git", ".venv", "venv", "__pycache__", "build", "dist", "node_modules",
                     ".tox", ".eggs", "x.egg-info"):  # fmt: skip
        touch(tmp_path / excluded / "skip.py")
        touch(tmp_path / "pkg" / excluded / "skip.py")
    assert found(tmp_path) == ["a.py", "pkg/b.pyi", "pkg/deep/c.py"]


def test_given_files_are_checked_whatever_their_name_or_folder(tmp_path: Path) -> None:
    script = touch(tmp_path / "build" / "script")
    assert found(tmp_path, script) == ["build/script"]
    # given twice, or once directly and once through its folder: checked once
    a = touch(tmp_path / "src" / "a.py")
    assert found(tmp_path, tmp_path / "src", a, a) == ["src/a.py"]


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    result = discover([tmp_path / "absent.py"])
    assert result.files == []
    assert [(p.name, "no such file" in m) for p, m in result.errors] == [("absent.py", True)]


def test_gitignore_in_tree_nested_and_negated(tmp_path: Path) -> None:
    touch(tmp_path / ".gitignore", "gen_*.py\n/only_top.py\nsecret/\n")
    touch(tmp_path / "gen_a.py")
    touch(tmp_path / "only_top.py")
    touch(tmp_path / "sub" / "only_top.py")
    touch(tmp_path / "secret" / "s.py")
    touch(tmp_path / "sub" / "gen_b.py")
    touch(tmp_path / "sub" / ".gitignore", "!gen_keep.py\nlocal.py\n")
    touch(tmp_path / "sub" / "gen_keep.py")
    touch(tmp_path / "sub" / "local.py")
    touch(tmp_path / "local.py")
    assert found(tmp_path) == ["local.py", "sub/gen_keep.py", "sub/only_top.py"]


def test_parent_gitignore_applies_up_to_the_git_root(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    touch(tmp_path / ".gitignore", "*.py\n")  # outside the repo: ignored
    touch(tmp_path / "repo" / ".gitignore", "pkg/skip_*.py\n")
    touch(tmp_path / "repo" / "pkg" / "skip_me.py")
    touch(tmp_path / "repo" / "pkg" / "keep.py")
    assert found(tmp_path, tmp_path / "repo" / "pkg") == ["repo/pkg/keep.py"]


def test_config_excludes_apply_to_walked_and_given_paths(tmp_path: Path) -> None:
    touch(tmp_path / "legacy" / "old.py")
    touch(tmp_path / "new.py")
    gen = touch(tmp_path / "gen" / "a" / "g.py")
    excludes = [GlobSet(tmp_path, ["legacy/", "gen/**"])]
    assert found(tmp_path, excludes=excludes) == ["new.py"]
    assert found(tmp_path, gen, excludes=excludes) == []
    old = tmp_path / "legacy" / "old.py"
    assert found(tmp_path, old, excludes=excludes) == []  # its folder is excluded
    assert found(tmp_path, tmp_path / "legacy", excludes=excludes) == []


def test_symlinks_are_not_followed_while_walking(tmp_path: Path) -> None:
    outside = touch(tmp_path / "outside" / "o.py")
    tree = tmp_path / "tree"
    real = touch(tree / "real.py")
    (tree / "link_in.py").symlink_to(real)
    (tree / "link_out.py").symlink_to(outside)
    (tree / "dir_out").symlink_to(outside.parent, target_is_directory=True)
    (tree / "loop").symlink_to(tree, target_is_directory=True)
    (tree / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    assert found(tmp_path, tree) == ["tree/real.py"]


def test_given_symlink_is_read_and_inside_roots_decides_writes(tmp_path: Path) -> None:
    outside = touch(tmp_path / "outside" / "o.py")
    tree = tmp_path / "tree"
    real = touch(tree / "sub" / "real.py")
    (tree / "in.py").symlink_to(real)
    (tree / "out.py").symlink_to(outside)
    assert found(tmp_path, tree / "out.py") == ["tree/out.py"]
    assert inside_roots(tree / "in.py", [tree / "in.py"])
    assert inside_roots(tree / "in.py", [tree])
    assert not inside_roots(tree / "out.py", [tree / "out.py"])
    assert not inside_roots(tree / "out.py", [tree])
    assert inside_roots(real, [tree / "sub" / "real.py"])
    broken = tree / "broken.py"
    broken.symlink_to(tmp_path / "nowhere.py")
    result = discover([broken])
    assert result.files == [] and "broken symlink" in result.errors[0][1]


def test_unlistable_folder_is_an_error_not_a_silent_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(tmp_path / "ok" / "a.py")
    touch(tmp_path / "locked" / "b.py")
    real_scandir = os.scandir

    def scandir(path: str | os.PathLike[str]) -> object:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = discover([tmp_path])
    assert [p.name for p in result.files] == ["a.py"]
    assert result.errors == [(tmp_path / "locked", "cannot list folder: Permission denied")]


def test_unreadable_gitignore_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchport.errors import ConfigError

    touch(tmp_path / "a.py")
    touch(tmp_path / ".gitignore", "a.py\n")
    real = Path.read_text

    def unreadable(self: Path, *args: object, **kwargs: object) -> str:
        if self.name == ".gitignore":  # as `chmod 0` does for a normal user (root reads all)
            raise PermissionError(13, "Permission denied")
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", unreadable)
    with pytest.raises(ConfigError, match=r"cannot read .*\.gitignore: Permission denied"):
        discover([tmp_path])


# ---------------------------------------------------------------- given links and special files


@given(
    st.sampled_from(["file", "folder"]),
    st.sampled_from(["link", "real"]),
    st.sampled_from(["beside", "below", "outside", "above"]),
)
def test_a_given_link_is_written_through_only_within_the_folder_holding_it(
    tmp_path_factory: pytest.TempPathFactory, kind: str, link: str, where: str
) -> None:
    base = tmp_path_factory.mktemp("links")
    tree = base / "work" / "tree"
    targets = {
        "beside": tree / "target",
        "below": tree / "sub" / "deeper" / "target",
        "outside": base / "elsewhere" / "target",
        "above": base / "work" / "target",
    }
    target = targets[where]
    real_file = touch((target / "m.py") if kind == "folder" else target.with_suffix(".py"))
    given = tree / ("given" if kind == "folder" else "given.py")
    tree.mkdir(parents=True, exist_ok=True)
    if link == "link":
        given.symlink_to(real_file.parent if kind == "folder" else real_file)
        written = (given / "m.py") if kind == "folder" else given
    else:
        given = real_file.parent if kind == "folder" else real_file
        written = real_file
    # The oracle: the real location of what is written lies in the real folder that
    # holds the given name.
    holder = os.path.realpath(os.path.dirname(os.path.abspath(given)))
    real = os.path.realpath(written)
    expected = os.path.commonpath([holder, real]) == holder
    assert inside_roots(written, [given]) is expected


def test_fix_of_a_folder_linked_from_outside_writes_nothing_there(tmp_path: Path) -> None:
    from torchport.check import fix_paths

    outside = touch(tmp_path / "outside" / "m.py", "import torch\nx = torch.ones(1).cuda()\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "linked").symlink_to(outside.parent, target_is_directory=True)
    result = fix_paths([tree / "linked"], extend_select=["TP101"])
    assert result.exit_code == 2 and "symlink" in result.errors[0].message
    assert ".cuda()" in outside.read_text()  # left as it was


def test_a_fifo_named_on_the_command_line_is_skipped_not_waited_on(tmp_path: Path) -> None:
    import threading

    from torchport.check import check_paths

    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    done: list[object] = []
    worker = threading.Thread(
        target=lambda: done.append(
            check_paths([fifo, touch(tmp_path / "a.py")], extend_select=["TP101"])
        ),
        daemon=True,
    )
    worker.start()
    worker.join(60)  # a guard against hanging forever, not a timing
    assert done, "check waited on a FIFO"
    result = done[0]
    assert result.files == 1  # type: ignore[attr-defined]
    assert "FIFO" in result.errors[0].message  # type: ignore[attr-defined]
    with pytest.raises(SourceError, match="FIFO"):
        read_source(fifo)

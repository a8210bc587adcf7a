"""`fix` never damages or loses a file: permissions, owners, links, concurrent edits, bytes."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import _fix as fix_module
from torchport.check import fix_paths
from torchport.check.files._reading import Stamp, read_source
from torchport.check.files._write import WriteRefused, write_back
from torchport.cli._main import main

BEFORE = "import torch\n\nx = torch.zeros(2).cuda()\n"
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
as_root = pytest.mark.skipif(not ROOT, reason="needs root to chown and to act as another user")


def write(path: Path, text: str = BEFORE, mode: int | None = None) -> Path:
    path.write_text(text)
    if mode is not None:
        os.chmod(path, mode)
    return path


@posix
def test_read_only_file_is_refused_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Root passes permission checks, so the refusal is decided by the mode bits.
    path = write(tmp_path / "ro.py", mode=0o444)
    assert main(["fix", "--extend-select", "TP101", str(path)]) == 2
    out, err = capsys.readouterr()
    assert path.read_text() == BEFORE and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert "read-only" in err and "chmod u+w" in err
    assert "0 left" not in out and "not fully fixed" in out  # never "0 left" on a refusal
    assert "TP101" in out  # what was not fixed is still listed


@posix
def test_refused_file_beside_a_fixed_one(tmp_path: Path) -> None:
    write(tmp_path / "ro.py", mode=0o444)
    ok = write(tmp_path / "ok.py")
    result = fix_paths([tmp_path], extend_select=["TP101"])
    assert result.exit_code == 2 and [Path(e.path).name for e in result.errors] == ["ro.py"]
    assert "device" in ok.read_text() and [Path(c.path).name for c in result.changed] == ["ok.py"]
    assert {Path(f.path).name for f in result.remaining} >= {"ro.py"}


@posix
def test_mode_and_setuid_setgid_bits_are_kept(tmp_path: Path) -> None:
    path = write(tmp_path / "s.py", mode=0o6755)
    before = path.stat()
    assert fix_paths([path], extend_select=["TP101"]).errors == []
    after = path.stat()
    assert "device" in path.read_text()
    assert stat.S_IMODE(after.st_mode) == 0o6755 == stat.S_IMODE(before.st_mode)
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)


@posix
def test_hard_links_are_kept_by_editing_in_place(tmp_path: Path) -> None:
    path = write(tmp_path / "a.py", mode=0o640)
    link = tmp_path / "b.py"
    os.link(path, link)
    inode = path.stat().st_ino
    assert fix_paths([path], extend_select=["TP101"]).errors == []
    assert path.stat().st_ino == inode and path.stat().st_nlink == 2
    assert link.read_text() == path.read_text() != BEFORE
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


@posix
def test_extended_attributes_are_kept(tmp_path: Path) -> None:
    path = write(tmp_path / "x.py")
    try:
        os.setxattr(path, "user.torchport", b"kept")
    except OSError:
        pytest.skip("this file system has no user extended attributes")
    assert fix_paths([path], extend_select=["TP101"]).errors == []
    assert "device" in path.read_text() and os.getxattr(path, "user.torchport") == b"kept"


@as_root
def test_root_fixing_another_users_file_keeps_its_owner(tmp_path: Path) -> None:
    # Policy: a file its owner may write is fixed and stays theirs (root in a container
    # fixing a mounted checkout is common); a file no one may write is refused above.
    nobody = pwd.getpwnam("nobody")
    path = write(tmp_path / "n.py", mode=0o644)
    os.chown(path, nobody.pw_uid, nobody.pw_gid)
    assert fix_paths([path], extend_select=["TP101"]).errors == []
    st = path.stat()
    assert "device" in path.read_text()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (
        nobody.pw_uid,
        nobody.pw_gid,
        0o644,
    )


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A world-writable folder outside pytest's root-only tmp tree (like /tmp itself)."""
    folder = Path(tempfile.mkdtemp(prefix="torchport-shared-", dir="/tmp"))
    os.chmod(folder, 0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def fix_as_nobody(path: Path) -> tuple[int, str]:
    """Run ``fix_paths`` as the user ``nobody`` in a forked child: (exit code, errors)."""
    nobody = pwd.getpwnam("nobody")
    read, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root, fix, report through the pipe
        code, text = 99, "child failed"
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            result = fix_paths([path], extend_select=["TP101"], jobs=1)
            code, text = result.exit_code, "\n".join(str(e) for e in result.errors)
        except BaseException as exc:
            text = repr(exc)
        finally:
            os.write(write_end, f"{code}\n{text}".encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read, "rb") as fh:
        data = fh.read().decode()
    os.waitpid(pid, 0)
    code, _, text = data.partition("\n")
    return int(code), text


@as_root
def test_another_user_cannot_replace_a_root_owned_file_in_a_shared_folder(
    shared_folder: Path,
) -> None:
    # The folder lets `nobody` rename files over it; the file itself is root's, 0644.
    path = write(shared_folder / "root_owned.py", mode=0o644)
    code, errors = fix_as_nobody(path)
    assert code == 2 and "read-only" in errors, errors
    st = path.stat()
    assert path.read_text() == BEFORE and (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o644)
    assert sorted(p.name for p in shared_folder.iterdir()) == ["root_owned.py"]  # no temp left


@as_root
def test_another_users_world_writable_file_is_edited_in_place_and_stays_theirs(
    shared_folder: Path,
) -> None:
    nobody = pwd.getpwnam("nobody")
    path = write(shared_folder / "shared.py", mode=0o666)  # root's, writable by everyone
    code, errors = fix_as_nobody(path)
    assert code in (0, 1) and errors == "", errors
    st = path.stat()
    assert "device" in path.read_text()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o666) != (nobody.pw_uid, 0)


def test_edit_made_while_fix_runs_is_kept_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "busy.py")
    real_fix_text = fix_module.fix_text  # what a fix run loads (check/files/_work.py)

    def fix_while_someone_saves(*args: object, **kwargs: object) -> object:
        outcome = real_fix_text(*args, **kwargs)  # type: ignore[arg-type]
        path.write_text(BEFORE + "y = 1\n")  # an editor saves during the fix
        return outcome

    monkeypatch.setattr(fix_module, "fix_text", fix_while_someone_saves)
    result = fix_paths([path], extend_select=["TP101"], jobs=1)
    assert result.exit_code == 2 and "changed on disk" in result.errors[0].message
    assert path.read_text() == BEFORE + "y = 1\n"


def test_write_back_refuses_a_same_size_edit(tmp_path: Path) -> None:
    path = write(tmp_path / "same.py")
    stamp = read_source(path).stamp
    assert isinstance(stamp, Stamp)
    path.write_text(BEFORE.replace("zeros", "empty"))  # same size; maybe same mtime tick
    with pytest.raises(WriteRefused, match="changed on disk"):
        write_back(path, b"x = 1\n", stamp)
    assert "empty" in path.read_text()


def test_diff_keeps_the_bom_so_git_apply_takes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = tmp_path / "bom.py"
    looped = BEFORE.replace("x =", "for _ in range(2):\n    x =")  # TP106: a copy per step
    path.write_bytes(b"\xef\xbb\xbf" + looped.encode())
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "--extend-select", "TP101", "--diff", "bom.py"]) == 1
    patch = capsys.readouterr().out
    assert "\ufeffimport torch" in patch
    (tmp_path / "p.diff").write_text(patch, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    assert path.read_bytes().startswith(b"\xef\xbb\xbfimport torch\n") and b"device" in (
        path.read_bytes()
    )
    # nothing of TP101 is left (TP106, the copy per step, is off by default since samples A-T)
    assert main(["fix", "--extend-select", "TP101", "--diff", "bom.py"]) == 0
    assert capsys.readouterr().out == ""  # nothing would change: the patch was whole


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_line_endings_are_kept(tmp_path: Path, newline: str) -> None:
    path = tmp_path / "eol.py"
    path.write_bytes(BEFORE.replace("\n", newline).encode())
    assert fix_paths([path], extend_select=["TP101"]).errors == []
    data = path.read_bytes().decode()
    assert "device" in data
    other = {"\r": "\n", "\r\n": "\r"}[newline]
    assert other not in data.replace("\r\n", "") if newline == "\r\n" else other not in data
    assert data.count("\r") == data.count("\n") if newline == "\r\n" else True
    assert fix_paths([path], extend_select=["TP101"]).changed == []  # idempotent


def test_mixed_line_endings_are_left_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / "mixed.py"
    path.write_bytes(b"import torch\r\n\r\nx = torch.zeros(2).cuda()\n")
    assert fix_paths([path], extend_select=["TP101"]).errors == []
    assert path.read_bytes().startswith(b"import torch\r\n")


def test_diff_of_a_latin1_file_is_in_latin1_so_git_apply_takes_it(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = tmp_path / "latin.py"
    path.write_bytes(("# -*- coding: latin-1 -*-\ns = 'é'\n" + BEFORE).encode("latin-1"))
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "--extend-select", "TP101", "--diff", "latin.py"]) == 1
    patch = capsysbinary.readouterr().out
    assert "s = 'é'".encode("latin-1") in patch
    (tmp_path / "p.diff").write_bytes(patch)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    assert b"device" in path.read_bytes() and "é".encode("latin-1") in path.read_bytes()


_BODY = st.lists(
    st.sampled_from(
        ["x = torch.zeros(2).cuda()", "y = x.cuda()", "s = '''a\nb'''", "# c", "", "z = 1",
         "def f(t):\n    return t.cuda()"]
    ),
    min_size=1,
    max_size=6,
)  # fmt: skip


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=_BODY, newline=st.sampled_from(["\n", "\r\n", "\r"]), bom=st.booleans())
def test_fixed_file_keeps_one_kind_of_line_ending_and_its_bom(
    tmp_path: Path, body: list[str], newline: str, bom: bool
) -> None:
    text = "import torch\n" + "\n".join(body) + "\n"
    path = tmp_path / "eol.py"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.replace("\n", newline).encode())
    assert fix_paths([path], extend_select=["TP101"], unsafe=True).errors == []
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") is bom
    crlf = data.count(b"\r\n")
    kinds = {"\n": data.count(b"\n") - crlf, "\r\n": crlf, "\r": data.count(b"\r") - crlf}
    assert {k for k, n in kinds.items() if n} == {newline}


@as_root
def test_hard_link_planted_to_another_owners_file_is_refused(shared_folder: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    os.chown(shared_folder, nobody.pw_uid, nobody.pw_gid)  # a checkout that is nobody's
    target = write(Path(tempfile.mkdtemp(dir="/tmp")) / "roots.py", mode=0o644)  # root's file
    try:
        link = shared_folder / "innocent.py"
        os.link(target, link)
        result = fix_paths([link], extend_select=["TP101"])
        assert result.exit_code == 2 and "hard link" in result.errors[0].message
        assert target.read_text() == BEFORE
    finally:
        shutil.rmtree(target.parent, ignore_errors=True)


# ---------------------------------------------------------------- temp files a killed run left


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _killed_fix_leaves(folder: Path, name: str = "a.py") -> Path:
    """Run a real write_back in a child killed after it wrote its temp file: what it leaves."""
    target = folder / name
    if not target.exists():
        target.write_text(BEFORE)
    before = set(folder.iterdir())
    code = (
        "import os, sys\n"
        "from torchport.check.files import _write\n"
        "from torchport.check.files._reading import read_source\n"
        "checks = []\n"
        "real_check = _write._check_unchanged\n"
        "def check(*args):  # its second call comes after the temp is written: die there\n"
        "    checks.append(1)\n"
        "    if len(checks) == 2:\n"
        "        os._exit(9)\n"
        "    return real_check(*args)\n"
        "_write._check_unchanged = check\n"
        "source = read_source(sys.argv[1])\n"
        "_write.write_back(sys.argv[1], b'import torch\\n', source.stamp)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True)
    assert done.returncode == 9, done.stderr
    (left,) = set(folder.iterdir()) - before
    return left


def test_a_killed_runs_temp_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    from torchport.check.files._write import remove_stale_temps

    left = _killed_fix_leaves(tmp_path)
    live = tmp_path / f".b.py.{os.getpid()}.l1ve.torchport"  # a run going on in this process
    live.write_text("half")
    os.link(left, tmp_path / "kept-link")  # a second name: not provably a lone temp
    assert remove_stale_temps(tmp_path) == []
    os.unlink(tmp_path / "kept-link")
    assert remove_stale_temps(tmp_path) == [left]
    assert live.exists() and (tmp_path / "a.py").read_text() == BEFORE


_PID = st.one_of(st.integers(1, 4_000_000), st.just(os.getpid()))
_LOOKALIKE = st.builds(
    lambda name, pid, tail: f".{name}.{pid}.{tail}.torchport",
    st.sampled_from(["a.py", "b.pyi", "n.ipynb", "x"]),
    _PID,
    st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=8),
)
_MTIMES = st.one_of(
    st.none(), st.integers(0, 2**31 - 1).map(lambda s: s * 10**9), st.integers(315_532_800 * 10**9,
    315_532_801 * 10**9),  # the mark's own date, any nanosecond
)  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_LOOKALIKE, _MTIMES), max_size=6, unique_by=lambda t: t[0]))
def test_no_file_torchport_did_not_write_is_ever_removed(
    tmp_path_factory: pytest.TempPathFactory, files: list[tuple[str, int | None]]
) -> None:
    """Oracle: the folder's listing is unchanged, whatever the names and dates of user files."""
    from torchport.check.files._write import remove_stale_temps

    folder = tmp_path_factory.mktemp("lookalikes")
    for name, mtime in files:
        path = folder / name
        path.write_text("the user's own")
        if mtime is not None:
            os.utime(path, ns=(mtime, mtime))
    before = sorted(p.name for p in folder.iterdir())
    assert remove_stale_temps(folder) == []
    assert sorted(p.name for p in folder.iterdir()) == before


def test_an_hour_old_temp_of_a_live_pid_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchport.check.files import _write

    left = _killed_fix_leaves(tmp_path)
    pid = int(left.name.split(".")[3])
    monkeypatch.setattr(_write, "_alive", lambda p: p == pid)  # the pid was reused
    assert _write.remove_stale_temps(tmp_path) == []
    now = time.time()
    monkeypatch.setattr(_write.time, "time", lambda: now + 2 * 3600)
    assert _write.remove_stale_temps(tmp_path) == [left]


def test_fix_never_cleans_through_a_symlinked_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    left = _killed_fix_leaves(outside, "b.py")
    user = outside / f".c.py.{_dead_pid()}.abc.torchport"
    user.write_text("the user's own")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "linked").symlink_to(outside, target_is_directory=True)
    (outside / "b.py").write_text(BEFORE)
    fix_paths([tree], extend_select=["TP101"])  # the walk does not follow the link
    fix_paths(
        [tree / "linked" / "b.py"], extend_select=["TP101"]
    )  # given through it: refused, and not cleaned
    assert left.exists() and user.exists()
    fix_paths(
        [outside / "b.py"], extend_select=["TP101"]
    )  # the folder's own path: ours is removed, theirs kept
    assert not left.exists() and user.exists()


def test_the_next_fix_removes_what_a_killed_fix_left(tmp_path: Path) -> None:
    left = _killed_fix_leaves(tmp_path)
    other = tmp_path / ".b.py.q9r8s7.torchport"  # a user's file with a temp-like name
    other.write_text("")
    fix_paths([tmp_path / "a.py"], extend_select=["TP101"])
    assert not left.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".b.py.q9r8s7.torchport", "a.py"]

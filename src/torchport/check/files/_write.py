"""Writing a fixed file back without damaging or losing it.

The decisions, in one place (``torchport fix`` is meant to run unattended in
pre-commit, so a file it cannot write exactly as it was is refused, never
half-written):

* **Read-only files are refused.** Replacing a file through its folder (a temp
  file renamed over it) needs write permission on the folder only, so a
  read-only file, or another user's file in a shared folder, would be silently
  replaced. Permission is decided by the file's own mode bits: for a normal
  user by :func:`os.access` (mode, owner, ACLs); for root, which passes every
  permission check, by the owner's write bit, so ``chmod a-w`` still protects
  a file from ``sudo torchport fix``.
* **Files edited while ``fix`` runs are refused.** Before writing, the file is
  read again and compared with what was fixed (bytes, size, mtime, inode); if
  anything differs the newer content stays and the user is told to run again.
* **Mode, owner, group, setuid/setgid bits, hard links and extended attributes
  (ACLs, SELinux labels) are kept.** The fixed text goes to a temp file in the
  same folder that is given the original's owner and group and then its mode
  (``chown`` clears setuid/setgid, so the mode comes last), fsynced, and renamed
  over the original: readers never see half a file. When that would lose
  something (the file has more than one hard link or has extended attributes;
  the temp file cannot be given the owner, group or mode; the folder is not
  writable) the file is rewritten in place, the same inode, as Black and Ruff
  always do. In place, a non-root write clears setuid/setgid bits (the kernel
  does it), so such a file is refused instead.
* **A hard link whose owner is not its folder's owner is refused**: a link
  planted in a checkout to another user's (or root's) file would otherwise be
  edited in place through it.
* **Temp files a killed run left behind are removed by the next one, and
  nothing else is.** A temp file is named ``.<name>.<pid>.<random>.torchport``
  after the file it replaces and the process writing it, and once its bytes are
  written it carries torchport's mark: a modification time on 1980-01-01 whose
  nanoseconds are a hash of its name, its inode and its owner (reset to now just
  before it replaces the original). :func:`remove_stale_temps` removes only a
  regular, unlinked-elsewhere file of the running user whose name matches, whose
  mark verifies, and whose process is gone (or that is over an hour old): a
  user's own file that merely looks like a temp (``.a.py.1.x.torchport``) carries
  no mark and is never touched. Cleaning happens only in folders ``fix`` may
  write (:func:`~torchport.check.files._discovery.inside_roots`) whose path holds
  no symlink at all (so never through a symlinked folder). A run killed in the
  instant between creating a temp and marking it leaves an unmarked temp
  behind: it is left, not guessed at.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
import time
from pathlib import Path

from torchport.check.files._reading import Stamp

__all__ = ["WriteRefused", "remove_stale_temps", "write_back"]

_SUFFIX = ".torchport"
_STALE_AFTER_S = 3600  # a temp file lives for one write: an hour-old one is surely left over
_MARK_SECONDS = 315_532_800  # 1980-01-01 UTC: no edit dates a file there


class WriteRefused(Exception):
    """The file was left as it is; the message says why and what to do."""


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _check_writable(path: Path, st: os.stat_result) -> None:
    # Root passes every permission check: honour the owner's write bit instead.
    writable = bool(st.st_mode & stat.S_IWUSR) if _is_root() else os.access(path, os.W_OK)
    if not writable:
        mode = stat.filemode(st.st_mode)
        raise WriteRefused(
            f"not fixed: the file is read-only ({mode}, owner uid {st.st_uid}) and torchport "
            f"writes only files it may write; make it writable (chmod u+w) and run fix again, "
            f"or use `fix --diff` to see the changes"
        )


def _check_unchanged(path: Path, before: Stamp) -> os.stat_result:
    """Read ``path`` again; raise unless it is still exactly what was fixed."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read()
    except OSError as exc:
        raise WriteRefused(f"not fixed: cannot read it again: {exc.strerror or exc}") from exc
    now = Stamp.of(st, data)
    if now != before:
        raise WriteRefused(
            "not fixed: the file changed on disk while torchport fix ran (its content, "
            "size or modification time differs from what was read); the newer content "
            "is kept; run fix again"
        )
    return st


def _has_xattrs(path: Path) -> bool:
    if not hasattr(os, "listxattr"):
        return False
    try:
        return bool(os.listxattr(path))
    except OSError:
        return False  # not supported on this file system: nothing to lose


def _sync_folder(folder: Path) -> None:
    """Make the rename durable: without this a crash can bring the old file back."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _mark_of(name: str, st: os.stat_result) -> int:
    """The modification time (ns) that marks the temp file ``name`` with ``st`` as torchport's."""
    key = f"torchport-temp\0{name}\0{st.st_dev}\0{st.st_ino}\0{st.st_uid}"
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()
    return _MARK_SECONDS * 1_000_000_000 + int.from_bytes(digest[:8], "big") % 1_000_000_000


def _mark(path: str) -> None:
    """Give the temp file ``path`` torchport's mark (see the module docstring)."""
    with contextlib.suppress(OSError):  # not settable here: the temp is then never removed
        st = os.stat(path, follow_symlinks=False)
        os.utime(path, ns=(st.st_atime_ns, _mark_of(os.path.basename(path), st)))


def is_marked(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a temp file torchport wrote (name, mark, owner; see the docstring)."""
    name = os.path.basename(path)
    if _TEMP.match(name) is None:
        return False
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    owner = os.geteuid() if hasattr(os, "geteuid") else st.st_uid
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_nlink == 1
        and st.st_uid == owner
        and st.st_mtime_ns == _mark_of(name, st)
    )


def _replace(path: Path, data: bytes, st: os.stat_result, before: Stamp) -> bool:
    """Temp file + rename; False (nothing written) when that would not keep owner or mode."""
    try:
        fd, tmp = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=_SUFFIX
        )
    except OSError:
        return False  # folder not writable: the file itself may still be
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        _mark(tmp)  # from here a killed run leaves a temp the next run can prove is ours
        tmp_st = os.stat(tmp)
        if (tmp_st.st_uid, tmp_st.st_gid) != (st.st_uid, st.st_gid):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                return False  # only root may give a file away: edit in place instead
        os.chmod(tmp, stat.S_IMODE(st.st_mode))  # after chown, which clears setuid/setgid
        if os.stat(tmp).st_mode != st.st_mode:
            return False  # e.g. setgid for a group we are not in is dropped by chmod
        _check_unchanged(path, before)
        os.utime(tmp)  # the fixed file is dated now, not with the mark
        os.replace(tmp, path)
        tmp = ""
        _sync_folder(path.parent)
        return True
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _rewrite_in_place(path: Path, data: bytes, st: os.stat_result, before: Stamp) -> None:
    if st.st_mode & (stat.S_ISUID | stat.S_ISGID) and not _is_root():
        raise WriteRefused(
            "not fixed: it has the setuid/setgid bit and cannot be replaced here (hard "
            "links, extended attributes, another owner or a read-only folder), and "
            "rewriting it in place would clear that bit; fix it as root or by hand"
        )
    _check_unchanged(path, before)
    with open(path, "r+b") as fh:
        fh.write(data)
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def write_back(path: str | os.PathLike[str], data: bytes, before: Stamp) -> None:
    """Write ``data`` over the real file behind ``path``, keeping everything but its content.

    ``before`` is the :class:`~torchport.check.files._reading.Stamp` of the bytes that
    were fixed (see the module docstring for the policy).

    Raises:
        WriteRefused: read-only, changed since it was read, or it cannot be written
            without losing its setuid/setgid bits.
        OSError: the write itself failed (disk full ...).
    """
    real = Path(os.path.realpath(path))
    st = os.stat(real)
    _check_writable(real, st)
    if st.st_nlink > 1 and os.stat(real.parent).st_uid != st.st_uid:
        # A hard link into someone else's folder to a file they do not own is how a user
        # gets root (or a colleague) to edit a file it never meant to: edit it where it lives.
        raise WriteRefused(
            f"not fixed: it is a hard link to a file owned by uid {st.st_uid} in a folder "
            f"owned by uid {os.stat(real.parent).st_uid}; torchport edits hard-linked files "
            f"only where file and folder have one owner; fix the file at its own path"
        )
    _check_unchanged(real, before)
    if st.st_nlink == 1 and not _has_xattrs(real) and _replace(real, data, st, before):
        return
    _rewrite_in_place(real, data, st, before)


# `.a.py.<pid>.<random>.torchport`
_TEMP = re.compile(r"^\.(?P<name>.+?)\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.torchport$")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # another user's live process
    return True


def remove_stale_temps(folder: str | os.PathLike[str]) -> list[Path]:
    """Remove the temp files a killed ``fix`` left in ``folder``; returns those removed.

    Only files :func:`is_marked` proves torchport wrote. One written by a live
    process (a run going on now) is kept unless it is over an hour old. Errors (a
    file gone meanwhile, no permission) are ignored: cleaning up never stops a run.
    The caller decides that ``folder`` is one ``fix`` may write.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        found = _TEMP.match(entry.name)
        if found is None or not is_marked(entry.path):
            continue
        try:
            # The mark took the modification time: the change time says when it was written.
            age = now - entry.stat(follow_symlinks=False).st_ctime
        except OSError:
            continue
        if _alive(int(found["pid"])) and age < _STALE_AFTER_S:
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed

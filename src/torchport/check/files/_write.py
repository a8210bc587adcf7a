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
* **Temp files a killed run left behind are removed by the next one.** A temp
  file is named ``.<name>.<pid>.<random>.torchport`` after the file it
  replaces and the process writing it; :func:`remove_stale_temps` removes
  those whose process is gone (or that are over an hour old, or carry no
  process id), never one a live run is writing.
"""

from __future__ import annotations

import contextlib
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


# `.a.py.<pid>.<random>.torchport` (and `.a.py.<random>.torchport` from older versions)
_TEMP = re.compile(r"^\.(?P<name>.+?)\.(?:(?P<pid>\d+)\.)?[A-Za-z0-9_]+\.torchport$")


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

    One written by a live process (a run going on now) is kept unless it is
    over an hour old. Errors (a file gone meanwhile, no permission) are ignored:
    cleaning up never stops a run.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        found = _TEMP.match(entry.name)
        if found is None or not entry.is_file(follow_symlinks=False):
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        pid = found["pid"]
        if pid is not None and _alive(int(pid)) and age < _STALE_AFTER_S:
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed

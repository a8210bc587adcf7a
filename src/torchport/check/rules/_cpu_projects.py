"""Projects that never place anything on a device, for TP301 (their checkpoints are CPU ones).

``torch.save(self.actor.state_dict(), path)`` and ``torch.load(path)`` in an agent of a
project whose Python files never name a device (ikostrikov/pytorch-ddpg-naf): every
checkpoint the project writes holds CPU tensors, so ``map_location`` changes nothing.
Both must hold: the load's own file saves with ``torch.save`` (what it loads is the
project's own kind of checkpoint, not a download), and no ``.py`` file of the project
names a device (``cuda``, ``device``, ``.to(``, ``mps``, ``xpu``, ``accelerator``,
anywhere in its text, comments included). A project that uses a device elsewhere
(PARL's power-network agent, whose shipped checkpoints were trained on GPUs) keeps the
finding.

The project is the folder tree under the nearest folder above the file that holds a
project marker (``.git``, ``pyproject.toml``, ``setup.py``, ``setup.cfg``). No marker
(the file's folder may be one corner of a project that uses devices elsewhere), more
than ``_MOST_FILES`` Python files, or an unreadable one: not known to be CPU-only.
Each file's answer is kept per (path, modification time, size): a project is read
once per run.
"""

from __future__ import annotations

import functools
import os
import re

from torchport.check._context import Context
from torchport.check._listing import note

__all__ = ["cpu_only_project"]

_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
_MOST_FILES = 400
_DEVICE = re.compile(rb"cuda|device|\.to\(|\bmps\b|\bxpu\b|accelerator", re.IGNORECASE)
_SKIPPED = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist"})


def cpu_only_project(ctx: Context) -> bool:
    """Whether the file saves checkpoints itself in a project that never names a device."""
    known = ctx.memo.get("cpu_only_project")  # once per file, however many loads it has
    if isinstance(known, bool):
        return known
    answer = _cpu_only_project(ctx)
    ctx.memo["cpu_only_project"] = answer
    return answer


def _cpu_only_project(ctx: Context) -> bool:
    if not ctx.mentions("torch.save") or _DEVICE.search(ctx.source.encode("utf-8", "replace")):
        return False
    root = _project_root(os.path.dirname(os.path.abspath(ctx.path)))
    files = None if root is None else _python_files(root)
    return files is not None and not any(_names_a_device(*f) for f in files)


def _project_root(folder: str) -> str | None:
    here = folder
    while True:
        for marker in _MARKERS:  # what the check cache's answer rests on (check/_listing.py)
            note(os.path.join(here, marker))
        if any(os.path.exists(os.path.join(here, m)) for m in _MARKERS):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None  # no marker above: where the project ends is unknown
        here = parent


def _python_files(root: str) -> list[tuple[str, int, int]] | None:
    """(path, mtime, size) of each ``.py`` file under ``root``; None past the limit."""
    found: list[tuple[str, int, int]] = []
    try:
        for here, folders, names in os.walk(root):
            note(here)
            folders[:] = [f for f in folders if f not in _SKIPPED and not f.startswith(".")]
            for name in names:
                if name.endswith(".py"):
                    note(os.path.join(here, name))
                    stat = os.stat(os.path.join(here, name))
                    found.append((os.path.join(here, name), stat.st_ctime_ns, stat.st_size))
                    if len(found) > _MOST_FILES:
                        return None
    except OSError:
        return None
    return found


@functools.lru_cache(maxsize=1024)
def _names_a_device(path: str, mtime_ns: int, size: int) -> bool:
    """Whether the file's text names a device (an unreadable file counts as naming one)."""
    del mtime_ns, size  # the cache key
    try:
        with open(path, "rb") as handle:
            return _DEVICE.search(handle.read()) is not None
    except OSError:
        return True

"""The threads that ran beside an audit: its counts leave their work out, and the report says so."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

__all__ = ["OtherThreads"]


class OtherThreads:
    """Threads other than an audited one that ran while an audit watched.

    A function mode and a dispatch mode watch the thread that pushed them; a copy or a
    read made in another thread (a prefetching thread's, a logger's) is not counted,
    and the report says how many threads ran beside the audit rather than leave them
    out silently. Threads alive when a block opens or closes are listed from
    :func:`threading.enumerate`; a thread started in between is heard through
    :func:`threading.setprofile`, whose hook runs once, at the thread's first call,
    and removes itself there (installed only when no other profile hook is set, so a
    profiler's own hook is never replaced).
    """

    def __init__(self) -> None:
        self.started = 0  # threads started while the hook stood (idents are reused: counted)
        self.idents: set[int] = set()  # and their idents, to tell them from the threads alive
        self.users = 0
        self.hooked = False
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):  # a forked child's one thread holds no lock
            os.register_at_fork(after_in_child=self._after_fork_in_child)

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()

    def hook(self, frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)  # once per thread: from here on it runs unprofiled
        self.started += 1
        self.idents.add(threading.get_ident())

    def open(self) -> None:
        with self._lock:
            self.users += 1
            if self.users == 1 and threading.getprofile() is None:
                threading.setprofile(self.hook)
                self.hooked = True

    def close(self) -> None:
        with self._lock:
            self.users -= 1
            if self.users == 0:
                if self.hooked and threading.getprofile() == self.hook:
                    threading.setprofile(None)
                self.hooked = False
                self.idents.clear()

    def alive(self) -> set[int]:
        """Idents of the other threads alive now that were not started under the hook."""
        here = threading.get_ident()
        idents = {t.ident for t in threading.enumerate() if t.ident is not None}
        return idents - self.idents - {here}

"""The end of a run, in Python's order: non-daemon threads, then ``atexit`` handlers, then the exit.

Python ends a program by joining its non-daemon threads (``ThreadPoolExecutor``
pools are shut down first, their queued work done), then running ``atexit``
handlers, and, when a ``KeyboardInterrupt`` ended it, by killing itself with
SIGINT so that the shell sees "killed by SIGINT" and a loop around it stops.
``torchport run`` does the same while the redirect is still in place, so
threads and handlers see the same CUDA the script saw, and then frees what the
script's reference cycles still hold (process groups among them) while the
interpreter is alive: see :func:`free_cycles`.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from torchport._origin import caller_is_library

__all__ = ["ExitHandlers", "die_by_signal", "free_cycles", "join_threads"]

_MISSING = object()
_RUN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class ExitHandlers:
    """The ``atexit`` handlers the script registers, held back to run before the redirect ends.

    Handlers that torch and torchport register go to :mod:`atexit` as usual.
    """

    def __init__(self) -> None:
        self._handlers: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []

    @contextlib.contextmanager
    def collecting(self) -> Iterator[None]:
        """Inside the block, the script's ``atexit.register`` / ``unregister`` come here."""
        register, unregister = atexit.register, atexit.unregister

        def collect(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Callable[..., Any]:
            if caller_is_library(past=(_RUN_DIR,)):
                return register(func, *args, **kwargs)
            self._handlers.append((func, args, kwargs))
            return func

        def forget(func: Callable[..., Any], /) -> None:
            self._handlers = [entry for entry in self._handlers if entry[0] != func]
            unregister(func)

        atexit.register, atexit.unregister = collect, forget
        try:
            yield
        finally:
            atexit.register, atexit.unregister = register, unregister

    def run(self) -> None:
        """Run the collected handlers, last registered first, as Python does at exit.

        A handler that raises is reported on stderr and the others still run.
        """
        while self._handlers:
            func, args, kwargs = self._handlers.pop()
            try:
                func(*args, **kwargs)
            except SystemExit:
                pass  # Python ignores SystemExit raised in an atexit handler
            except BaseException as exc:
                print(f"Exception ignored in atexit callback: {func!r}", file=sys.stderr)
                traceback.print_exception(exc)
                if isinstance(exc, KeyboardInterrupt):
                    raise


def join_threads(before: set[threading.Thread]) -> None:
    """Wait for the non-daemon threads started since ``before`` was taken, as Python does at exit.

    Worker threads of a ``ThreadPoolExecutor`` the script left open are told to
    stop once their queued work is done, as Python's exit does, so that an idle
    pool cannot keep the run alive forever.
    """
    current = threading.current_thread()
    while True:
        pending = [
            thread
            for thread in threading.enumerate()
            if thread is not current and not thread.daemon and thread not in before
        ]
        if not pending:
            return
        for thread in pending:
            _shut_down_pool_of(thread)
            thread.join()


def free_cycles() -> None:
    """Free what only the collector can free, now, while the interpreter is alive.

    Called once the script's ``__main__`` module is gone, its threads joined and
    its ``atexit`` handlers run, as Python's own exit clears ``__main__`` after
    them. ``DistributedDataParallel`` sits in a reference cycle (so does any
    module-level function with its globals), so its reducer and the process
    group the reducer holds live until the collector runs. Left to the
    interpreter's exit, ``~ProcessGroupGloo`` joins its worker threads, and a
    worker that drops the last holder of the redirect's function mode must take
    the GIL; a thread taking the GIL of a finalizing interpreter is ended by
    ``pthread_exit`` through a ``noexcept`` frame: "terminate called without an
    active exception", SIGABRT after the script's last line (2 runs in 30 of
    examples/ddp_train.py under ``--nproc 2`` here). Python's exit collects these
    cycles too; this does it a moment earlier, with the redirect still in place.
    """
    gc.collect()


def _shut_down_pool_of(thread: threading.Thread) -> None:
    pools = sys.modules.get("concurrent.futures.thread")
    if pools is None or thread not in getattr(pools, "_threads_queues", {}):
        return
    # The worker's first argument is a weak reference to its executor (CPython 3.9+).
    reference = getattr(thread, "_args", (None,))[0]
    executor = reference() if callable(reference) else None
    if executor is not None:
        executor.shutdown(wait=False)


def die_by_signal(signum: int) -> int:
    """End this process by ``signum`` with its default action, as Python does after Ctrl-C.

    Flushes stdout and stderr first. Returns ``128 + signum`` only if the process
    is still alive afterwards (the signal is blocked), for the caller to exit with.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum

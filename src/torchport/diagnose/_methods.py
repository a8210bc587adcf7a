"""Watching Python-level tensor calls (``.item()``, ``.tolist()``, ``.to()``, ...) during an audit.

These calls never reach a dispatch mode as one op of their own, so
:func:`torchport.audit` sees them at the Python level, through a
``TorchFunctionMode`` (:class:`FunctionWatcher`) that each recording audit puts at
the bottom of the function-mode stack of the thread that entered it (the program's own
modes, torchport's redirect among them, rewrite a call first; the audit sees the call
that runs). Only the callables in :data:`._ops.METHOD_TABLE`
are looked at; every other torch function passes straight through (one dict miss).

Invariant: watching never changes the program. No attribute of a torch class is set
or deleted, ever: an earlier version replaced ``torch.Tensor.__getitem__`` and kin on
the class and deleted them afterwards, and CPython then left a sequence slot on every
tensor, so ``torch.tensor([t0, t1])`` of 0-dim tensors raised ``TypeError`` during the
audit and for the rest of the process. ``tests/diagnose/test_invariant.py`` holds the
rule (class dictionaries and slot behaviour before and after) and a differential
oracle (generated programs with and without the audit).

What remains module-level is swapped on the ``torch`` and ``torch.jit`` *modules* (never
a class) while an audit watches, and restored exactly:

* ``torch.jit.script``, ``torch.jit.trace`` and ``torch.jit.trace_module`` *step
  aside*: while they run, the audits of the calling thread lift their modes off the
  stacks (the tracer fails under any dispatch mode). What they compile or trace is
  not audited; the compiled code runs audited afterwards, op by op.
* ``torch.save``/``torch.load`` report what they saved or loaded, after the call.

A warning that torch's C++ code raises is attributed to the innermost Python frame,
which for a watched call is the function mode's. The calls that warn
(:data:`._ops.MAY_WARN`, when their arguments can), and every watched call while
CUDA's sync debug mode is on, record the warnings and re-issue them at their caller's
line, with the caller's filters and once-registry. (Warnings of torch functions the
table does not watch keep their message and category; the line CPython names for them
may be the mode's, as for every ``TorchFunctionMode``.)

Function modes are per thread: copies and reads made in other threads are not seen.
The audit counts the threads that ran beside it (:class:`OtherThreads`) so the report
can say its counts leave them out. Apart from watching, each open audit block
(:func:`open_block`) hears the copies torchport's own movers skip
(``torchport._skipped``), for its whole length.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any, Protocol

import torch
import torch._ops
import torch.jit
import torch.utils._python_dispatch
from torch.overrides import TorchFunctionMode

from torchport import _skipped, hardware
from torchport.diagnose import _indexing, _ops
from torchport.diagnose._ops import OpEntry

__all__ = [
    "OTHER_THREADS",
    "FunctionWatcher",
    "Observer",
    "OtherThreads",
    "QuietCount",
    "close_block",
    "observers_here",
    "open_block",
    "stepping_aside",
    "unwatch",
    "watch",
]


class QuietCount(threading.local):
    """Per thread: how many watched calls are running, whose aten ops are theirs, not new;
    where the last copy to the host was made, and the tensors that hold it there (the
    copy and what the ops after it made from it): their reads on that line are the copy's
    own. ``spread`` is how many more ops may add to them."""

    quiet = 0
    host_copy: tuple[Any, ...] | None = None
    host_ids: set[int] | None = None
    spread = 0


class Observer(Protocol):
    """What a wrapper reports to: the audit's recorder."""

    local: QuietCount

    def observe_python(
        self, func: Any, entry: OpEntry, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
    ) -> None: ...

    def observe_skipped(self, tensors: Iterable[Any], device: Any, by: str) -> None: ...

    def observe_checkpoint(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
    ) -> None: ...

    def observe_host_index(self, func: Any, args: tuple[Any, ...]) -> None: ...

    def aside(self) -> contextlib.AbstractContextManager[None]: ...

    def lift(self) -> object | None: ...

    def restore(self, token: object) -> None: ...


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

    def hook(self, frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)  # once per thread: from here on it runs unprofiled
        self.started += 1
        self.idents.add(threading.get_ident())

    def open(self) -> None:
        with _lock:
            self.users += 1
            if self.users == 1 and threading.getprofile() is None:
                threading.setprofile(self.hook)
                self.hooked = True

    def close(self) -> None:
        with _lock:
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


OTHER_THREADS = OtherThreads()
_local = threading.local()  # .observers: list[Observer], the audits recording in this thread
_lock = threading.RLock()
_users = 0
_suspended = 0  # step-aside blocks running (in any thread): wrappers stay down
# (owner, name, original, whether the owner defined it itself, our wrapper)
_installed: list[tuple[types.ModuleType, str, Any, bool, Any]] = []
_THIS_FILE = __file__
# Frames that exist only because the audit's dispatch mode is on: a warning torch raises
# from C++ names the innermost Python frame, which under the mode can be torch's dispatch
# code (torch 2.15 decomposes complex->real .to() in torch/_ops.py) instead of the caller.
_DISPATCH_FILES = frozenset(
    module.__file__ or "" for module in (torch._ops, torch.utils._python_dispatch)
)


def _observers() -> list[Observer]:
    observers: list[Observer] | None = getattr(_local, "observers", None)
    if observers is None:
        observers = _local.observers = []
    return observers


def observers_here() -> list[Observer]:
    """The audits whose blocks are open in the calling thread (a copy), innermost last."""
    return list(getattr(_local, "blocks", []))


_blocks_open = 0  # audit blocks open in any thread: torchport._skipped is listened to


def open_block(observer: Observer) -> None:
    """An audit block starts in this thread; the copies torchport's movers skip reach it.

    Apart from :func:`watch`: with sampling (``audit(every=N)``) a mover hands a batch
    over between steps (the loop's own ``for`` line), where nothing is watched, and the
    audit still needs to hear of it (it keeps those the next recorded step consumes).
    """
    global _blocks_open
    blocks: list[Observer] | None = getattr(_local, "blocks", None)
    if blocks is None:
        blocks = _local.blocks = []
    blocks.append(observer)
    with _lock:
        _blocks_open += 1
        if _blocks_open == 1:
            _skipped.listen(_tell_skipped)


def close_block(observer: Observer) -> None:
    """The audit block of ``observer`` ended (a second call does nothing)."""
    global _blocks_open
    blocks: list[Observer] = getattr(_local, "blocks", [])
    if not any(b is observer for b in blocks):
        return
    blocks[:] = [b for b in blocks if b is not observer]
    with _lock:
        _blocks_open -= 1
        if _blocks_open == 0:
            _skipped.unlisten(_tell_skipped)


def _tell_skipped(tensors: Iterable[Any], device: Any, *, by: str) -> None:
    """The listener ``torchport._skipped`` calls: pass the news to this thread's audits."""
    blocks = getattr(_local, "blocks", None)
    if not blocks:
        return  # another thread's mover: its audits (if any) are not this thread's
    tensors = tuple(tensors)
    for observer in blocks:
        if not observer.local.quiet:
            observer.observe_skipped(tensors, device, by)


def _after_fork_in_child() -> None:
    """The child of a fork has one thread: locks another thread held stay held there."""
    global _lock
    _lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _matches(
    applies: Callable[[Any, Any], bool], args: Sequence[Any], kwargs: Mapping[str, Any]
) -> bool:
    try:
        return bool(applies(args, kwargs))
    except Exception:  # odd arguments: the call itself will say what is wrong with them
        return False


def _reissue(caught: list[warnings.WarningMessage], caller: FrameType | None) -> None:
    """Issue recorded warnings again, those pinned on a wrapper at ``caller`` instead."""
    for w in caught:
        if (w.filename == _THIS_FILE or w.filename in _DISPATCH_FILES) and caller is not None:
            module_globals = caller.f_globals
            warnings.warn_explicit(
                w.message,
                w.category,
                caller.f_code.co_filename,
                caller.f_lineno or 0,
                module=module_globals.get("__name__", "<string>"),  # as warnings.warn names it
                registry=module_globals.setdefault("__warningregistry__", {}),
                # no module_globals: for `python -c` code its loader (BuiltinImporter)
                # raises ImportError when asked for the source line
            )
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


# torch.cuda.set_sync_debug_mode("warn") makes every synchronizing call warn from C++;
# through a wrapper those warnings would name the wrapper, so while the mode is on every
# wrapper re-issues. Read per call (a C getter); without CUDA it is never on.
_sync_debug_mode = hardware.sync_debug_mode_reader()


def _call(
    original: Callable[..., Any], args: Any, kwargs: Any, warns: Callable[[Any], bool] | None
) -> Any:
    if (warns is None or not warns(args)) and not _sync_debug_mode():
        return original(*args, **kwargs)
    # Record, then re-issue at the caller: the filters (and "error") apply there.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = original(*args, **kwargs)
    if caught:
        _reissue(caught, _caller())
    return out


def _caller() -> FrameType | None:
    """The first frame above this module's: the program's call of a watched function."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == _THIS_FILE:
        frame = frame.f_back
    return frame


# Reads whose work runs no aten op on a CPU tensor: nothing to keep from the dispatch mode
_NO_ATEN_OPS = frozenset({torch.Tensor.tolist, torch.Tensor.numpy, torch.Tensor.__array__})


def _lifts(func: Any, entry: OpEntry) -> bool:
    # .item(), bool(t), printing run aten ops the dispatch mode would see and ignore;
    # copies made by torch.tensor(..., device=) and no-op moves never reach it
    return entry.kind is not _ops.OpKind.TRANSFER and func not in _NO_ATEN_OPS


# func -> (entry, when its arguments can warn, whether the dispatch mode steps aside)
_WATCHED: dict[Any, tuple[OpEntry, Callable[[Any], bool] | None, bool]] = {
    func: (entry, _ops.MAY_WARN.get(func), _lifts(func, entry))
    for func, entry in _ops.METHOD_TABLE.items()
}
_watched = _WATCHED.get


class FunctionWatcher(TorchFunctionMode):
    """One audit's function mode: hands the watched Python-level calls to its observer.

    Every other torch function passes through after one dict miss. While a watched
    call runs, its own aten ops are the call's (``observer.local.quiet``), and when the
    audit's dispatch mode is on top of its stack it steps off for the call (cheaper
    than letting each aten op inside reach it just to be ignored).
    """

    def __init__(self, observer: Observer) -> None:
        super().__init__()
        self._observer = observer
        self._local = observer.local

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            found = _watched(func)
        except TypeError:  # an unhashable callable is never watched
            found = None
        if found is None:
            if _sync_debug_mode():
                return _call(func, args, kwargs or {}, None)
            if kwargs:
                return func(*args, **kwargs)
            return func(*args)
        entry, warns, lifts = found
        if kwargs is None:
            kwargs = {}
        applies = entry.applies
        if applies is not None and not _matches(applies, args, kwargs):
            host_index = _host_index_bytes(func, args)
            if not (host_index or entry.quiet_otherwise):
                return _call(func, args, kwargs, warns)
            # F.one_hot(x, n)'s CPU checks, or x[list]: the ops inside are the call's
            out = self._quietly(func, args, kwargs, warns, lifts)
            if host_index and not self._local.quiet:
                self._observer.observe_host_index(func, tuple(args))
            return out
        depth = self._local.quiet
        out = self._quietly(func, args, kwargs, warns, lifts)
        if not depth:
            self._observer.observe_python(func, entry, tuple(args), dict(kwargs), out)
        return out

    def _quietly(
        self,
        func: Any,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        warns: Callable[[Any], bool] | None,
        lifts: bool,
    ) -> Any:
        """Run a watched call with its aten ops counted as its own (not recorded)."""
        observer = self._observer
        local = self._local
        depth = local.quiet  # a thread-local: read once, written twice
        token = observer.lift() if lifts else None
        local.quiet = depth + 1
        try:
            return _call(func, args, kwargs, warns)
        finally:
            local.quiet = depth
            if token is not None:
                observer.restore(token)


_INDEXING = frozenset({torch.Tensor.__getitem__, torch.Tensor.__setitem__})


def _host_index_bytes(func: Any, args: Sequence[Any]) -> int:
    """Bytes of a list or NumPy index an accelerator would copy to the device (0: none)."""
    if func not in _INDEXING or len(args) < 2:
        return 0
    try:
        return _indexing.host_index_bytes(args[1]) + _indexing.assigned_number_bytes(args)
    except Exception:  # odd indices: the call itself will say what is wrong with them
        return 0


@contextlib.contextmanager
def stepping_aside() -> Iterator[None]:
    """Take the audit out of the way for the block: no wrappers, no mode of ours.

    The module wrappers come down process-wide; the function and dispatch modes are
    lifted only in the calling thread.
    """
    global _suspended
    with _lock:
        _suspended += 1
        if _suspended == 1 and _users:
            _uninstall()
    try:
        with contextlib.ExitStack() as stack:
            for observer in list(_observers()):
                stack.enter_context(observer.aside())
            yield
    finally:
        with _lock:
            _suspended -= 1
            if _suspended == 0 and _users:
                _install()


def _step_aside(original: Callable[..., Any]) -> Callable[..., Any]:
    # torch.jit.script resolves a class's names in the frame ``_frames_up`` above its
    # caller; this wrapper is one more frame, so it points one further up
    names = list(inspect.signature(original).parameters)
    slot = names.index("_frames_up") if "_frames_up" in names else None

    @functools.wraps(original)
    def aside(*args: Any, **kwargs: Any) -> Any:
        if slot is not None and len(args) > slot:
            args = (*args[:slot], args[slot] + 1, *args[slot + 1 :])
        elif slot is not None:
            kwargs["_frames_up"] = kwargs.get("_frames_up", 0) + 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with stepping_aside():
                out = original(*args, **kwargs)
        if caught:
            _reissue(caught, sys._getframe(1))
        return out

    return aside


def _checkpointing(original: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.save``/``torch.load``: the copies they make between the host and the device
    in an accelerator run happen below any op a CPU run shows, so the audit is told."""

    @functools.wraps(original)
    def checkpoint(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        for each in list(getattr(_local, "observers", None) or ()):
            if not each.local.quiet:
                each.observe_checkpoint(original, args, kwargs, out)
        return out

    return checkpoint


def _make_wrappers() -> list[tuple[types.ModuleType, str, Callable[..., Any], Callable[..., Any]]]:
    """(module, name, original, wrapper): only module attributes, never a class's."""
    made: list[tuple[types.ModuleType, str, Callable[..., Any], Callable[..., Any]]] = []
    for name in ("script", "trace", "trace_module"):
        original = getattr(torch.jit, name)
        made.append((torch.jit, name, original, _step_aside(original)))
    made += [
        (torch, name, getattr(torch, name), _checkpointing(getattr(torch, name)))
        for name in ("save", "load")
    ]
    return made


_WRAPPERS = _make_wrappers()


def _install() -> None:
    if _installed:
        return
    for owner, name, original, wrapper in _WRAPPERS:
        if getattr(owner, name, None) is not original:
            continue  # someone else replaced it meanwhile: leave theirs alone
        _installed.append((owner, name, original, name in vars(owner), wrapper))
        setattr(owner, name, wrapper)


def _uninstall() -> None:
    while _installed:
        owner, name, original, own, wrapper = _installed.pop()
        if vars(owner).get(name) is not wrapper:
            continue  # patched over since (torchport.redirect): its owner restores it
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)


def watch(observer: Observer) -> None:
    """Start reporting the watched Python-level calls of this thread to ``observer``."""
    global _users
    with _lock:
        if _users == 0 and not _suspended:
            _install()
        _users += 1
    _observers().append(observer)


def unwatch(observer: Observer) -> None:
    """Stop reporting to ``observer``; the last one out restores torch exactly."""
    global _users
    observers = _observers()
    if not any(o is observer for o in observers):
        return
    observers[:] = [o for o in observers if o is not observer]
    with _lock:
        _users -= 1
        if _users == 0:
            _uninstall()

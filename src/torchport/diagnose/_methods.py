"""Watching Python-level tensor calls (``.item()``, ``.tolist()``, ``.to()``, ...) during an audit.

These calls never reach a dispatch mode as one op of their own, so
:func:`torchport.audit` needs to see them at the Python level. A
``TorchFunctionMode`` would, but it puts a Python call in front of *every* torch
function and tensor method of the block (about 2 µs each, 5% of a 5 ms CPU
training step). Only the callables in :data:`._ops.METHOD_TABLE` matter, so while
at least one audit records, each of them is replaced where it lives
(``torch.Tensor.item``, ``torch.tensor``, ...) by a wrapper that costs nothing to
any other op.

The wrappers must not change what the program does:

* TorchScript compiles what it finds under a name. Each wrapper of a torch
  builtin (``torch.tensor``) is registered as that builtin, and
  ``torch.jit.script``, ``torch.jit.trace`` and ``torch.jit.trace_module`` are
  wrapped to *step aside*: while they run, the wrappers are taken down and the
  audits of the calling thread lift their dispatch modes off the stack (the
  tracer fails under any dispatch mode). What they compile or trace is not
  audited; the compiled code runs audited afterwards, op by op.
* A warning that torch's C++ code raises is attributed to the innermost Python
  frame, which would be the wrapper. The wrappers of calls that warn
  (:data:`._ops.MAY_WARN`, when their arguments can), and every wrapper while
  CUDA's sync debug mode is on, record the warnings and re-issue them at their
  caller's line, with the caller's filters and once-registry.

Beside them, the DataLoader's inner calls are wrapped to mark data loading
(:mod:`._loading`), only with a counter: they record nothing themselves; and
``torch.save``/``torch.load`` report what they saved or loaded, after the call.

The wrappers are process-wide, but record only for the audits active in the
calling thread (a thread-local stack), so other threads pass straight through.
Installing is reference-counted across threads and nested audits; the last
:func:`unwatch` restores every attribute exactly: attributes that were inherited
(``tolist`` comes from ``torch._C.TensorBase``) are deleted again rather than
shadowed. Apart from watching, each open audit block (:func:`open_block`) hears the
copies torchport's own movers skip (``torchport._skipped``), for its whole length.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Any, Protocol

import torch
import torch._ops
import torch.jit
import torch.utils._python_dispatch

from torchport import _skipped, hardware
from torchport.diagnose import _loading, _ops
from torchport.diagnose._ops import OpEntry

__all__ = [
    "ELSEWHERE",
    "Elsewhere",
    "Observer",
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

    def aside(self) -> contextlib.AbstractContextManager[None]: ...

    def lift(self) -> object | None: ...

    def restore(self, token: object) -> None: ...


class Elsewhere:
    """Watched calls made in threads where no audit block is open, while one watches.

    An audit watches the thread that entered it; a copy or a read made in another
    thread (a prefetching thread, a logger's) is not counted, and the report says how
    many there were rather than leave them out silently. Incremented without a lock: a
    lost increment under a race still leaves a non-zero count.
    """

    calls = 0


ELSEWHERE = Elsewhere()
_local = threading.local()  # .observers: list[Observer], the audits recording in this thread
_lock = threading.RLock()
_users = 0
_suspended = 0  # step-aside blocks running (in any thread): wrappers stay down
# (owner, name, original, whether the owner defined it itself, our wrapper)
_installed: list[tuple[Any, str, Any, bool, Any]] = []
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
    applies: Callable[[Any, Any], bool], args: tuple[Any, ...], kwargs: dict[str, Any]
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
                module=module_globals.get("__name__"),
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
        _reissue(caught, sys._getframe(2))
    return out


# Reads whose work runs no aten op on a CPU tensor: nothing to keep from the dispatch mode
_NO_ATEN_OPS = frozenset({torch.Tensor.tolist, torch.Tensor.numpy, torch.Tensor.__array__})


def _wrap(original: Callable[..., Any], entry: OpEntry) -> Callable[..., Any]:
    warns = _ops.MAY_WARN.get(original)
    applies = entry.applies
    # .item(), bool(t), printing run aten ops the mode would see and ignore; copies made
    # by torch.tensor(..., device=) and no-op moves never reach it
    lifts = entry.kind is not _ops.OpKind.TRANSFER and original not in _NO_ATEN_OPS

    @functools.wraps(original)
    def watched(*args: Any, **kwargs: Any) -> Any:
        observers = getattr(_local, "observers", None)
        if not observers:
            if not getattr(_local, "blocks", None) and (
                applies is None or _matches(applies, args, kwargs)
            ):
                ELSEWHERE.calls += 1  # another thread, which no audit watches
            return _call(original, args, kwargs, warns)
        if applies is not None and not _matches(applies, args, kwargs):
            return _call(original, args, kwargs, warns)
        if lifts and len(observers) == 1:
            # The common case, one audit: its dispatch mode steps off the stack while the
            # call runs (cheaper than letting each aten op inside reach it just to be ignored)
            observer = observers[0]
            local = observer.local
            depth = local.quiet  # a thread-local: read once, written twice
            token = observer.lift()
            local.quiet = depth + 1
            try:
                out = _call(original, args, kwargs, warns)
            finally:
                local.quiet = depth
                if token is not None:
                    observer.restore(token)
            if not depth:
                observer.observe_python(original, entry, args, kwargs, out)
            return out
        active = list(observers)
        for each in active:
            each.local.quiet += 1  # the aten ops inside belong to this call
        try:
            out = _call(original, args, kwargs, warns)
        finally:
            for each in active:
                each.local.quiet -= 1
        for each in active:
            if not each.local.quiet:
                each.observe_python(original, entry, args, kwargs, out)
        return out

    return watched


@contextlib.contextmanager
def stepping_aside() -> Iterator[None]:
    """Take the audit out of the way for the block: no wrappers, no dispatch mode of ours.

    The wrappers come down process-wide (other threads' audits miss Python-level
    reads meanwhile); the dispatch modes are lifted only in the calling thread.
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


def _home(func: Any) -> tuple[Any, str]:
    """Where a watched callable is looked up: ``(torch.Tensor, "item")``, ``(torch, "tensor")``."""
    name = func.__name__
    for owner in (torch.Tensor, torch):
        if getattr(owner, name, None) is func:
            return owner, name
    raise LookupError(f"cannot find where {func!r} lives in torch")


def _register_as_builtin(wrapper: Callable[..., Any], original: Any) -> None:
    """Let TorchScript compile ``wrapper`` as the aten builtin ``original`` is."""
    try:
        from torch.jit import _builtins

        op = _builtins._find_builtin(original)  # type: ignore[no-untyped-call]
        if op is not None:
            _builtins._register_builtin(wrapper, op)
    except Exception:  # a torch without this table compiles through the step-aside only
        pass


def _make_wrappers() -> list[tuple[Any, str, Callable[..., Any], Callable[..., Any]]]:
    """(owner, name, original, wrapper), made once: TorchScript's table keys on ``id()``."""
    made = []
    for func, entry in _ops.METHOD_TABLE.items():
        owner, name = _home(func)
        wrapper = _wrap(func, entry)
        _register_as_builtin(wrapper, func)
        made.append((owner, name, func, wrapper))
    for name in ("script", "trace", "trace_module"):
        original = getattr(torch.jit, name)
        made.append((torch.jit, name, original, _step_aside(original)))
    made += _loading.loader_wrappers()  # mark data loading (see ._loading)
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

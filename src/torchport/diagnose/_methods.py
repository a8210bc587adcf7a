"""Watching Python-level tensor calls (``.item()``, ``.tolist()``, ``.to()``, ...) during an audit.

These calls never reach a dispatch mode as one op of their own, so
:func:`torchport.audit` sees them at the Python level, through a
``TorchFunctionMode`` (:class:`FunctionWatcher`) that each recording audit puts at
the bottom of the function-mode stack of the thread that entered it (the program's own
modes, torchport's redirect among them, rewrite a call first; the audit sees the call
that runs). Only the callables in :data:`._ops.METHOD_TABLE`
are looked at; every other torch function passes straight through (one dict miss).

Invariant: watching never changes the program. No attribute of a torch class is set
or deleted, ever (replacing ``torch.Tensor.__getitem__`` on the class and deleting it
after left a sequence slot on every tensor: ``torch.tensor([t0, t1])`` of 0-dim tensors
raised ``TypeError`` for the rest of the process). ``tests/diagnose/test_invariant.py``
holds the rule (class dictionaries and slots before and after) and a differential
oracle (generated programs with and without the audit).

Swapped on the ``torch`` and ``torch.jit`` *modules* (no class) while it watches, restored exactly:

* ``torch.jit.script``, ``trace`` and ``trace_module`` *step aside*: while they run, the
  calling thread's audits lift their modes (the tracer fails under any dispatch mode);
  what they compile is not audited, and runs audited afterwards, op by op.
* ``torch.save``/``torch.load`` report what they saved or loaded, after the call;
  ``torch.from_numpy``/``torch.frombuffer`` report the host tensor they made (no mode
  sees them), and so do the program's modules' names for them (``from torch import
  from_numpy`` run before the audit).

Each stand-in binds and pickles as the original does (:mod:`._stand_ins`).

A warning torch's C++ code raises is attributed to the innermost Python frame, which
under a ``TorchFunctionMode`` is the mode's: so the function mode runs every call it
forwards from a trampoline at the caller's line (:mod:`._at_caller`), and torch's
warnings (``TORCH_WARN``, CUDA's sync debug mode) name the caller's file, line, module
and once-registry, as without the audit. The calls that may warn from torch's Python
dispatch code (:data:`._ops.MAY_WARN`, when their arguments can) re-issue theirs there.

Function modes are per thread: the audit counts the threads that ran beside it
(:mod:`._other_threads`) so the report can say its counts leave them out. Each open
audit block (:func:`open_block`) also hears the copies torchport's movers skip.
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
import torch.jit
from torch.overrides import TorchFunctionMode

from torchport import _origin, _skipped_copies
from torchport.diagnose import _indexing, _ops, _stand_ins
from torchport.diagnose._at_caller import MADE as _MADE
from torchport.diagnose._at_caller import call_at as _call
from torchport.diagnose._at_caller import forward_at as _forward_at
from torchport.diagnose._at_caller import reissue, unlink
from torchport.diagnose._held_names import bind_in_program_modules, swap_held_names
from torchport.diagnose._ops import OpEntry
from torchport.diagnose._other_threads import OtherThreads
from torchport.diagnose._stand_ins import stand_in

__all__ = [
    "OTHER_THREADS",
    "FunctionWatcher",
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

    def observe_skipped(self, tensors: Iterable[Any] | None, device: Any, by: str) -> None: ...

    def observe_checkpoint(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
    ) -> None: ...

    def observe_host_index(self, func: Any, args: tuple[Any, ...], out: Any) -> None: ...

    def observe_made_on_host(self, out: Any) -> None: ...

    def aside(self) -> contextlib.AbstractContextManager[None]: ...

    def lift(self) -> object | None: ...

    def restore(self, token: object) -> None: ...


OTHER_THREADS = OtherThreads()  # one count for every audit of the process
_local = threading.local()  # .observers: list[Observer], the audits recording in this thread
_lock = threading.RLock()
_users = 0
_suspended = 0  # step-aside blocks running (in any thread): wrappers stay down
# (owner, name, original, whether the owner defined it itself, our wrapper)
_installed: list[tuple[types.ModuleType, str, Any, bool, Any]] = []
_restores: list[Callable[[], None]] = []  # puts back the program's names (._held_names)
_getframe = sys._getframe
_STAND_IN_FILES = (__file__, _stand_ins.__file__)  # a stand-in's frames: never the program's
_NO_KWARGS: dict[str, Any] = {}  # passed on as **kwargs: copied, never changed
# The tensor methods the audit wraps run between the program's call and the watcher
_origin.count_as_torchport(
    code for method in _ops.watched_methods() if (code := getattr(method, "__code__", None))
)


def _observers() -> list[Observer]:
    observers: list[Observer] | None = getattr(_local, "observers", None)
    if observers is None:
        observers = _local.observers = []
    return observers


def observers_here() -> list[Observer]:
    """The audits whose blocks are open in the calling thread (a copy), innermost last."""
    return list(getattr(_local, "blocks", []))


_blocks_open = 0  # audit blocks open in any thread: torchport._skipped_copies is listened to


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
            _skipped_copies.listen(_tell_skipped)
            # the program's objects' names for the host makers bound before the block (a heap
            # scan): stand-ins until it ends, as torch's own (:mod:`._stand_ins`)
            makers = ((torch.from_numpy, "from_numpy"), (torch.frombuffer, "frombuffer"))
            swaps = {
                made: stand_in(made, _sharing_host_memory(made), torch, name)
                for made, name in makers
            }
            with contextlib.suppress(Exception):  # odd objects: those names not reached
                _restores.extend(swap_held_names(swaps))


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
            _skipped_copies.unlisten(_tell_skipped)
            while _restores:
                _restores.pop()()


def _tell_skipped(tensors: Iterable[Any] | None, device: Any, *, by: str) -> None:
    """``torchport._skipped_copies``'s listener (``tensors`` None: a wait), for this thread."""
    blocks = getattr(_local, "blocks", None)
    if not blocks:
        return  # another thread's mover: its audits (if any) are not this thread's
    tensors = None if tensors is None else tuple(tensors)
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
        # the frame that called the binding: where torch's warnings belong
        caller = _getframe(1)
        try:
            found = _watched(func)
        except TypeError:  # an unhashable callable is never watched
            found = None
        if found is None:  # the per-call hot path: the trampoline of _call, inline
            code = caller.f_code
            made = _MADE.get((id(code), caller.f_lasti))
            forward = made[1] if made is not None and made[0] is code else _forward_at(caller)
            try:
                return forward(func, args, kwargs or _NO_KWARGS)
            except BaseException as err:
                unlink(err)
                raise
        entry, warns, lifts = found
        if kwargs is None:
            kwargs = {}
        applies = entry.applies
        if applies is not None and not _matches(applies, args, kwargs):
            host_index = _indexing.list_index_copy_bytes(func, args)
            if not (host_index or entry.quiet_otherwise):
                return _call(func, args, kwargs, warns, caller)
            if host_index and _indexing.basic_view_dims(args[0], args[1]) is not None:
                # x[0] = 1.0: its ops (a 0-dim index tensor's .item()) are the program's
                out = _call(func, args, kwargs, warns, caller)
            else:
                # F.one_hot(x, n)'s CPU checks, or x[list]: the ops inside are the call's
                out = self._quietly(func, args, kwargs, warns, lifts, caller)
            if host_index and not self._local.quiet:
                self._observer.observe_host_index(func, tuple(args), out)
            return out
        depth = self._local.quiet
        out = self._quietly(func, args, kwargs, warns, lifts, caller)
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
        caller: FrameType | None,
    ) -> Any:
        """Run a watched call with its aten ops counted as its own (not recorded)."""
        observer = self._observer
        local = self._local
        depth = local.quiet  # a thread-local: read once, written twice
        token = observer.lift() if lifts else None
        local.quiet = depth + 1
        try:
            return _call(func, args, kwargs, warns, caller)
        finally:
            local.quiet = depth
            if token is not None:
                observer.restore(token)


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
            reissue(caught, sys._getframe(1), watcher=__file__)
        return out

    return aside


# torch.save and torch.load as torch defines them: what the audit is told ran, whatever
# wrapper (torchport.redirect's torch.load) stands in for them when the audit starts
_CHECKPOINT_FUNCS = {"save": torch.save, "load": torch.load}


def _checkpointing(original: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``torch.save``/``torch.load``: the copies they make between the host and the device
    in an accelerator run happen below any op a CPU run shows, so the audit is told."""
    told = _CHECKPOINT_FUNCS[name]

    @functools.wraps(original)
    def checkpoint(*args: Any, **kwargs: Any) -> Any:
        out = _call(original, args, kwargs, None, _program_frame())
        for each in list(getattr(_local, "observers", None) or ()):
            if not each.local.quiet:
                each.observe_checkpoint(told, args, kwargs, out)
        return out

    return checkpoint


def _program_frame() -> FrameType | None:
    """The frame that called a stand-in (past it and this module's wrapper): torch's
    warnings of the call belong there."""
    return _origin.caller_frame(sys._getframe(2), past=_STAND_IN_FILES)


def _sharing_host_memory(original: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.from_numpy``/``frombuffer``: their tensor shares host memory in any run (so
    the host's in an accelerator run too), and no mode of torch's sees them: told here."""

    @functools.wraps(original)
    def made(*args: Any, **kwargs: Any) -> Any:
        out = _call(original, args, kwargs, None, _program_frame())
        for each in list(getattr(_local, "observers", None) or ()):
            each.observe_made_on_host(out)
        return out

    return made


# What is swapped on a module while an audit watches: (module, name, how to wrap it). The
# value is read when the audit starts, not when torchport was imported: importing
# torch._dynamo (torch.compile's first call) replaces torch.jit.trace and trace_module,
# and a wrapper of the old value would be skipped as "someone else's" below, leaving
# tracing to fail under the audit's modes.
_SWAPPED: tuple[tuple[types.ModuleType, str, Callable[[Any], Callable[..., Any]]], ...] = (
    *((torch.jit, name, _step_aside) for name in ("script", "trace", "trace_module")),
    *((torch, name, functools.partial(_checkpointing, name=name)) for name in ("save", "load")),
    *((torch, name, _sharing_host_memory) for name in ("from_numpy", "frombuffer")),
)


def _install() -> None:
    """Wrap each swapped attribute as it is now: only module attributes, never a class's."""
    if _installed:
        return
    for owner, name, wrap in _SWAPPED:
        original = getattr(owner, name, None)
        if original is None:
            continue
        wrapper = stand_in(original, wrap(original), owner, name)
        _installed.append((owner, name, original, name in vars(owner), wrapper))
        setattr(owner, name, wrapper)
        if wrap is _sharing_host_memory:  # `from torch import from_numpy` run before
            _installed.extend(bind_in_program_modules(original, wrapper))


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

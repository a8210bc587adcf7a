"""Forward a watched torch call so that torch's warnings name the program's line, not ours.

A warning torch raises from C++ (``TORCH_WARN``, ``TORCH_WARN_ONCE``: a uint8 mask,
``out=`` resized, CUDA's sync debug mode) is issued when the binding returns, at the
innermost Python frame: without the audit the program's line that made the call; under
the audit's ``TorchFunctionMode`` the mode's own frame, which forwards the call. Its
filename, line, module (for ``warnings.filterwarnings(module=...)``, ``-W ...:module``)
and once-registry would then all be torchport's.

So the mode forwards each call through a *trampoline*: a one-line function whose code
object is a copy of :func:`_forward` with the caller's file name, line and function name,
and whose globals are the caller's. Torch's C++ warnings, and Python warnings of torch code
that count ``stacklevel`` up from it, then find the caller's file, line, module and
``__warningregistry__``, exactly as without the audit: every filter acts as outside.

A trampoline is made once per call site (code object, instruction) and kept in a bounded
cache. Its code is claimed as torchport's (:func:`torchport._origin.count_as_torchport`),
so the audit's stack walks step over it to the real frame above; an exception raised
through it leaves it out of the traceback (:func:`unlink`), which shows the program's
frames only, as before.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import CodeType, FrameType, TracebackType
from typing import Any

from torchport import _origin

__all__ = ["MADE", "TRAMPOLINES", "Forward", "call_at", "forward_at", "reissue", "unlink"]

Forward = Callable[[Callable[..., Any], Sequence[Any], Mapping[str, Any]], Any]


# One line: every instruction of a copy maps to the copy's first line, the caller's.
def _forward(func: Any, args: Any, kwargs: Any) -> Any: return func(*args, **kwargs)  # fmt: skip


_CODE = _forward.__code__
# (id(code), instruction) -> (code, trampoline); the code kept so its id stays its own.
# The function mode's per-call path reads it inline (a function call costs 100 ns there).
MADE: dict[tuple[int, int], tuple[CodeType, Forward]] = {}
_LIMIT = 4096  # call sites; past that the cache starts again (code made by exec in a loop)
TRAMPOLINES: set[CodeType] = set()  # every trampoline code made, to strip from tracebacks


def forward_at(caller: FrameType) -> Forward:
    """The trampoline for ``caller``'s current call: ``forward(func, args, kwargs)`` calls
    ``func(*args, **kwargs)`` from a frame with ``caller``'s file, line and globals."""
    code = caller.f_code
    key = (id(code), caller.f_lasti)
    found = MADE.get(key)
    if found is not None and found[0] is code:
        return found[1]
    return _make(caller, key)


def _make(caller: FrameType, key: tuple[int, int]) -> Forward:
    code = caller.f_code
    copy = _CODE.replace(  # the caller's file, line and function's name: a walk that stops
        co_filename=code.co_filename,  # here (a report's "at FILE:LINE in NAME") reads the
        co_firstlineno=caller.f_lineno or 1,  # caller's, as it would without the audit
        co_name=code.co_name,
        co_qualname=code.co_qualname,
    )
    trampoline: Forward = types.FunctionType(copy, caller.f_globals)
    if len(MADE) >= _LIMIT:
        _origin.forget_claims(TRAMPOLINES)
        TRAMPOLINES.clear()
        MADE.clear()
    _origin.count_as_torchport((copy,))
    TRAMPOLINES.add(copy)
    MADE[key] = (code, trampoline)
    return trampoline


def unlink(err: BaseException) -> None:
    """Leave the trampolines' frames out of ``err``'s traceback (the program never wrote
    them); a traceback with none is left as it is."""
    tb: TracebackType | None = err.__traceback__
    while tb is not None:
        after = tb.tb_next
        while after is not None and after.tb_frame.f_code in TRAMPOLINES:
            after = after.tb_next
        if after is not tb.tb_next:
            tb.tb_next = after
        tb = after


def call_at(
    original: Callable[..., Any],
    args: Any,
    kwargs: Any,
    warns: Callable[[Any], bool] | None,
    caller: FrameType | None,
) -> Any:
    """``original(*args, **kwargs)`` from a trampoline at ``caller`` (none: from here).

    ``warns(args)`` true: the call may warn from torch's Python dispatch code
    (``torch/_ops.py``), which a mode puts between it and the caller; its warnings are
    recorded and issued again at the caller (:func:`reissue`).
    """
    forward = forward_at(caller) if caller is not None else _plain
    try:
        if warns is None or not warns(args):
            return forward(original, args, kwargs)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = forward(original, args, kwargs)
    except BaseException as err:
        unlink(err)
        raise
    if caught:
        reissue(caught, caller)
    return out


def _plain(func: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    return func(*args, **kwargs)


def reissue(
    caught: list[warnings.WarningMessage], caller: FrameType | None, watcher: str = ""
) -> None:
    """Issue recorded warnings again: those at ``caller``'s line, or pinned on a frame that
    only watching put there (the ``watcher`` module's, torch's dispatch code), at
    ``caller`` with its module and once-registry, as ``warnings.warn`` there would."""
    for w in caught:
        if caller is not None and (
            _origin.added_by_watcher(w.filename, watcher=watcher)
            or _origin.at_line_of(caller, w.filename, w.lineno)
        ):
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

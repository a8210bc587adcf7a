"""strict(): turn PyTorch's device-mismatch errors into ones that name the culprit.

Nothing is installed while the block runs, so the fast path costs nothing: no
hooks, no modes. When an error escapes the block, its traceback still holds the
frames it unwound; :mod:`._mismatch_message` reads them into a message that names
the culprit and the fix. An out-of-memory error gets a note (:mod:`._oom`). Only
PyTorch's mismatches are rewritten: a program's own ``raise`` passes through.
"""

from __future__ import annotations

import contextlib
import dis
import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any, ParamSpec, TypeVar, cast, overload

from torch import nn

from torchport._origin import is_library
from torchport.diagnose._mismatch_message import describe_mismatch, is_device_mismatch
from torchport.diagnose._oom import is_out_of_memory, note_oom
from torchport.errors import ConfigError, DeviceMismatchError

__all__ = ["strict"]

P = ParamSpec("P")
R = TypeVar("R")

_RAISES = frozenset(dis.opmap[name] for name in ("RAISE_VARARGS", "RERAISE") if name in dis.opmap)


def _raised_by_program(err: BaseException) -> bool:
    """Whether a ``raise`` statement outside torch raised ``err`` (not a torch op or kernel).

    A kernel's error surfaces at the Python line that called it (an instruction that
    calls); the program's own ``raise ValueError("... must be on the same device")``
    surfaces at a raise instruction in the program's own file.
    """
    tb = err.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if is_library(code.co_filename):
        return False
    try:
        return code.co_code[tb.tb_lasti] in _RAISES
    except IndexError:
        return False


def _from_torch(err: BaseException) -> bool:
    """A mismatch torch reported, or the program's error wrapping one (``raise ... from``)."""
    if not is_device_mismatch(err):
        return False
    if not _raised_by_program(err):
        return True
    cause = err.__cause__
    return cause is not None and _from_torch(cause)


# -- the public face ---------------------------------------------------------------------


class _Strict(contextlib.ContextDecorator):
    """The context manager and decorator behind :func:`strict`; holds no state."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            return
        if is_out_of_memory(exc):
            note_oom(exc)
            return
        if not _from_torch(exc):
            return
        try:
            message = describe_mismatch(exc, tb)
        except Exception:  # never let the explanation hide the original error
            return
        raise DeviceMismatchError(message) from exc

    def __repr__(self) -> str:
        return "torchport.strict()"

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:  # type: ignore[override]
        """Decorate ``func``: its body, however it runs, is inside ``strict()``.

        ContextDecorator alone would wrap only the call, which for a generator or a
        coroutine function returns before any of its body has run.

        Raises:
            ConfigError: ``func`` is an async generator function.
        """
        if inspect.isasyncgenfunction(func):
            raise ConfigError(
                f"tp.strict cannot decorate the async generator {func.__qualname__}; wrap the "
                "code inside it instead: async def ...: with tp.strict(): ..."
            )
        if inspect.isgeneratorfunction(func):
            generator = cast(Callable[..., Iterator[Any]], func)

            @functools.wraps(func)
            def each_step(*args: Any, **kwargs: Any) -> Any:
                with _Strict():  # spans every resumption: yield from passes sends and throws
                    return (yield from generator(*args, **kwargs))

            return each_step
        if inspect.iscoroutinefunction(func):
            coroutine = cast(Callable[..., Awaitable[Any]], func)

            @functools.wraps(func)
            async def awaited(*args: Any, **kwargs: Any) -> Any:
                with _Strict():
                    return await coroutine(*args, **kwargs)

            return awaited
        return super().__call__(func)


@overload
def strict() -> _Strict: ...
@overload
def strict(func: Callable[P, R], /) -> Callable[P, R]: ...
def strict(func: Callable[P, R] | None = None, /) -> _Strict | Callable[P, R]:
    """Make device mismatches inside a block or function name their culprit.

    Use it as ``with tp.strict():``, ``@tp.strict()`` or ``@tp.strict``; a decorated
    generator or ``async def`` function is covered while its body runs. When
    PyTorch raises a device-mismatch error inside, a
    :class:`~torchport.DeviceMismatchError` (a ``RuntimeError``) is raised from it
    instead, naming the module path (``encoder.layers.2.proj``) and class, which
    parameter, buffer, plain tensor attribute or input is on which device, the
    source line, and the fix. Other errors pass through unchanged; an
    out-of-memory error gets a note explaining it. Nothing is hooked while the
    code runs, so results and speed are unchanged. Never synchronizes.

    Mismatches are found where PyTorch reports them. Kernels of the ``meta``
    device skip some device checks (``matmul``, ``conv``), so there a mix may pass.

    Args:
        func: The function to wrap, when used as ``@tp.strict`` without parentheses.

    Returns:
        A context manager that is also a decorator, or the wrapped function.

    A ``RuntimeError`` the program raises itself (``raise ValueError("... on the same
    device")``) is its own and passes through unchanged, unless it wraps one of
    PyTorch's (``raise ... from err``). Reading the failing line's operands never
    runs the program's code again: attributes are read as stored, properties not.

    Raises:
        ConfigError: When ``func`` is not callable, or is an async generator function.
    """
    if func is None:
        return _Strict()
    # a class or a module would come back as a plain function: refuse rather than surprise
    if not callable(func) or isinstance(func, (type, nn.Module)):
        what = func.__name__ if isinstance(func, type) else type(func).__name__
        raise ConfigError(
            f"tp.strict got {what} {_short_repr(func)}; pass a function or method to decorate "
            "(@tp.strict), or nothing and wrap the calls: with tp.strict(): model(x)"
        )
    wrapped = cast(Callable[P, R], _Strict()(func))  # functools.wraps keeps the name
    return wrapped


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


strict.__module__ = "torchport"

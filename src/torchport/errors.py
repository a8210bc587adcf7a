"""The one exception tree of torchport.

Every error torchport raises is a :class:`TorchportError` and also a subclass of
the builtin exception that callers already catch::

    TorchportError(Exception)
    ├── DeviceError(ValueError)            a device that is malformed or absent
    ├── DeviceMismatchError(RuntimeError)  one op got tensors on different devices (strict())
    ├── UnsupportedBatchError(TypeError)   a batch holds an object torchport cannot rebuild
    ├── RedirectError(RuntimeError)        a CUDA-only call while redirected to another device
    └── ConfigError(ValueError)            bad configuration: CLI flags, [tool.torchport], args

Messages say what was found, what was expected and what to do about it.

This module imports nothing heavy: ``torchport.check`` uses it without torch.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "DeviceError",
    "DeviceMismatchError",
    "RedirectError",
    "TorchportError",
    "UnsupportedBatchError",
]


class TorchportError(Exception):
    """Base class of every error raised by torchport."""


class DeviceError(TorchportError, ValueError):
    """A device that is malformed, unknown to this build of torch, or not present.

    Attributes:
        argument: What the user called the value (``"device"``, ``"prefer"``,
            ``"--device"``, ``"TORCHPORT_DEVICE"``), or ``None`` where unknown.
        available: The devices this process can use (``torchport.DeviceInfo``),
            as listed in the message, so callers need not parse it.
    """

    def __init__(
        self, *args: object, argument: str | None = None, available: tuple[Any, ...] = ()
    ) -> None:
        super().__init__(*args)
        self.argument = argument
        self.available = available


class DeviceMismatchError(TorchportError, RuntimeError):
    """An op received tensors on different devices; the message names each one."""


class UnsupportedBatchError(TorchportError, TypeError):
    """A batch holds an object that cannot be moved or rebuilt; the message names its path."""


class RedirectError(TorchportError, RuntimeError):
    """A CUDA-only call (a stream, an event, a graph, ...) made while redirected to another device.

    Also raised when ``redirect()`` contexts are exited out of order or from
    another thread, since their patches could then not be undone exactly.
    """


class ConfigError(TorchportError, ValueError):
    """Invalid configuration: a command-line flag, a ``[tool.torchport]`` key or an argument."""


for _cls in (
    TorchportError,
    DeviceError,
    DeviceMismatchError,
    UnsupportedBatchError,
    RedirectError,
    ConfigError,
):
    _cls.__module__ = "torchport"
del _cls
